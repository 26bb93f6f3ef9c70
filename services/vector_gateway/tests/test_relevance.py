"""How an answer is judged on or off the library's topic (relevance.off_topic, issue 52 point 2): each rule alone, on
answers built by hand. Through real searches: services/ingestion_mcp/tests/test_search_trust.py."""

from __future__ import annotations

from ingestion_contracts.gateway import LEXICAL_MEANING_FLOOR, MEANING_FLOOR, RELEVANCE_FLOOR, SearchHit
from vector_gateway.fusion import Fusion
from vector_gateway.relevance import Meaning, off_topic, shares_a_word

FUSION = Fusion()
KNOWN = frozenset({"coffee", "machine", "manual", "copies", "fee", "ballot", "delayed"})


def on_topic(query: str, mode: str, hits: list[SearchHit], fusion: Fusion, meaning: Meaning | None = None,
             known: frozenset[str] | None = None) -> bool:  # fmt: skip
    """As the gateway answers it (SearchResponse.on_topic) for an answer with hits: no reason to hold it back."""
    return off_topic(query, mode, hits, fusion, meaning, known) is None


def _hit(text: str, score: float, *, dense: float = 0.0, keyword: float = 0.0) -> SearchHit:
    return SearchHit(
        chunk_id="c", doc_id="d", collection="c", source="s", key="k", title="License", file_type="md", page=None,
        page_end=None, heading_path=["Terms"], chunk_index=0, text=text, start=0, end=len(text), token_count=10,
        score=score, dense_score=dense, keyword_score=keyword, tags=[], metadata={}, last_modified="x",
    )  # fmt: skip


def _asked(answer: float | None, words: dict[str, float] | None = None) -> tuple[list[int], Meaning]:
    """A meaning that finds every hit ``answer`` close to the query (these queries are of several words), to each of
    ``words`` its value, and far from any other single word."""
    calls: list[int] = []

    def meaning(hits: list[SearchHit], text: str) -> list[float] | None:
        calls.append(len(hits))
        found = (words or {}).get(text, answer if " " in text else 0.0)
        return None if found is None else [found] * len(hits)

    return calls, meaning


def test_a_keyword_answer_on_a_shared_word_needs_meaning_too() -> None:
    hits = [_hit("You may charge a fee for each copy you convey.", 0.3, keyword=0.3)]
    far, close, unknown = _asked(LEXICAL_MEANING_FLOOR["keyword"] - 0.01), _asked(0.6), _asked(None)
    assert not on_topic("cheapest coffee machine without a fee", "keyword", hits, FUSION, far[1], KNOWN)
    assert on_topic("cheapest coffee machine without a fee", "keyword", hits, FUSION, close[1], KNOWN)
    # A collection of another model: its vectors cannot be compared, the score alone judges as before.
    assert on_topic("cheapest coffee machine without a fee", "keyword", hits, FUSION, unknown[1], KNOWN)
    assert far[0] == [1]
    assert close[0] == [1, 1]  # close enough: then the one word it shares ("fee") alone
    why = off_topic("cheapest coffee machine without a fee", "keyword", hits, FUSION, far[1], KNOWN)
    assert why == "words_without_meaning"


def test_meaning_is_not_asked_for_when_words_or_score_decide() -> None:
    calls, meaning = _asked(0.0)
    held = [_hit("You may charge a fee for copies.", 0.3, keyword=0.3)]
    assert on_topic("fee for copies", "keyword", held, FUSION, meaning, KNOWN)  # holds the words
    low = [_hit("You may charge a fee.", RELEVANCE_FLOOR["hybrid"] - 0.01, dense=0.05, keyword=0.2)]
    assert not on_topic("coffee machine fee", "hybrid", low, FUSION, meaning, KNOWN)  # its dense parts tell
    assert off_topic("coffee machine fee", "hybrid", low, FUSION, meaning, KNOWN) == "under_floor"
    assert calls == []


