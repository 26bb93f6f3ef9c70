"""A sentence copied from a document finds its passage first, scored "relevant", in every mode (issue 38, point 6).

The chunks are real: six passages of Nettle's manual (Debian's nettle-dev, nettle.pdf, Texinfo) as the converter
stored them, running heads and all. Searched whole, a sentence of it scored under the relevance threshold before,
below passages that only resemble it (a semantic search of "Returns 1 on success, and 0 on error." put the
Conventions chapter's "return one on success and zero on failure" first; the GCM macro's sentence was not in the
manual's semantic top 10 at all).
"""

from __future__ import annotations

from typing import Any

import pytest
from ingestion_contracts.gateway import EXACT_PHRASE_SCORE, RELEVANT_SCORE
from vector_gateway import lexical

NETTLE = [
    "## 7.2 Cipher functions\n\nA cipher is a function that takes a message or plaintext and a secret key and "
    "transforms it to a ciphertext. Given only the ciphertext, but not the key, it should be hard to find the\n\n"
    "Chapter 7: Reference\n\n21\n\nplaintext. Given matching pairs of plaintext and ciphertext, it should be hard to "
    "find the\n\nkey.There are two main classes of ciphers: Block ciphers and stream ciphers.",
    "(struct aes256 ctx *ctx, size t length, uint8 t *dst, const uint8 t *src)\n\n[Function]\n\nvoid aes_decrypt "
    "(struct aes ctx *ctx, size t length, uint8 t *dst, const uint8 t *src) Analogous to the encryption functions "
    "above.",
    "argument is a pointer to a context struct as defined by CFB_CTX, and the second is a pointer to an "
    "initialization vector that is copied into that context.\n\n[Macro]\n\nCFB_ENCRYPT (ctx, f, length, dst, src) "
    "A simpler way to invoke cfb_encrypt. The first argument is a pointer to a context struct as defined by "
    "CFB_CTX, and the second argument is an encryption function following Nettle's conventions. The last three "
    "arguments define the source and destination area for the operation.\n\n[Macro]",
    "length, dst, src)\n\n[Macro]\n\nGCM_DECRYPT (ctx, encrypt, length, dst, src)\n\n[Macro]\n\nGCM_DIGEST (ctx, "
    "encrypt, length, digest) Simpler way to call gcm_encrypt, gcm_decrypt or gcm_digest. First argument is a "
    "context struct as defined by GCM_CTX. Second argument, encrypt, is the encryption function of the underlying "
    "cipher.\n\nChapter 7: Reference\n\n50",
    "but source and destination areas must not overlap in any other way.\n\nMany of the functions lack return "
    "value and can never fail. Those functions which can fail, return one on success and zero on failure.\n\n"
    "Chapter 4: Example\n\n4",
    "of size at least BASE16 DECODE LENGTH(src length). The amount of data generated is returned in *dst length. "
    "Returns 1 on success and 0 on error.\n\n[Function]\n\nint base16_decode_final (struct base16 decode ctx *ctx) "
    "Checks that the end of data is correct (i.e., an even number of hexadecimal digits have been seen). Returns 1 "
    "on success, and 0 on error.",
]
# (query as an agent pastes it, the chunk that holds it)
COPIED = [
    ("Returns 1 on success, and 0 on error.", 5),
    ("Second argument, encrypt, is the encryption function of the underlying cipher.", 3),
    # as copied from a PDF viewer: a line break, other case, no full stop; "uint8_t" where the text reads "uint8 t"
    ("second argument, encrypt, is the\nencryption function of the UNDERLYING cipher", 3),
    ("void aes_decrypt (struct aes ctx *ctx, size_t length, uint8_t *dst", 1),
]


@pytest.fixture(scope="module")
async def nettle(gateway_app: Any, make_doc: Any, upsert: Any) -> str:
    name = "exact_phrases"
    await upsert(gateway_app[0], name, make_doc("nettle.pdf", NETTLE, title="Nettle", file_type="pdf"))
    return name


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
async def test_a_copied_sentence_finds_its_passage_first_and_relevant(client, nettle, search, mode: str) -> None:
    for query, holder in COPIED:
        found = await search(client, query=query, collections=[nettle], mode=mode, top_k=3)
        first = found["hits"][0]
        assert first["chunk_index"] == holder, (query, [(h["chunk_index"], h["score"]) for h in found["hits"]])
        assert first["score"] >= EXACT_PHRASE_SCORE > RELEVANT_SCORE[mode], (query, first["score"])
        assert first["phrase_score"] > 0 and first["score"] == pytest.approx(
            first["dense_score"] + first["keyword_score"] + first["phrase_score"], abs=3e-6
        )
        assert all(h["phrase_score"] == 0 for h in found["hits"][1:]), query  # the other passages do not hold it
        # The complaint: min_score at the stated threshold answered nothing.
        kept = await search(client, query=query, collections=[nettle], mode=mode, min_score=RELEVANT_SCORE[mode])
        assert kept["hits"] and kept["hits"][0]["chunk_index"] == holder, query


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
async def test_short_queries_are_never_phrases(client, nettle, search, mode: str) -> None:
    """Two words, or four of which fewer than two are not stop words, are no phrase. A passage holding each of a short
    query's words as written is raised in hybrid and keyword mode (issue 52: the word before its stems); by meaning
    alone (semantic), nothing is added."""
    for query in ("underlying cipher", "on the and the", "Returns 1"):
        found = await search(client, query=query, collections=[nettle], mode=mode, top_k=6)
        words = lexical.exact_words(query)
        for hit in found["hits"]:
            holds = words is not None and lexical.holds_words(words, hit["title"], hit["text"])
            assert (hit["phrase_score"] > 0) == (holds and mode != "semantic"), (query, hit)
            assert hit["score"] == pytest.approx(
                hit["dense_score"] + hit["keyword_score"] + hit["phrase_score"], abs=3e-6
            )


async def test_a_search_can_leave_phrases_out(client, nettle, search) -> None:
    """find_similar's probes (a whole chunk as the query, by meaning) ask for no phrase lookup."""
    query = COPIED[1][0]
    found = await search(client, query=query, collections=[nettle], mode="semantic", top_k=6, exact_phrase=False)
    assert found["hits"] and all(h["phrase_score"] == 0 for h in found["hits"])
