"""bench.scale's ratios against milvus-lite, its table and its plot (bench/results/scale.png, docs/scale.png)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from .scale_engines import BASELINE

# (label, how to read the figure from a size's entry, lower is better)
FIGURES: dict[str, tuple[str, bool]] = {
    "p50_ms": ("search p50 ms", True),
    "p95_ms": ("search p95 ms", True),
    "rss_peak_tree_mb": ("peak RSS, all processes, MB", True),
    "rss_after_tree_mb": ("RSS after the searches, MB", True),
    "open_s": ("open: start -> first search, s", True),
    "ingest_rows_per_s": ("ingest rows/s", False),
    "disk_mb": ("disk MB", True),
}


def figure(entry: dict[str, Any], name: str) -> float | None:
    if name in ("p50_ms", "p95_ms"):
        return (entry.get("search") or {}).get(name)
    if name == "ingest_rows_per_s":
        return (entry.get("build") or {}).get("rows_per_s")
    value = entry.get(name)
    return value if isinstance(value, int | float) else None


def ratios(engines: dict[str, Any]) -> dict[str, Any]:
    """Each engine's figures divided by milvus-lite's at the same size, measured in the same run."""
    base = (engines.get(BASELINE) or {}).get("sizes") or {}
    out: dict[str, Any] = {}
    for engine, result in engines.items():
        if engine == BASELINE:
            continue
        for size, entry in (result.get("sizes") or {}).items():
            if size not in base:
                continue
            pairs = {name: (figure(entry, name), figure(base[size], name)) for name in FIGURES}
            out.setdefault(engine, {})[size] = {
                name: round(mine / theirs, 3) for name, (mine, theirs) in pairs.items() if mine and theirs
            }
    return out


def quality_difference(quality: dict[str, Any]) -> dict[str, Any]:
    """nDCG@10 (hybrid) of each engine minus milvus-lite's, per set."""
    scored = {engine: {name: got["ndcg@10"] for name, got in sets.items() if "ndcg@10" in got}
              for engine, sets in quality.items()}  # fmt: skip
    base = scored.get(BASELINE) or {}
    return {engine: {name: round(value - base[name], 4) for name, value in sets.items() if name in base}
            for engine, sets in scored.items() if engine != BASELINE}  # fmt: skip


def table(result: dict[str, Any]) -> str:
    lines = ["| engine | rows | ingest rows/s | disk MB | open s | p50 ms | p95 ms | peak RSS MB | after RSS MB |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for engine, got in result["engines"].items():
        if reason := got.get("unavailable") or got.get("failed"):
            state = "not available" if "unavailable" in got else "failed"
            lines.append(f"| {engine} | {state}: {reason[:200]} |||||||")
            continue
        for size, e in got["sizes"].items():
            if "search" not in e:  # built, not measured yet
                built = f"{e['build']['rows_per_s']} | {e['disk_mb']}"
                lines.append(f"| {engine} | {int(size):,} | {built} | not measured |||||")
                continue
            search = e["search"]
            lines.append(f"| {engine} | {int(size):,} | {e['build']['rows_per_s']} | {e['disk_mb']} | {e['open_s']} | "
                         f"{search['p50_ms']} | {search['p95_ms']} | {e['rss_peak_tree_mb']} | "
                         f"{e['rss_after_tree_mb']} |")  # fmt: skip
    for engine, got in result["engines"].items():
        for size, e in (got.get("sizes") or {}).items():
            if (spread := e.get("over_runs")) and spread["runs"] > 1:
                lines.append(
                    f"\n{engine} at {int(size):,} rows, {spread['runs']} runs: p50 median {spread['p50_median_ms']} / "
                    f"worst {spread['p50_worst_ms']} ms, p95 median {spread['p95_median_ms']} / worst "
                    f"{spread['p95_worst_ms']} ms, server peak <= {spread['server_peak_max_mb']} MB"
                )
    for engine, sizes in result.get("ratios", {}).items():
        for size, r in sizes.items():
            shown = ", ".join(f"{name} x{value}" for name, value in r.items())
            lines.append(f"\n{engine} / {BASELINE} at {int(size):,} rows: {shown}")
    for engine, sets in (result.get("quality") or {}).get("ndcg@10_hybrid", {}).items():
        diff = (result["quality"].get("difference_to_milvus_lite") or {}).get(engine, {})
        shown = ", ".join(f"{name} {value}" + (f" ({diff[name]:+.4f})" if name in diff else "")
                          for name, value in sets.items())  # fmt: skip
        lines.append(f"\nnDCG@10 hybrid, {engine}: {shown}")
    return "\n".join(lines)


def plot(result: dict[str, Any], out: Path, copy_to: Path | None = None) -> None:
    """Latency, memory, open time and ingest rate against rows, one line per engine (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("p50_ms", "p95_ms"), ("rss_peak_tree_mb", "rss_after_tree_mb"), ("open_s",), ("ingest_rows_per_s",))
    figure_, axes = plt.subplots(2, 2, figsize=(11, 8))
    for ax, names in zip(axes.flat, panels, strict=True):
        for number, (engine, got) in enumerate(result["engines"].items()):
            sizes = sorted((int(s), e) for s, e in (got.get("sizes") or {}).items())
            for name, style in zip(names, ("-o", "--x"), strict=False):
                points = [(rows, figure(e, name)) for rows, e in sizes]
                points = [(x, y) for x, y in points if y]
                if points:  # one colour per engine in every panel; the second figure of a panel dashed
                    ax.plot(*zip(*points, strict=True), style, color=f"C{number}",
                            label=f"{engine}: {FIGURES[name][0]}")  # fmt: skip
        ax.set(xscale="log", yscale="log", xlabel="chunks in the index", title=" / ".join(FIGURES[n][0] for n in names))
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    figure_.suptitle("Hybrid search through the MCP tool (stdio), per engine and index size")
    figure_.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure_.savefig(out, dpi=100)
    plt.close(figure_)
    if copy_to is not None and copy_to.resolve() != out.resolve():  # --plot may name the plot itself
        copy_to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, copy_to)