def test_a_keyword_answer_under_its_floor_is_shown_when_its_meaning_alone_reaches_the_semantic_floor() -> None:
    """In a library of one manual, its own words are in many passages (a low BM25 IDF): true answers scored 0.18-0.22
    in keyword mode, under the floor, while their passages' meaning was 0.51-0.86 (bench.manual_qa --per-manual).
    A keyword answer under its floor is on topic when a hit's meaning reaches MEANING_FLOOR, as a hybrid one is;
    an everyday question's answer there (its meaning under 0.30) is held back as before."""
    low = [_hit("RAID0 spreads the data over every disk: when one fails, the data is lost.", 0.2, keyword=0.2)]
    close, far, unknown = _asked(MEANING_FLOOR), _asked(MEANING_FLOOR - 0.01), _asked(None)
    assert RELEVANCE_FLOOR["keyword"] > 0.2
    assert on_topic("what happens with RAID0 if a disk breaks", "keyword", low, FUSION, close[1], KNOWN)
    assert off_topic("what happens with RAID0 if a disk breaks", "keyword", low, FUSION, far[1], KNOWN) == "under_floor"
    # A collection of another model: its vectors cannot be compared, the floor alone judges.
    assert off_topic("what happens with RAID0 if a disk breaks", "keyword", low, FUSION, unknown[1], KNOWN) == (
        "under_floor"
    )
    assert close[0] == far[0] == unknown[0] == [1]


def test_a_hybrid_answer_reaching_its_floor_on_words_alone_needs_meaning_too() -> None:
    alpha = FUSION.for_query("coffee machine manual").alpha
    weak = LEXICAL_MEANING_FLOOR["hybrid"] - 0.05
    hits = [_hit("The manual of the program.", 0.4, dense=alpha * weak, keyword=0.4 - alpha * weak)]
    assert not on_topic("coffee machine manual", "hybrid", hits, FUSION, _asked(weak)[1], KNOWN)
    assert on_topic("coffee machine manual", "hybrid", hits, FUSION, _asked(0.5)[1], KNOWN)
    # A hit close in meaning on its own dense part needs no search for the query's meaning: only for the one word it
    # shares with the query ("manual"), which is further from it than the query.
    strong = [_hit("The manual of the program.", 0.4, dense=alpha * LEXICAL_MEANING_FLOOR["hybrid"], keyword=0.3)]
    calls, meaning = _asked(0.0)
    assert on_topic("coffee machine manual", "hybrid", strong, FUSION, meaning, KNOWN)
    assert calls == [1]


def test_made_up_words_no_hit_holds_are_off_topic_whatever_the_meaning() -> None:
    near = [_hit("Krudttønden is a cultural centre in Copenhagen.", 0.51, dense=0.51)]
    assert not shares_a_word("kisknorttund", near)
    assert not on_topic("kisknorttund", "semantic", near, FUSION, known=KNOWN)
    assert off_topic("kisknorttund", "semantic", near, FUSION, known=KNOWN) == "unknown_words"
    assert on_topic("kisknorttund", "semantic", near, FUSION)  # no word list (another tokenizer): as before
    # Real words no passage holds are judged by meaning as before: a paraphrase is shown.
    paraphrase = [_hit("The committee postponed the vote.", 0.55, dense=0.55)]
    assert on_topic("why was the ballot delayed", "semantic", paraphrase, FUSION, known=KNOWN)
    alpha = FUSION.for_query("why was the ballot delayed").alpha
    hybrid = [_hit("The committee postponed the vote.", alpha * 0.55, dense=alpha * 0.55)]
    assert MEANING_FLOOR <= 0.55 and on_topic("why was the ballot delayed", "hybrid", hybrid, FUSION, known=KNOWN)


