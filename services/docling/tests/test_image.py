"""The docling image: standard pipeline models pinned and checked at build time, a slim variant, no torch in it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from docling_service.converter import Converter, ConverterOptions

HERE = Path(__file__).resolve().parents[1]
DOCKERFILE = (HERE / "Dockerfile").read_text()


def test_the_default_build_fetches_the_pinned_models_and_the_slim_one_refuses_torch() -> None:
    assert re.search(r"^ARG DOCLING_MODELS=standard$", DOCKERFILE, flags=re.M)
    assert "python services/docling/scripts/fetch_models.py /models/docling" in DOCKERFILE
    assert '"${DOCLING_MODELS}" = "slim"' in DOCKERFILE and "find_spec('torch')" in DOCKERFILE
    assert "COPY --from=builder /models/docling /models/docling" in DOCKERFILE
    assert "DOCLING_ARTIFACTS_PATH=/models/docling" in DOCKERFILE


def test_every_model_in_the_lock_names_a_fixed_revision_or_a_pinned_wheel() -> None:
    lock = json.loads((HERE / "models.lock.json").read_text())
    constraints = (HERE.parents[1] / "constraints.txt").read_text()
    for entry in lock["models"]:
        if entry["source"] == "rapidocr-wheel":
            assert entry["package"] in constraints and len(entry["sha256"]) == 3
        else:
            assert entry["revision"] not in ("main", "master", "")  # a branch moves; RECORD-ME fails the build


def test_an_empty_models_folder_means_the_native_pipeline(tmp_path: Path) -> None:
    converter = Converter(ConverterOptions(artifacts_path=tmp_path))
    converter.start()
    assert converter.pdf_pipeline == "native"
    (warning,) = converter.startup_warnings
    assert warning.startswith(f"DOCLING_ARTIFACTS_PATH={tmp_path} is empty; using the native PDF pipeline.")
    assert "models are not mounted" in warning and "read-only" in warning
