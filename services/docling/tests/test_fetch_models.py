"""The image's model fetcher refuses files whose checksums differ from the lock, or that it has none for."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fetch_models.py"
LOCK = Path(__file__).resolve().parents[1] / "models.lock.json"


@pytest.fixture(scope="module")
def fetch():
    spec = importlib.util.spec_from_file_location("fetch_models", SCRIPT)
    assert spec is not None and spec.loader is not None, SCRIPT
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lock(tmp_path: Path, entries: list[dict]) -> Path:
    path = tmp_path / "lock.json"
    path.write_text(json.dumps({"models": entries}))
    return path


def test_rapidocr_models_come_from_the_wheel_and_match_the_lock(fetch, tmp_path: Path) -> None:
    (rapid,) = [entry for entry in json.loads(LOCK.read_text())["models"] if entry["source"] == "rapidocr-wheel"]
    assert fetch.main([str(tmp_path / "out"), "--lock", str(_lock(tmp_path, [rapid]))]) == 0
    assert sorted(p.name for p in (tmp_path / "out" / "RapidOcr").iterdir()) == sorted(rapid["sha256"])


def test_a_changed_file_stops_the_build(fetch, tmp_path: Path, capsys) -> None:
    rapid = {"folder": "RapidOcr", "source": "rapidocr-wheel", "sha256": {"PP-OCRv6_det_small.onnx": "0" * 64}}
    assert fetch.main([str(tmp_path / "out"), "--lock", str(_lock(tmp_path, [rapid]))]) == 1
    assert "PP-OCRv6_det_small.onnx has sha256" in capsys.readouterr().err


def test_an_unpinned_model_stops_the_build_before_any_download(fetch, tmp_path: Path, capsys) -> None:
    entry = {"folder": "x", "source": "huggingface", "repo_id": "a/b", "revision": "RECORD-ME", "sha256": {}}
    assert fetch.main([str(tmp_path / "out"), "--lock", str(_lock(tmp_path, [entry]))]) == 1
    assert "not pinned yet" in capsys.readouterr().err and not (tmp_path / "out" / "x").exists()
