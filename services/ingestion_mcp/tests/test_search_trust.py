"""Search you can trust, through a real MCP client (issue 12): one ranking over every collection, scores
with a meaning (an off-topic query returns nothing at the documented threshold), and why each hit ranked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from ingestion_contracts.gateway import RELEVANCE_FLOOR, RELEVANT_SCORE

LEGAL = {
    "Term": "This Agreement starts on the Effective Date and runs for twenty four months. Either party may end "
    "it at the close of the term by giving the other party ninety days written notice before expiry.",
    "Termination": "Either party may terminate this Agreement for material breach if the breach is not cured "
    "within thirty days of written notice describing it. Termination does not affect accrued rights.",
    "Payment": "The Customer pays each invoice within forty five days of receipt; late amounts bear interest "
    "at one percent per month until paid in full.",
}
ASTRONOMY = {
    "Great Red Spot": "Jupiter's Great Red Spot is an anticyclonic storm larger than Earth that has been "
    "observed since at least the nineteenth century; its winds reach four hundred kilometres an hour.",
    "Saturn's rings": "Saturn's rings are made of countless particles of water ice and rock, from grains of "
    "dust to chunks as large as houses, orbiting in a thin plane above the planet's equator.",
}
BAKING = {
    "Sourdough Baking": "A sourdough loaf rises with a starter of wild yeast and lactic acid bacteria. Feed the "
    "starter, mix the dough, let it ferment slowly and bake it in a very hot covered pot.",
    "Croissants": "Croissant dough is laminated: butter is folded into the dough and rolled out again and "
    "again, so that thin layers of butter and dough puff apart in the oven.",
}
CORPORA = {"trust_legal": ("Services agreement", LEGAL), "trust_astronomy": ("Planets", ASTRONOMY),
           "trust_baking": ("Baking notes", BAKING)}  # fmt: skip
DRINKS = {
    "Drink choice": "A survey of five hundred adults on the intention to drink wine. Price, taste and the company "
    "people keep shape whether they choose wine, and how often they drink it.",
    "Coffee and sleep": "Caffeine taken within six hours of bedtime shortened sleep by an hour in a trial of "
    "twelve healthy adults who drank coffee at home.",
    "Tea polyphenols": "Green tea holds catechins; in a cohort of older adults, three cups a day were linked to "
    "lower blood pressure over ten years.",
    "Beer and bone": "Silicon in beer has been studied for bone density; moderate drinkers in the study had "
    "slightly denser hip bones than those who never drank.",
}
OFF_TOPIC = ["purple elephant umbrella saxophone", "final score of the basketball game yesterday"]


def markdown(title: str, sections: dict[str, str]) -> str:
    return f"# {title}\n\n" + "\n\n".join(f"## {name}\n\n{text}" for name, text in sections.items()) + "\n"


@pytest.fixture(scope="module")
async def three_collections(app_state: Any) -> None:
    from ingestion_mcp.server import build_server
    from mcp import Client

    async with Client(build_server(app_state)) as client:
        for collection, (title, sections) in CORPORA.items():
            for name, text in sections.items():  # one document per section: each its own chunk
                body = markdown(title, {name: text})
                await _ingest_text(client, {"text": body, "name": f"{title}: {name}", "collection": collection})


@pytest.fixture(scope="module")
async def drinks(app_state: Any) -> str:
    """A small library of notes on drinks, one document a note: its collection's name."""
    from ingestion_mcp.server import build_server
    from mcp import Client

    async with Client(build_server(app_state)) as client:
        for name, text in DRINKS.items():
            arguments = {"text": markdown(name, {name: text}), "name": name, "collection": "trust_drinks"}
            await _ingest_text(client, arguments)
    return "trust_drinks"


async def _ingest_text(client: Any, arguments: dict[str, str]) -> None:
    """ingest_text, asked again while the model loads in the background at start-up."""
    for _ in range(240):
        out = (await client.call_tool("ingest_text", arguments)).structured_content
        if "still loading" not in str(out.get("error")):
            break
        await anyio.sleep(0.5)
    assert out["success"], out


def _ours(results: list[dict]) -> list[dict]:
    return [r for r in results if r["collection"] in CORPORA]


