"""How a result is kept: JSON, with the paths of the machine it was measured on made public.

A result names files and commands (the PDF read, the processes sampled, a work folder); written as they are they
would carry the folders of that machine into the repository. ``public`` writes them relative to the checkout
(``.venv/bin/python``, ``bench/results/tmp/...``), under ``<tmp>`` or under ``~``; tests/test_no_machine_traces.py
greps the kept results for what slips through.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def public(value: Any) -> Any:
    """``value`` (a result: dicts, lists, strings) with every path of this machine made public."""
    if isinstance(value, dict):
        return {key: public(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [public(item) for item in value]
    if not isinstance(value, str):
        return value
    for folder, shown in ((REPO, ""), (Path(tempfile.gettempdir()), "<tmp>/"), (Path.home(), "~/")):
        value = value.replace(f"{folder}/", shown).replace(str(folder), shown.rstrip("/") or ".")
    return value


def write_json(path: Path, value: Any, *, indent: int = 2) -> None:
    """``value`` made public, as indented JSON with a final newline."""
    path.write_text(json.dumps(public(value), indent=indent, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