def test_a_question_the_model_cannot_read_is_not_shown_on_meaning_alone() -> None:
    """A German everyday question to the English model (bench.manual_qa: 0.46 in semantic mode against a German manual's
    passage that holds only its stop words, and a hybrid BM25 match on "mit" in the MIT licence): the model knows
    too few of its words to judge by meaning. A German question whose passage holds one of its words is judged as
    before, and so is an English paraphrase that shares no word."""
    from vector_gateway.embedder import bundled_model_dir
    from vector_gateway.vocabulary import model_words

    known = model_words(bundled_model_dir())
    assert known is not None
    question = "Tipps für den Urlaub am Strand mit Kindern"
    german = _hit("Für den Querverweis mit dem Feld crossref gilt am Ende der Eintrag.", 0.46, dense=0.46)
    licence = _hit("Permission is hereby granted (the MIT licence).", 0.3, dense=0.46, keyword=0.2)
    assert off_topic(question, "semantic", [german], FUSION, known=known) == "unknown_words"
    assert off_topic(question, "hybrid", [german, licence], FUSION, known=known) == "unknown_words"
    on = _hit("Im Urlaub lädt Biber die Einträge neu.", 0.46, dense=0.46)
    assert on_topic("Tipps für den Urlaub am Strand mit Kindern", "semantic", [on], FUSION, known=known)
    paraphrase = [_hit("The committee postponed the vote.", 0.55, dense=0.55)]
    assert on_topic("why was the ballot delayed", "semantic", paraphrase, FUSION, known=known)


def test_an_answer_about_one_word_of_the_question_is_off_topic() -> None:
    """SciFact holds a study of why people drink wine: "which wine goes with grilled salmon" finds it over the hybrid
    floor, its meaning 0.38 (over LEXICAL_MEANING_FLOOR), and "wine" alone is closer to it (0.55): the passage is
    about the word, not the question (bench.tune_floor: 2 of 3 such everyday answers held back on SciFact, 1 of 768
    relevant documents). A passage that holds two of the question's words, or one that the whole question is closer to
    than its word, is shown as before."""
    query = "which wine goes with grilled salmon"
    alpha = FUSION.for_query(query).alpha
    known = KNOWN | {"wine", "goes", "grilled", "salmon"}
    wine = _hit("Drink choice: factors influencing the intention to drink wine.", 0.33, dense=alpha * 0.38, keyword=0.2)
    calls, about_wine = _asked(0.38, {"wine": 0.55})
    assert off_topic(query, "hybrid", [wine], FUSION, about_wine, known) == "one_word"
    assert calls == [1]  # the word alone, against the closest hit; the query's meaning came with the hit
    assert on_topic(query, "hybrid", [wine], FUSION, _asked(0.38, {"wine": 0.37})[1], known)
    both = _hit("Serve grilled salmon with a white wine.", 0.33, dense=alpha * 0.38, keyword=0.2)
    assert on_topic(query, "hybrid", [both], FUSION, about_wine, known)  # two of its words: judged as before
    # Keyword mode: the query's meaning is searched for, then the word's.
    keyword = [_hit("Drink choice: factors influencing the intention to drink wine.", 0.3, keyword=0.3)]
    calls, about_wine = _asked(0.38, {"wine": 0.55})
    assert off_topic(query, "keyword", keyword, FUSION, about_wine, known) == "one_word"
    assert calls == [1, 1]
    # A collection of another model (no meaning to be had): the score alone judges, as before.
    assert on_topic(query, "keyword", keyword, FUSION, _asked(None)[1], known)
    # A hit whose meaning alone reaches the semantic floor is shown whatever one word says.
    strong = _hit("Drink choice: factors influencing the intention to drink wine.", 0.4, dense=alpha * MEANING_FLOOR)
    assert on_topic(query, "hybrid", [strong], FUSION, _asked(MEANING_FLOOR, {"wine": 0.9})[1], known)
    # A question the model cannot read (most of its words unknown whole: another language) is not judged by one
    # word: the model reads it by its pieces, and its one known word is closer to anything (bench.manual_qa's German
    # questions).
    unread = frozenset({"wine"})
    assert on_topic(query, "hybrid", [wine], FUSION, _asked(0.38, {"wine": 0.55})[1], unread)