async def test_search_without_collection_ranks_every_collection_as_one(connect, call_tool, three_collections) -> None:
    async with connect() as client:
        out = await call_tool(client, "search", query="termination notice period", top_k=10)
    results = _ours(out["results"])
    assert [r["collection"] for r in results[:2]] == ["trust_legal", "trust_legal"], results
    assert {r["section"].split(" > ")[-1] for r in results[:2]} == {"Term", "Termination"}
    # Other collections' best passages are not lifted to the top of a scale of their own.
    legal = [r["score"] for r in results if r["collection"] == "trust_legal"]
    others = [r["score"] for r in results if r["collection"] != "trust_legal"]
    assert not others or (max(others) < min(legal[:2]) and max(others) < RELEVANT_SCORE["hybrid"]), results


async def test_off_topic_queries_return_nothing_at_the_documented_threshold(connect, call_tool, three_collections):
    async with connect() as client:
        for query in OFF_TOPIC:
            out = await call_tool(client, "search", query=query, min_score=RELEVANT_SCORE["hybrid"])
            assert _ours(out["results"]) == [], (query, out["results"])
        relevant = await call_tool(client, "search", query="how does a sourdough loaf rise",
                                   min_score=RELEVANT_SCORE["hybrid"])  # fmt: skip
        ours = _ours(relevant["results"])  # other tests' collections hold sourdough notes too
        assert ours and ours[0]["section"].endswith("Sourdough Baking")


async def test_detailed_results_say_why_they_ranked(connect, call_tool, three_collections) -> None:
    async with connect() as client:
        out = await call_tool(client, "search", query="storm on Jupiter", response_format="detailed", top_k=5)
        semantic = await call_tool(client, "search", query="storm on Jupiter", response_format="detailed",
                                   mode="semantic", top_k=3)  # fmt: skip
    assert out["results"][0]["section"].endswith("Great Red Spot")
    for result in out["results"] + semantic["results"]:
        why = result["why"]
        assert result["score"] == pytest.approx(why["dense"] + why["keyword"], abs=1e-4)
        assert why["collection"] == result["collection"]
        assert why["dense_rank"] is not None or why["keyword_rank"] is not None
    top = out["results"][0]["why"]
    assert top["dense_rank"] == 1 and top["keyword"] > 0  # "Jupiter" matches its words too
    assert all(r["why"]["keyword"] == 0 for r in semantic["results"])


@pytest.fixture(scope="module")
async def license_text(app_state: Any, three_collections: None) -> str:
    """The GPL-3 text every Debian system carries: a real document long enough that every query finds passages."""
    from ingestion_mcp.server import build_server
    from mcp import Client

    text = Path("/usr/share/common-licenses/GPL-3").read_text(encoding="utf-8")
    async with Client(build_server(app_state)) as client:
        arguments = {"text": text, "name": "GNU General Public License v3", "collection": "trust_license"}
        out = (await client.call_tool("ingest_text", arguments)).structured_content
        assert out["success"], out
    return "trust_license"


async def test_nonsense_answers_nothing_by_default_and_says_how_to_see_it(connect, call_tool, license_text) -> None:
    """Issue 52: an answer whose best passage is under the relevance floor is held back, and the agent is told how
    many passages were and how to see them; a question the collection answers is shown as before."""
    held = 0
    async with connect() as client:
        for query in [*OFF_TOPIC, "how to fold a fitted sheet neatly", "best recipe for banana bread with walnuts"]:
            for mode in ("hybrid", "semantic"):
                arguments = {"query": query, "collection": license_text, "mode": mode, "top_k": 3}
                out = await call_tool(client, "search", **arguments)
                shown = await call_tool(client, "search", **arguments, min_score=0)
                assert out["results"] == [], (query, mode, out["results"])
                if shown["results"]:  # some find no passage at all ("purple elephant ...")
                    held += 1
                    assert f"the {len(shown['results'])} best passages score under" in out["message"], out
                    assert "min_score: 0" in out["message"]
        assert held >= 4, held  # before: each of these answers was shown, nonsense and all
        answered = await call_tool(client, "search", query="may I charge a price for each copy that I convey",
                                   collection=license_text, top_k=3)  # fmt: skip
    assert any("You may charge any price" in r["text"] for r in answered["results"]), answered


