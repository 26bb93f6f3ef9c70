"""Settings from the environment, refused with a clear message when wrong; PDF pipeline fallback."""

from __future__ import annotations

from pathlib import Path

import pytest
from docling.datamodel.settings import settings as docling_settings
from docling_service.converter import Converter, ConverterOptions
from docling_service.ocr import OcrOptions
from docling_service.settings import DoclingSettings
from pydantic import ValidationError


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DOCLING_PORT", "DOCLING_MAX_UPLOAD_MB", "DOCLING_ALLOWED_ROOTS", "DOCLING_ARTIFACTS_PATH"):
        monkeypatch.delenv(name, raising=False)
    settings = DoclingSettings(_env_file=None)
    assert (settings.port, settings.max_upload_mb, settings.max_upload_bytes) == (8001, 100, 100 * 1024 * 1024)
    assert (settings.artifacts_path, settings.allowed_roots, settings.do_ocr) == (None, [], True)
    assert (settings.workers, settings.worker_max_tasks) == (2, 100)
    assert settings.convert_timeout_s == 300


def test_environment_and_foreign_docling_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.setenv("DOCLING_SERVICE_URL", "http://docling:8001")  # the MCP server's name: ignored here
    monkeypatch.setenv("DOCLING_MAX_UPLOAD_MB", "5")
    monkeypatch.setenv("DOCLING_DO_OCR", "true")
    monkeypatch.setenv("DOCLING_ALLOWED_ROOTS", f"{tmp_path}/a,{tmp_path}/b/../b")
    settings = DoclingSettings(_env_file=None)
    assert settings.max_upload_mb == 5 and settings.do_ocr is True
    assert settings.allowed_roots == [tmp_path / "a", tmp_path / "b"]
    monkeypatch.setenv("DOCLING_ALLOWED_ROOTS", f'["{tmp_path}/a"]')
    assert DoclingSettings(_env_file=None).allowed_roots == [tmp_path / "a"]


@pytest.mark.parametrize(
    ("value", "needle"),
    [("relative/dir", "is relative"), ("/no/such/directory", "not an existing directory")],
)
def test_bad_allowed_roots_are_refused(monkeypatch: pytest.MonkeyPatch, value: str, needle: str) -> None:
    monkeypatch.setenv("DOCLING_ALLOWED_ROOTS", value)
    with pytest.raises(ValidationError, match=needle):
        DoclingSettings(_env_file=None)


def test_bad_numbers_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCLING_MAX_UPLOAD_MB", "0")
    with pytest.raises(ValidationError, match="max_upload_mb"):
        DoclingSettings(_env_file=None)


def test_ocr_settings_reach_the_worker_and_a_useless_detection_size_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert DoclingSettings(_env_file=None).ocr_options(cores=2) == OcrOptions(page_threads=2)
    monkeypatch.setenv("DOCLING_OCR_PAGE_THREADS", "3")
    monkeypatch.setenv("DOCLING_OCR_RENDER_DPI", "300")
    monkeypatch.setenv("DOCLING_OCR_DET_SIDE", "0")
    options = DoclingSettings(_env_file=None).ocr_options(cores=2)
    assert (options.page_threads, options.render_dpi, options.det_side) == (3, 300, 0)
    monkeypatch.setenv("DOCLING_OCR_DET_SIDE", "100")
    with pytest.raises(ValidationError, match="DOCLING_OCR_DET_SIDE=100 is too small"):
        DoclingSettings(_env_file=None)


def test_missing_models_fall_back_to_the_native_pipeline_and_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docling reads DOCLING_ARTIFACTS_PATH into its own global settings too (at import time); a missing
    # folder there must not stop the model-free pipelines.
    monkeypatch.setattr(docling_settings, "artifacts_path", tmp_path / "absent")
    (tmp_path / "README.txt").write_text("models go here\n")
    empty = Converter(ConverterOptions(artifacts_path=tmp_path))  # exists, but holds no model
    empty.start()
    assert empty.pdf_pipeline == "native" and empty.ready
    assert "could not be loaded" in empty.startup_warnings[0]
    absent = Converter(ConverterOptions(artifacts_path=tmp_path / "absent", do_ocr=True))
    absent.start()
    assert absent.pdf_pipeline == "native" and absent.ocr is True  # scanned pages: RapidOCR from its wheel
    (warning,) = absent.startup_warnings
    assert warning.startswith(f"DOCLING_ARTIFACTS_PATH={tmp_path / 'absent'} does not exist; using the native PDF")
    assert "models are not mounted" in warning
    result = absent.convert((Path(__file__).resolve().parents[3] / "tests/fixtures/sample.pdf").read_bytes(), "s.pdf")
    assert result.warnings[1:] == absent.startup_warnings
