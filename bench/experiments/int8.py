"""int8 embeddings against the gateway's fp32 ONNX engine: speed, closeness to fp32 and retrieval quality.

    python -m bench.experiments.int8                      # screen every scheme, then full nDCG for the promising ones
    python -m bench.experiments.int8 --full dyn-all       # force a scheme into the full evaluation (repeatable)
    python -m bench.experiments.int8 --screen-only
    python -m bench.experiments.int8 --screen-only --only dyn-all --speed-passages 48 --repeats 3   # a shorter timing
    python -m bench.experiments.int8 --reuse-screen --top 0 --full NAME --queries 50 --extra-docs 150  # nDCG, a subset

Each variant is made offline from the gateway's cached fp32 export (bench/experiments/int8_models.py) and run exactly
as the
gateway runs fp32 (the torch-free LightEmbedder: the model's tokenizer.json, length-sorted batches of 64, masked
mean pooling, 2 intra-op threads). In one run, against fp32:

* speed: sequences/s on a fixed sample of SciFact passages that fill the model's 256 tokens, median of repeats,
  the engines interleaved in each repeat (so that load from other processes falls on all of them alike);
* closeness: cosine of each passage vector to fp32's (mean and min) on a screening sample of both corpora, and on
  the full corpora for the schemes evaluated in full;
* the per-node screen: each quantizable node alone in int8, its cosine loss (which nodes are sensitive);
* retrieval (full evaluation only): nDCG@10 on SciFact and dbpedia-5k with whole documents (title + text, cut at
  256 tokens) and exact cosine search in numpy over the corpus vectors (queries from the same engine), dense alone
  and hybrid: the gateway's own fusion (Fusion().for_query) of those dense lists with the BM25 lists that
  bench.rankings kept (bench/results/tmp/lists-<dataset>.json, folded to documents), so that fp32 and int8 differ
  in the vectors only.

Models, vectors and the per-node screen are cached under bench/results/tmp/int8/; figures go to
bench/experiments/results/int8.json and the table to bench/experiments/results/int8.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..data import DATASETS, Dataset, load
from ..rankings import TMP
from .int8_eval import BAR, cosines, full_evaluation, passage, report, vectors
from .int8_models import Scheme, node_names, schemes, single_node

WORK = TMP / "int8"
RESULTS = Path(__file__).resolve().parent / "results"


class Reference:
    """The gateway's fp32 export, its torch-free manifest and tokenizer: what every engine here shares."""

    def __init__(self) -> None:
        from vector_gateway.embedder import resolve_model
        from vector_gateway.light_embedder import FileTokenizer, load_manifest
        from vector_gateway.onnx_export import onnx_file

        self.name, model_dir = resolve_model("")
        self.fp32 = onnx_file(model_dir)
        manifest = load_manifest(self.fp32, model_dir)
        if manifest is None:
            raise SystemExit(f"no {self.fp32}: run `python -m vector_gateway.onnx_bake` first")
        self.manifest = manifest
        self.tokenizer = FileTokenizer(model_dir / manifest.tokenizer_file, manifest)

    def engine(self, path: Path, batch_size: int = 64) -> Any:
        """``batch_size`` 1: each text alone, as the gateway runs int8 (a batch's activation range would be shared)."""
        from vector_gateway.light_embedder import LightEmbedder
        from vector_gateway.onnx_runtime import open_session

        return LightEmbedder(self.name, self.tokenizer, open_session(path, 0), self.manifest, batch_size=batch_size)


def samples(ref: Reference, data: dict[str, Dataset]) -> dict[str, list[str]]:
    """Fixed samples: "speed" (SciFact passages at the 256-token cap), "screen" (both corpora), "calibration"."""
    rng = random.Random(31)
    scifact = [passage(d) for d in data["scifact"].docs]
    dbpedia = [passage(d) for d in data["dbpedia-5k"].docs]
    rng.shuffle(scifact)
    rng.shuffle(dbpedia)
    lengths = ref.tokenizer.lengths(scifact[:1500])
    full = [t for t, n in zip(scifact[:1500], lengths, strict=True) if n >= ref.manifest.max_seq_length]
    return {"speed": full[:128], "screen": scifact[1500:1692] + dbpedia[:96],
            "calibration": scifact[2000:2096] + dbpedia[1000:1032],
            "mixed": scifact[2500:2564] + dbpedia[2000:2064]}  # fmt: skip


def calibration_batches(ref: Reference, texts: list[str]) -> Iterator[dict[str, np.ndarray]]:
    for start in range(0, len(texts), 8):
        yield ref.tokenizer.features(texts[start : start + 8])


