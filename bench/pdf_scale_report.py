"""bench.pdf_scale's figures as a table, ratios against a baseline run, and a plot of seconds and MB by pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def ratios(current: dict[str, Any], baseline: dict[str, Any]) -> list[dict[str, Any]]:
    """Per file: baseline seconds / current seconds (speed-up) and current peak MB / baseline peak MB."""
    before = {(f["kind"], f["pages"]): f for f in baseline["files"]}
    out = []
    for now in current["files"]:
        old = before.get((now["kind"], now["pages"]))
        if old is None:
            continue
        out.append({"kind": now["kind"], "pages": now["pages"],
                    "speed_up": round(old["seconds"] / now["seconds"], 2) if now["seconds"] else None,
                    "peak_tree_ratio": round(now["peak_tree_mb"] / old["peak_tree_mb"], 2)
                    if old["peak_tree_mb"] else None})  # fmt: skip
    return out


def shown(value: object) -> str:
    """A figure as printed; a dash where there is none (0 is a figure)."""
    return "-" if value is None else str(value)


def table(result: dict[str, Any]) -> str:
    head = (f"{'run':<9}{'file':<22}{'s':>8}{'pages/s':>9}{'conv p/s':>9}{'1st prog s':>11}{'max gap s':>10}"
            f"{'peak MB':>9}{'after RSS':>10}{'chunks':>7}")  # fmt: skip
    lines = [head]
    for run in ("current", "baseline"):
        if run not in result:
            continue
        idle = result[run]["idle_tree_mb"]
        lines.append(f"{run}: idle tree {idle['rss']} MB RSS summed, {idle['pss']} MB PSS")
        if retired := result[run].get("idle_tree_after_retire_mb"):
            lines.append(
                f"{run}: idle tree once idle workers exited {retired['rss']} MB RSS summed, {retired['pss']} MB PSS"
            )
        for f in result[run]["files"]:
            name = f"{f['kind']} {f['pages']}p"
            after, gap = f["after_tree_mb"]["rss"], shown(f["longest_progress_gap_s"])
            lines.append(f"{run:<9}{name:<22}{f['seconds']:>8}{f['pages_per_s']:>9}"
                         f"{shown(f['conversion_pages_per_s']):>9}{shown(f['first_progress_s']):>11}"
                         f"{gap:>10}{f['peak_tree_mb']:>9}{after:>10}{shown(f['chunks']):>7}")  # fmt: skip
    for r in result.get("ratios", []):
        lines.append(f"ratio {r['kind']} {r['pages']}p: {r['speed_up']}x faster, peak tree x{r['peak_tree_ratio']}")
    return "\n".join(lines)


def plot(result: dict[str, Any], out: Path) -> None:
    """Seconds and peak tree MB against pages, born-digital and scanned, current (and baseline) code."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (seconds, memory) = plt.subplots(1, 2, figsize=(10, 4))
    for run, style in (("current", "-o"), ("baseline", "--x")):
        for kind in ("born-digital", "scanned", "photos"):
            points = sorted((f["pages"], f["seconds"], f["peak_tree_mb"])
                            for f in result.get(run, {}).get("files", []) if f["kind"] == kind)  # fmt: skip
            if not points:
                continue
            pages = [p[0] for p in points]
            seconds.plot(pages, [p[1] for p in points], style, label=f"{kind} ({run})")
            memory.plot(pages, [p[2] for p in points], style, label=f"{kind} ({run})")
    seconds.set(xlabel="pages", ylabel="seconds (whole ingest)", title="Time by pages")
    memory.set(xlabel="pages", ylabel="peak RSS of the process tree (MB)", title="Memory by pages")
    for axes in (seconds, memory):
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=100)
    plt.close(figure)
