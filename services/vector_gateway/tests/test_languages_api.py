"""Keyword search in each document's own language, accents typed either way (issue 38, points 4 and 8).

Real sentences from Debian's installation guide (German, French) and gnuplot's manual (an accented name), in one
collection: each is found by its own words in another form (plural for singular, with or without accents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

GERMAN = [
    "Eine Standard-Installation für die amd64-Architektur inklusive aller Standardpakete und dem Standard-Kernel "
    "benötigt 1242 MB Festplattenplatz.",
    "Benötigt die neue Version eines Programms neuere zugrundeliegende Software, so stellt das Debian-Paketsystem "
    "sicher, dass die benötigte Software automatisch identifiziert und mit installiert wird.",
]
FRENCH = (
    "La licence GPL oblige à donner le code source du programme lorsque vous distribuez une copie binaire de ce "
    "programme ; cet article assure que tout utilisateur pourra modifier le programme."
)
ENGLISH = "Major contributors (alphabetic order): Christoph Bersch, Hans-Bernhard Bröker, John Campbell."


async def _keyword(client: Any, search: Any, collection: str, query: str) -> list[str]:
    found = await search(client, query=query, collections=[collection], mode="keyword", top_k=5)
    return [hit["source"] for hit in found["hits"]]


async def test_each_language_is_found_by_its_own_words_and_accents_either_way(
    client: Any, unique: Any, upsert: Any, make_doc: Any, search: Any
) -> None:
    name = unique("languages")
    for source, text in [("de-1.md", GERMAN[0]), ("de-2.md", GERMAN[1]), ("fr.md", FRENCH), ("en.md", ENGLISH)]:
        await upsert(client, name, make_doc(source, [text], title=source))
    assert (await _keyword(client, search, name, "Standardpaket"))[:1] == ["de-1.md"]  # singular finds the plural
    assert (await _keyword(client, search, name, "Paketsysteme"))[:1] == ["de-2.md"]  # and the reverse
    assert (await _keyword(client, search, name, "copies binaires"))[:1] == ["fr.md"]
    assert (await _keyword(client, search, name, "distribué"))[:1] == ["fr.md"]  # an accent the text lacks
    for typed in ("Bröker", "Broker", "BRÖKER"):
        assert (await _keyword(client, search, name, typed))[:1] == ["en.md"], typed


@pytest.mark.parametrize("engine", ["milvus", "lance"])
async def test_a_collection_keeps_the_analysis_it_was_built_with(
    engine: str, open_gateway: Any, tmp_path: Path, upsert: Any, make_doc: Any, search: Any
) -> None:
    db = tmp_path / "old.db"
    async with open_gateway(db, index_engine=engine, bm25_analysis="snowball_en") as (client, _):
        await upsert(client, "old", make_doc("old.md", ["The mutations were found in the genomes."], title="Old"))
    async with open_gateway(db, index_engine=engine) as (client, app):  # today's default: snowball_multi
        assert app.state.gateway.store.analysis_of("old") == "snowball_en"
        found = await search(client, query="mutated genome", collections=["old"], mode="keyword")
        assert [hit["source"] for hit in found["hits"]] == ["old.md"]


def test_the_language_model_is_let_go_when_unused_and_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The identifier is needed only while documents are written (issue 49: what only ingest needs is released after
    idleness): it holds ~51 MB while loaded (not 78: the full model it keeps to change languages is dropped), none
    once unused for LANGUAGE_MODEL_IDLE_S, and the next document loads it again."""
    import time

    from vector_gateway import lexical

    monkeypatch.setattr(lexical, "LANGUAGE_MODEL_IDLE_S", 0.3)
    assert lexical.document_language(GERMAN) == "de"
    held = lexical._identifier
    assert held is not None and held._full_model[0] is held.nb_ptc  # the 27 MB full model is not kept beside it
    deadline = time.monotonic() + 15
    while lexical._identifier is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lexical._identifier is None
    assert lexical.document_language([FRENCH]) == "fr"


# An English paragraph that gives names in Cyrillic: py3langid reads it as Russian (probability 1.0), and before
# its English words were stemmed by the Russian stemmer ("theatres" no longer met "theatre").
BOLSHOI = (
    "The Bolshoi Theatre (Russian: Большой театр, Государственный академический Большой театр России) is a historic "
    "theatre in Moscow that stages ballet and opera."
)
RUSSIAN = "Большой театр — один из крупнейших в России и один из самых значительных в мире театров оперы и балета."
# A German passage quoting an English message: "to", "the" and "connect" are German terms of it, as they should be.
GERMAN_QUOTING_ENGLISH = (
    "Die Meldung »unable to connect to the server« bedeutet, dass der Rechner den Server im Netzwerk nicht erreicht."
)


def test_a_word_is_read_in_the_language_of_its_script() -> None:
    """Whichever of the two languages py3langid names for a text in two scripts, each word is read in the language
    of its own script: English words stemmed as English (stop words dropped), Cyrillic ones as Russian."""
    from vector_gateway.lexical import LANGUAGE_MARK, analyze, document_language

    assert document_language([BOLSHOI]) == "ru"  # py3langid's reading, probability 1.0
    terms = analyze(BOLSHOI, "snowball_multi", "ru").split()
    assert analyze(BOLSHOI, "snowball_multi", "en").split() == terms
    assert {"theatr", "histor", "stage", "ballet", "opera"} <= set(terms)
    assert not {"a", "in", "and", f"ru{LANGUAGE_MARK}a", f"ru{LANGUAGE_MARK}in"} & set(terms)
    assert f"ru{LANGUAGE_MARK}театр" in terms
    russian = analyze(RUSSIAN, "snowball_multi", "ru").split()
    assert all(term.startswith(f"ru{LANGUAGE_MARK}") for term in russian)
    assert analyze("Παρθενώνας apt-get", "snowball_multi", "el").split()[1:] == ["apt", "get"]


async def test_english_words_beside_names_in_cyrillic_are_stemmed_as_english(
    client: Any, unique: Any, upsert: Any, make_doc: Any, search: Any
) -> None:
    name = unique("scripts")
    await upsert(client, name, make_doc("bolshoi.md", [BOLSHOI], title="Bolshoi"))
    await upsert(client, name, make_doc("ru.md", [RUSSIAN], title="Большой театр"))
    assert (await _keyword(client, search, name, "theatres staging ballets"))[:1] == ["bolshoi.md"]
    assert (await _keyword(client, search, name, "театров"))[:1] == ["ru.md"]


async def test_an_english_stop_word_matches_no_passage_of_another_language(
    client: Any, unique: Any, upsert: Any, make_doc: Any, search: Any
) -> None:
    """An English question met a German passage on "to" and "the" (German terms of its English quote) and, once a
    document was read as Russian, on "a" and "in": the English stop words make no term in any language."""
    name = unique("stops")
    await upsert(client, name, make_doc("de.md", [GERMAN_QUOTING_ENGLISH], title="Netzwerk"))
    found = await search(
        client, query="how to hang a mirror on the wall", collections=[name], mode="keyword", min_score=0
    )
    assert found["hits"] == []
    assert (await _keyword(client, search, name, "unable to connect"))[:1] == ["de.md"]