def digest(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()[:16]


def build(ref: Reference, scheme: Scheme, calibration: list[str], rebuild: bool) -> Path:
    target = WORK / "models" / f"{scheme.name.replace(':', '_').replace('/', '_')}.onnx"  # see model_path
    if rebuild or not target.is_file():
        temporary = target.with_suffix(".part.onnx")
        scheme.build(ref.fp32, temporary, lambda: calibration_batches(ref, calibration))
        os.replace(temporary, target)
    return target


def sensitivity(ref: Reference, texts: list[str], base: np.ndarray) -> list[dict[str, Any]]:
    """Each quantizable node alone in int8 (dynamic, per-tensor): its loss of cosine to fp32, worst first."""
    path = WORK / "sensitivity.json"
    if path.is_file():
        return list(json.loads(path.read_text()))
    rows: list[dict[str, Any]] = []
    for role, names in node_names(ref.fp32).items():
        for layer, name in enumerate(names):
            model = build(ref, single_node(name), [], rebuild=True)
            got = cosines(vectors(ref.engine(model), texts), base)
            rows.append({"node": name, "role": role, "layer": layer, "loss": round(1 - got["mean"], 5), **got})
            print(f"  {role} layer {layer}: cosine {got['mean']:.5f} (min {got['min']:.5f})", flush=True)
            model.unlink()
    rows.sort(key=lambda row: row["loss"], reverse=True)
    path.write_text(json.dumps(rows, indent=1))
    return rows


def speeds(engines: dict[str, Any], texts: list[str], repeats: int) -> dict[str, float]:
    """Sequences/s per engine, median of ``repeats``; every repeat runs all engines, in a rotating order."""
    times: dict[str, list[float]] = {name: [] for name in engines}
    for engine in engines.values():
        engine.embed_documents(texts[:16])  # warm-up
    names = list(engines)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            engines[name].embed_documents(texts)
            times[name].append(time.perf_counter() - start)
    return {name: round(len(texts) / statistics.median(t), 2) for name, t in times.items()}


def screen_all(ref: Reference, sample: dict[str, list[str]], args: argparse.Namespace) -> tuple[dict, dict, list]:
    """Every scheme built and screened on speed and cosine; (screen rows, engines by name, per-node screen)."""
    fp32 = ref.engine(ref.fp32)
    base = vectors(fp32, sample["screen"])
    print("per-node sensitivity (each node alone in int8):", flush=True)
    worst = sensitivity(ref, sample["screen"][:128], base[:128])
    engines = {"fp32": fp32}
    screen: dict[str, dict[str, Any]] = {"fp32": {"about": "the gateway's fp32 export", "cosine": cosines(base, base)}}
    for name, scheme in schemes([row["node"] for row in worst]).items():
        if args.only and name not in args.only:
            continue
        print("building", name, flush=True)
        try:
            engines[name] = ref.engine(build(ref, scheme, sample["calibration"], args.rebuild))
        except Exception as exc:  # noqa: BLE001 - a scheme the quantizer cannot make is reported, not fatal
            screen[name] = {"about": scheme.about, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            continue
        screen[name] = {"about": scheme.about, "cosine": cosines(vectors(engines[name], sample["screen"]), base)}
        print(f"  cosine {screen[name]['cosine']}", flush=True)
    if not args.skip_speed:
        timed(screen, engines, sample, args)
    (WORK / "screen.json").write_text(json.dumps({"screen": screen, "sensitivity": worst}, indent=1))
    return screen, engines, worst


def timed(screen: dict[str, Any], engines: dict[str, Any], sample: dict[str, list[str]], args: Any) -> None:
    """Sequences/s of every engine in ``engines`` (fp32 among them), interleaved; the ratios into ``screen``."""
    rates = speeds(engines, sample["speed"][: args.speed_passages], args.repeats)
    for name, rate in rates.items():
        screen[name] |= {"seq_per_s": rate, "ratio": round(rate / rates["fp32"], 3)}


def speed_only(ref: Reference, sample: dict[str, list[str]], args: argparse.Namespace) -> tuple[dict, list]:
    """Time fp32 and the ``--only`` schemes (already built by a screen) and keep their ratios in screen.json:
    the screen's cosines need no quiet machine, the timing does (run this part under python -m bench.quiet)."""
    kept = json.loads((WORK / "screen.json").read_text())
    screen, worst = kept["screen"], kept["sensitivity"]
    names = ["fp32", *(n for n in args.only if n != "fp32")]
    engines = {name: ref.engine(model_path(ref, name)) for name in names}
    if args.alone:  # the same engines, each text alone (the gateway's int8): keyed "<name>@1"
        engines |= {f"{name}@1": ref.engine(model_path(ref, name), 1) for name in names}
        screen |= {f"{name}@1": {"about": f"{name}, each text alone (batch 1)"} for name in names}
    for row in screen.values():
        row.pop("seq_per_s", None)
        row.pop("ratio", None)
    timed(screen, engines, sample, args)
    if args.alone:  # the mixed-length corpus passages too: where batches pad and texts alone do not
        mixed = {**sample, "speed": sample["mixed"]}
        rates = speeds(engines, mixed["speed"][: args.speed_passages], args.repeats)
        for name, rate in rates.items():
            screen[name] |= {"mixed_seq_per_s": rate, "mixed_ratio": round(rate / rates["fp32"], 3)}
    (WORK / "screen.json").write_text(json.dumps({"screen": screen, "sensitivity": worst}, indent=1))
    return screen, worst


def model_path(ref: Reference, name: str) -> Path:
    return ref.fp32 if name == "fp32" else WORK / "models" / f"{name}.onnx"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.experiments.int8", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--full", action="append", default=[], help="evaluate this scheme in full (repeatable)")
    parser.add_argument("--top", type=int, default=2, help="how many screened schemes get the full evaluation")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--speed-passages", type=int, default=128, help="passages (256 tokens) timed per repeat")
    parser.add_argument("--only", action="append", default=[], help="screen only this scheme (repeatable)")
    parser.add_argument("--screen-only", action="store_true")
    parser.add_argument("--reuse-screen", action="store_true", help="take the last screen (screen.json) as it is")
    parser.add_argument("--queries", type=int, default=None, help="full evaluation on the first N queries only")
    parser.add_argument("--extra-docs", type=int, default=None, help="with --queries: their relevant documents + N")
    parser.add_argument("--rebuild", action="store_true", help="remake the int8 models even if cached")
    parser.add_argument("--skip-speed", action="store_true", help="screen cosines only (no timing: a busy machine)")
    parser.add_argument(
        "--alone",
        action="store_true",
        help="with --speed-only: also time each engine on one text at a time, and on mixed lengths",
    )
    parser.add_argument(
        "--full-batch",
        type=int,
        default=64,
        help="the int8 schemes' batch in the full evaluation (1: each text alone, as the gateway)",
    )
    parser.add_argument(
        "--speed-only",
        action="store_true",
        help="time fp32 and the --only schemes of the last screen, nothing else (a quiet machine)",
    )
    args = parser.parse_args(argv)
    ref = Reference()
    data = {name: load(DATASETS[name]) for name in ("scifact", "dbpedia-5k")}
    sample = samples(ref, data)
    engines: dict[str, Any] = {}
    if args.speed_only:
        screen, worst = speed_only(ref, sample, args)
        args.screen_only = True
    elif args.reuse_screen:
        kept = json.loads((WORK / "screen.json").read_text())
        screen, worst = kept["screen"], kept["sensitivity"]
    else:
        screen, engines, worst = screen_all(ref, sample, args)
    print(json.dumps({n: {k: v for k, v in s.items() if k != "about"} for n, s in screen.items()}, indent=1))
    full: dict[str, Any] = {}
    if not args.screen_only:
        fast = [n for n in screen if n != "fp32" and screen[n].get("ratio", 0) >= BAR["ratio"] - 0.1]
        fast.sort(key=lambda n: screen[n]["cosine"]["mean"], reverse=True)
        wanted = ["fp32", *dict.fromkeys([*args.full, *fast[: args.top]])]
        engines = {n: engines.get(n) or ref.engine(model_path(ref, n)) for n in wanted}
        keys = {n: digest(model_path(ref, n)) for n in wanted}
        if args.full_batch != 64:  # the int8 schemes as the gateway runs them (fp32's vectors do not depend on it)
            alone = [n for n in wanted if n != "fp32"]
            engines = {"fp32": engines["fp32"]} | {
                f"{n}@{args.full_batch}": ref.engine(model_path(ref, n), args.full_batch) for n in alone
            }
            keys = {"fp32": keys["fp32"]} | {f"{n}@{args.full_batch}": f"{keys[n]}-b{args.full_batch}" for n in alone}
        subsets = {name: d.subset(args.queries, args.extra_docs) for name, d in data.items()}
        full = full_evaluation(engines, keys, subsets, WORK)
    report(ref, screen, worst, full, sample, RESULTS)


if __name__ == "__main__":
    main()
