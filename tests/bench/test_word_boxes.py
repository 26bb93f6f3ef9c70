"""bench.boxes finds a passage's words on its page by the passage's whole text (bench/word_boxes.aligned).

Page 61 of Nettle's manual (Debian's nettle-dev) prints six near-identical signatures twice over, each with a
"[Function]" label that poppler reads in a block of labels after several signatures. The passages are the
converter's own text of three of them (docling_service's native pipeline, as bench.boxes ingests the page).
The first measure, kept as passage_words_in_runs, took the first "[Function]" of the page for each and left the
commas and the closing parenthesis out.
"""

from __future__ import annotations

import gzip
import shutil

import pytest

from bench.word_boxes import Word, aligned, pdf_words
from scripts.system_files import NETTLE, needs

pytestmark = [
    needs(NETTLE),
    pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext: apt-get install -y poppler-utils"),
]
PASSAGES = {
    "ccm_aes128_digest": "[Function]\n\nvoid ccm_aes128_digest (struct ccm aes128 ctx *ctx, size t length, "
    "uint8 t *digest)",
    "ccm_aes192_decrypt": "[Function]\n\nvoid ccm_aes192_decrypt (struct ccm aes192 ctx *ctx, size t length, "
    "uint8 t *dst, const uint8 t *src)",
    "ccm_aes256_digest": "[Function]\n\nvoid ccm_aes256_digest (struct ccm aes256 ctx *ctx, size t length, "
    "uint8 t *digest) These are identical to ccm_set_digest, except that cipher, f , and ctx are replaced with "
    "a context structure.",
}


@pytest.fixture(scope="module")
def page_61(tmp_path_factory: pytest.TempPathFactory) -> list[Word]:
    pdf = tmp_path_factory.mktemp("nettle") / "nettle.pdf"
    pdf.write_bytes(gzip.decompress(NETTLE.read_bytes()))
    return pdf_words(pdf, [61])[0]


def _printed(words: list[Word], name: str) -> list[Word]:
    """The words of the signature ``name`` as printed: its two lines, and the label beside its first line."""
    first = next(w for w in words if w.text == name)
    lines = {first.line, first.line + 1}
    label = next(w for w in words if w.text == "[Function]" and abs(w.box[1] - first.box[1]) < 2)
    return [w for w in words if w.line in lines] + [label]


@pytest.mark.parametrize("name", sorted(PASSAGES))
def test_a_repeated_signature_is_found_by_its_own_text_with_its_own_label(page_61: list[Word], name: str) -> None:
    found = aligned(PASSAGES[name], page_61)
    assert found.share == 1.0
    printed = _printed(page_61, name)
    assert set(printed) <= set(found.words), sorted({w.text for w in printed} - {w.text for w in found.words})
    others = set(found.words) - set(printed)
    if name == "ccm_aes256_digest":  # its passage goes on with the two lines of prose after it
        assert " ".join(w.text for w in sorted(others, key=lambda w: (w.line, w.box[0]))).startswith("These are")
    else:
        assert not others, sorted((w.line, w.text) for w in others)