def test_a_question_the_model_cannot_read_is_judged_by_meaning_only_where_two_of_its_words_anchor_it() -> None:
    """A German everyday question to the English model (held-out questions asked of the manual set, bench.manual_qa's
    collection): a biblatex passage holds "passt" ("in keine der üblichen Kategorien passt"), and the installation
    guide's passage on the root password, which holds none of its words, came within a calibrated 0.50 of it (the
    model reads German by its pieces, and any German passage is near any German question). Its meaning tells
    nothing: it was shown in hybrid mode on that meaning alone. A German question whose passage holds two of its words
    ("heruntergeladenen", "Installationsdateien") is judged by meaning as before, and an English question too."""
    from vector_gateway.embedder import bundled_model_dir
    from vector_gateway.vocabulary import model_words

    known = model_words(bundled_model_dir())
    assert known is not None
    question = "welcher Wein passt zu gegrilltem Lachs"
    alpha = FUSION.for_query(question).alpha
    word = _hit("Eine veröffentlichte Bekanntmachung, die in keine der üblichen Kategorien passt.", 0.11, keyword=0.11)
    near = _hit("Évitez les mots du dictionnaire pour le mot de passe.", alpha * 0.50, dense=alpha * 0.50)
    assert off_topic(question, "hybrid", [near, word], FUSION, known=known) == "unknown_words"
    semantic = [_hit(near.text, 0.5, dense=0.5), _hit(word.text, 0.3, dense=0.3)]
    assert off_topic(question, "semantic", semantic, FUSION, known=known) == "unknown_words"
    # The hit holding its word counts: close enough, it is shown.
    assert on_topic(question, "semantic", [_hit(word.text, 0.5, dense=0.5)], FUSION, known=known)
    asked = "Wie prüfe ich, ob die heruntergeladenen Installationsdateien unverändert sind?"
    alpha = FUSION.for_query(asked).alpha
    answer = _hit("Verifizieren der Authentizität von heruntergeladenen Installationsdateien.", 0.25, keyword=0.25)
    related = _hit("Eine Voreinstellungsdatei erstellen.", alpha * 0.58, dense=alpha * 0.58)
    assert on_topic(asked, "hybrid", [answer, related], FUSION, known=known)
    paraphrase = [_hit("The committee postponed the vote.", 0.55, dense=0.55)]
    assert on_topic("why was the ballot delayed", "semantic", paraphrase, FUSION, known=known)


def test_a_hybrid_answer_to_a_question_the_model_cannot_read_is_shown_on_its_score() -> None:
    """biblatex's German manual answers "Wie steuere ich, ob im Spanischen 'y' oder 'e' als 'und' gedruckt wird?" in
    its passage on Spanish (hybrid 0.33, over the floor; keyword mode shows it): the English model cannot read the
    question, so the passage's meaning (under LEXICAL_MEANING_FLOOR) cannot tell against it. A hybrid answer to such a
    question that reaches its floor with a hit holding one of its words is shown on its score. Keyword mode still asks
    for meaning (its floor is reached on one common word of a French everyday question: "heure", "mère")."""
    from vector_gateway.embedder import bundled_model_dir
    from vector_gateway.vocabulary import model_words

    known = model_words(bundled_model_dir())
    assert known is not None
    question = "Wie steuere ich, ob im Spanischen 'y' oder 'e' als 'und' gedruckt wird?"
    spanish = _hit("Die Handhabung von dem Wort ,und' ist im Spanischen komplizierter.", 0.33, dense=0.03, keyword=0.3)
    assert on_topic(question, "hybrid", [spanish], FUSION, _asked(0.1)[1], known)
    assert off_topic(question, "keyword", [_hit(spanish.text, 0.3, keyword=0.3)], FUSION, _asked(0.1)[1], known) == (
        "words_without_meaning"
    )
    # An English question shown on its words is judged by meaning as before.
    fee = [_hit("You may charge a fee for the physical act of transferring a copy.", 0.3, keyword=0.3)]
    assert off_topic("best bank account without a monthly fee", "hybrid", fee, FUSION, _asked(0.1)[1], known) == (
        "words_without_meaning"
    )