async def test_a_small_librarys_true_answers_pass_the_floor(connect, call_tool, app_state: Any) -> None:
    """Issue 52: the floor was fitted on SciFact and dbpedia-5k; in a library of two notes two true answers fell under
    it. A paraphrase that semantic mode shows (hybrid weighs its meaning by 0.3: 0.19 against the floor's 0.28), and
    made-up words that every chunk holds (their BM25 IDF is ~0) are shown; everyday questions are still held back."""
    from ingestion_mcp.server import build_server
    from mcp import Client

    notes = {
        "Board minutes": "The committee postponed the vote because several members were sick with influenza and "
        "could not attend the meeting.",
        "Survey log": "The vorpalix survey entry 3 records that the gate near the quay was inspected by crew 2. "
        "The vorpalix survey entry 4 records that the crane was inspected by crew 5 before the dock closed.",
    }
    async with Client(build_server(app_state)) as client:
        for name, text in notes.items():
            arguments = {"text": markdown(name, {"Decisions": text}), "name": name, "collection": "trust_small"}
            assert (await client.call_tool("ingest_text", arguments)).structured_content["success"]
    async with connect() as client:
        for query, words in (("Why was the ballot delayed? Many participants had the flu.", "influenza"),
                             ("vorpalix quendrith survey", "vorpalix")):  # fmt: skip
            out = await call_tool(client, "search", query=query, collection="trust_small", mode="hybrid", top_k=3)
            assert out["results"] and words in out["results"][0]["text"], (query, out)
        for query in [*OFF_TOPIC[1:], "best recipe for banana bread with walnuts"]:
            out = await call_tool(client, "search", query=query, collection="trust_small", mode="hybrid", top_k=3)
            assert out["results"] == [], (query, out["results"])


async def test_keyword_answers_are_judged_by_their_meaning_too(connect, call_tool, license_text) -> None:
    """Issue 52: BM25 scores any shared word, so everyday questions that share one with the GPL ("manual", "fee",
    "consumer product") reached the keyword floor and were shown. A keyword answer is now shown when one of its
    passages holds the query's words, or when its best passage is close to the query in meaning as well; a question
    the text answers in other words still is."""
    async with connect() as client:
        # "consumer product" is in the GPL's passage on User Products: the answer reaches the keyword floor (0.32).
        for query in ("consumer product recall of strollers",):
            arguments = {"query": query, "collection": license_text, "mode": "keyword", "top_k": 5}
            out = await call_tool(client, "search", **arguments)
            shown = await call_tool(client, "search", **arguments, min_score=0)
            assert out["results"] == [], (query, out["results"])
            assert "share words with the query but none is close to it in meaning" in out["message"], out
            assert max(r["score"] for r in shown["results"]) >= RELEVANCE_FLOOR["keyword"], shown  # held by meaning
        for query in ("user manual of a coffee machine", "best bank account without a monthly fee"):  # 0.23: floor
            out = await call_tool(client, "search", query=query, collection=license_text, mode="keyword", top_k=5)
            assert out["results"] == [], (query, out["results"])
        answered = await call_tool(client, "search", query="may I charge a fee for conveying copies",
                                   collection=license_text, mode="keyword", top_k=3)  # fmt: skip
        assert any("charge any price" in r["text"] for r in answered["results"]), answered


async def test_a_keyword_answer_under_its_floor_is_shown_when_its_passage_means_the_question(
    connect, call_tool, license_text
) -> None:
    """Issue 52: a document's own words are in many of its passages (a low BM25 IDF), so a question asked in other
    words than the text's ("licence", "revoked", "breach" against "License", "terminate", "violation") scored under
    the keyword floor and was held back, though its passage answers it; in a library of one manual each, 6 of 148
    true keyword answers were (bench.manual_qa --per-manual). A keyword answer under its floor is now shown when one
    of its passages is as close to the query in meaning as a passage semantic mode shows."""
    async with connect() as client:
        for query in ("can the licence be revoked after a breach", "what happens if I violate the licence"):
            arguments = {"query": query, "collection": license_text, "mode": "keyword", "top_k": 5}
            out = await call_tool(client, "search", **arguments)
            assert any("terminate your rights" in r["text"] for r in out["results"]), (query, out)
            assert max(r["score"] for r in out["results"]) < RELEVANCE_FLOOR["keyword"], out  # shown by meaning


