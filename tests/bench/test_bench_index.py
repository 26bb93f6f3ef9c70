"""bench/ a reader can use: every module of bench/ and bench/experiments/ is in the index (bench/README.md), with
what it answers, its command and its page, and imports; the data's folder is named where it is missing."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from bench.data import load

BENCH = Path(__file__).resolve().parents[2] / "bench"
INDEX = (BENCH / "README.md").read_text(encoding="utf-8")


def modules() -> list[str]:
    found = [f"bench.{p.stem}" for p in BENCH.glob("*.py") if p.stem != "__init__"]
    found += [f"bench.experiments.{p.stem}" for p in (BENCH / "experiments").glob("*.py") if p.stem != "__init__"]
    return sorted(found)


def indexed() -> set[str]:
    """The module names the index's table rows name (first cell, one or several in backticks)."""
    rows = [line for line in INDEX.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])}


def test_every_module_is_in_the_index_and_every_row_is_a_module() -> None:
    names = {module.rsplit(".", 1)[1] for module in modules()}
    assert names - indexed() == set(), "add a row to bench/README.md: what it answers, its command, its page"
    assert indexed() - names == set(), "bench/README.md names a module that is not there"


def test_experiments_are_indexed_as_experiments() -> None:
    experiments = INDEX[INDEX.index("## Experiments") :]
    for module in modules():
        if module.startswith("bench.experiments."):
            assert f"`{module.rsplit('.', 1)[1]}`" in experiments, module


@pytest.mark.parametrize("module", modules())
def test_every_module_imports(module: str) -> None:
    importlib.import_module(module)


def test_a_missing_benchmark_set_names_bench_dir(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="Set BENCH_DIR to the folder that holds scifact/"):
        load(tmp_path)
