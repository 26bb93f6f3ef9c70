"""Off-topic queries and the "relevant" threshold: what min_score keeps answers and drops nonsense.

    python -m bench.offtopic        # needs bench.rankings' lists for scifact (and writes the off-topic ones)

OFF_TOPIC are everyday questions with no answer in SciFact (biomedical claims) or dbpedia-5k (encyclopedic
entities): recipes, sports, chores, nonsense. For a threshold t on the calibrated hybrid score it reports
the share of off-topic queries whose best SciFact passage scores below t (they return nothing), and the
share of the relevant documents hybrid puts in a query's top 10 that score t or more (they are kept).
"""

from __future__ import annotations

import argparse
import json

from ingestion_contracts.gateway import RELEVANT_SCORE
from vector_gateway.calibration import dense_score, keyword_score
from vector_gateway.fusion import Fusion

from .data import DATASETS, load
from .rankings import TMP

OFF_TOPIC = [
    "purple elephant umbrella saxophone",
    "how long do I boil an egg for a runny yolk",
    "best recipe for banana bread with walnuts",
    "who won the football match last Saturday night",
    "final score of the basketball game yesterday",
    "how to remove red wine stains from a carpet",
    "cheap flights to Lisbon in October",
    "what time does the supermarket close on Sunday",
    "how do I change a flat bicycle tyre",
    "lyrics of a song about summer love on the beach",
    "how to fold a fitted sheet neatly",
    "best pizza dough hydration for a home oven",
    "tennis racket string tension for beginners",
    "how to unclog a kitchen sink without chemicals",
    "funny cat names for a ginger kitten",
    "how many teaspoons are in a tablespoon",
    "knitting pattern for a chunky winter scarf",
    "how to get a toddler to sleep through the night",
    "is it going to rain tomorrow afternoon",
    "wedding speech ideas for the best man",
    "how to make cold brew coffee at home",
    "chess opening for beginners playing white",
    "train timetable from the station to the airport",
    "how to paint a bedroom wall without streaks",
    "ideas for a seven year old birthday party",
    "how to clean a cast iron frying pan",
    "golf swing tips to stop slicing the ball",
    "what to pack for a weekend camping trip",
    "how to write a polite complaint letter to a landlord",
    "sourdough starter smells like nail polish remover",
    "marathon training plan for sixteen weeks",
    "which houseplants survive in a dark bathroom",
    "how to tie a bow tie step by step",
    "guitar chords for a campfire singalong",
    "how to parallel park a car in a tight spot",
    "car insurance quote for a new driver",
    "how to grow tomatoes on a balcony",
    "board games for a family of four",
    "tips for a job interview at a coffee shop",
    "how to sharpen a kitchen knife with a whetstone",
]


def _hybrid_scores(lists: dict, fusion: Fusion, depth: int = 20) -> list[tuple[str, float]]:
    """(corpus id, score) of the fused top chunks, best first (a search with top_k=10 takes 20 per list)."""
    doc_of = {chunk: doc for name in ("dense", "bm25") for doc, chunk, _ in lists[name][:depth]}
    fused = fusion.fuse(*[[(c, s) for _, c, s in lists[name][:depth]] for name in ("dense", "bm25")])
    best: dict[str, float] = {}
    for chunk, parts in fused:
        best.setdefault(doc_of[chunk], parts.score)
    return list(best.items())


def rates(threshold: float, fusion: Fusion, relevant: dict, queries: dict, qrels: dict, off: dict) -> dict[str, float]:
    """``relevant`` / ``off``: query id -> lists; the weights are the gateway's for each query's text."""
    silent = sum(max((s for _, s in _hybrid_scores(lists, fusion.for_query(OFF_TOPIC[int(qid)]))), default=0.0)
                 < threshold for qid, lists in off.items())  # fmt: skip
    kept = found = 0
    for qid, lists in relevant.items():
        for doc, score in _hybrid_scores(lists, fusion.for_query(queries[qid]))[:10]:
            if doc in qrels.get(qid, {}):
                found += 1
                kept += score >= threshold
    return {"off_topic_silent": round(silent / len(off), 3), "relevant_kept": round(kept / max(found, 1), 3),
            "relevant_in_top10": found}  # fmt: skip


def single_rates(threshold: float, kind: str, relevant_lists: dict, qrels: dict, off_lists: dict) -> dict[str, float]:
    """The same two shares for one ranking alone (semantic: "dense", keyword: "bm25"), calibrated."""
    transform = dense_score if kind == "dense" else keyword_score
    silent = sum(max((transform(v) for _, _, v in lists[kind][:10]), default=0.0) < threshold
                 for lists in off_lists.values())  # fmt: skip
    kept = found = 0
    for qid, lists in relevant_lists.items():
        best: dict[str, float] = {}
        for doc, _, raw in lists[kind]:
            best.setdefault(doc, transform(raw))
        for doc in list(best)[:10]:
            if doc in qrels.get(qid, {}):
                found, kept = found + 1, kept + (best[doc] >= threshold)
    return {"off_topic_silent": round(silent / len(off_lists), 3), "relevant_kept": round(kept / max(found, 1), 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.offtopic", description=__doc__)
    parser.add_argument("--dataset", default="scifact", choices=sorted(DATASETS))
    args = parser.parse_args(argv)
    off_path = TMP / f"lists-offtopic-{args.dataset}.json"
    if not off_path.is_file():
        from .rankings import dump

        dump(args.dataset, {str(i): query for i, query in enumerate(OFF_TOPIC)}, out=off_path)
    off = json.loads(off_path.read_text())
    lists = json.loads((TMP / f"lists-{args.dataset}.json").read_text())
    data = load(DATASETS[args.dataset])
    qrels = data.qrels
    for threshold in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5):
        print(
            f"min_score {threshold}: hybrid {rates(threshold, Fusion(), lists, data.queries, qrels, off)}, "
            f"semantic {single_rates(threshold, 'dense', lists, qrels, off)}, "
            f"keyword {single_rates(threshold, 'bm25', lists, qrels, off)}"
        )
    print(f"documented (ingestion_contracts.gateway.RELEVANT_SCORE): {RELEVANT_SCORE}")


if __name__ == "__main__":
    main()