async def test_made_up_words_answer_nothing_however_close_their_vector(connect, call_tool, app_state: Any) -> None:
    """Issue 52: a made-up word shares no word with any passage, but its vector can sit as close to a name as a
    true paraphrase to its passage ("kisknorttund" and a note on Krudttønden: a calibrated 0.51, over the semantic
    floor). An answer that shares no word with a query holding no word the model knows is held back in every mode;
    the name itself still finds its note."""
    from ingestion_mcp.server import build_server
    from mcp import Client

    note = {"Krudttønden": "Krudttønden is a cultural centre in Østerbro, Copenhagen, in a former powder magazine."}
    async with Client(build_server(app_state)) as client:
        arguments = {"text": markdown("Krudttønden", note), "name": "Krudttønden", "collection": "trust_names"}
        assert (await client.call_tool("ingest_text", arguments)).structured_content["success"]
    async with connect() as client:
        for mode in ("semantic", "hybrid"):
            arguments = {"query": "kisknorttund", "collection": "trust_names", "mode": mode, "top_k": 3}
            out = await call_tool(client, "search", **arguments)
            assert out["results"] == [], (mode, out["results"])
            assert "and the embedding model knows too few of them" in out["message"], out
        shown = await call_tool(client, "search", query="kisknorttund", collection="trust_names", mode="semantic",
                                top_k=3, min_score=0)  # fmt: skip
        assert shown["results"][0]["score"] >= RELEVANCE_FLOOR["semantic"], shown  # what was shown before
        found = await call_tool(client, "search", query="Krudttønden", collection="trust_names", top_k=3)
        assert found["results"] and "powder magazine" in found["results"][0]["text"], found


async def test_a_passage_about_one_word_of_the_question_answers_nothing(connect, call_tool, drinks: str) -> None:
    """Issue 52: an everyday question shares one word with a passage about that word (SciFact's study of why people
    drink wine answered "which wine goes with grilled salmon"): it reaches the floor on that word, and the passage is
    close enough to the question in meaning to pass LEXICAL_MEANING_FLOOR. The word alone is closer to the passage
    than the question is: the passage is about the word, not the question, and the answer is held back. Questions
    about the survey are answered."""
    async with connect() as client:
        for mode in ("hybrid", "keyword"):
            arguments = {"query": "choosing a wine for a wedding toast", "collection": drinks, "mode": mode}
            out = await call_tool(client, "search", **arguments, top_k=3)
            assert out["results"] == [], (mode, out["results"])
            assert "are about one word of the query, not about the question" in out["message"], out
            shown = await call_tool(client, "search", **arguments, top_k=3, min_score=0)
            assert shown["results"][0]["title"] == "Drink choice", shown
            assert shown["results"][0]["score"] >= RELEVANCE_FLOOR[mode], shown  # shown before
            for query in ("what makes people choose to drink wine", "which wines do people choose for a dinner party"):
                found = await call_tool(client, "search", **{**arguments, "query": query}, top_k=3)
                assert found["results"] and found["results"][0]["title"] == "Drink choice", (mode, query, found)


async def test_a_semantic_answer_under_its_floor_is_judged_by_its_words_too(connect, call_tool, drinks: str) -> None:
    """Issue 52: meaning alone misses true answers that hold some of the question's words: "do friends influence how
    often someone orders wine" finds the survey of why people drink wine ("the company people keep shape [...] how
    often they drink it") at a semantic score of 0.41, under the floor of 0.45, and was held back (so were 1.8% of
    SciFact test's relevant documents, bench.tune_floor). A semantic answer under its floor is now judged on the
    query's words and meaning together, as a hybrid search of it is; everyday questions stay silent."""
    async with connect() as client:
        arguments = {"query": "do friends influence how often someone orders wine", "collection": drinks,
                     "mode": "semantic", "top_k": 3}  # fmt: skip
        out = await call_tool(client, "search", **arguments)
        assert out["results"] and out["results"][0]["title"] == "Drink choice", out
        assert out["results"][0]["score"] < RELEVANCE_FLOOR["semantic"], out  # shown by its words and meaning
        for query in ("best bank account without a monthly fee", "how long should I rest a steak after grilling"):
            silent = await call_tool(client, "search", **{**arguments, "query": query})
            assert silent["results"] == [], (query, silent)
