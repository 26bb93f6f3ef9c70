"""The slim docling image has no torch: the service must import and convert every format it serves without it.

docling-slim 2.143.0 broke that: `docling.document_converter` imports `docling/pipeline/asr_transformers.py`, which
imports torch at the top, so the slim image died at start in a restart loop (issue 27). The development environment
has torch (the gateway's ONNX export needs it), so the process below hides it: an import hook refuses `torch` as if
it were not installed, then the real converter reads a PDF, a scanned PDF (OCR), a DOCX and an HTML page.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"

SCRIPT = r"""
import importlib.abc, json, sys
from pathlib import Path

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden: the slim image has no torch)", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
    del sys.modules[name]

from docling_service.converter import Converter, ConverterOptions
from bench.office_scans import office_report

fixtures = Path(sys.argv[1])
converter = Converter(ConverterOptions())
converter.start()
scan, _ = office_report(1, 200)
documents = {
    "sample.pdf": (fixtures / "sample.pdf").read_bytes(),
    "scan.pdf": scan,
    "sample.docx": (fixtures / "sample.docx").read_bytes(),
    "sample.html": (fixtures / "sample.html").read_bytes(),
}
out = {name: converter.convert(data, name).markdown for name, data in documents.items()}
out["torch imported"] = any(n == "torch" or n.startswith("torch.") for n in sys.modules)
print(json.dumps(out))
"""


def test_the_service_imports_and_converts_pdf_scans_docx_and_html_without_torch() -> None:
    repo = FIXTURES.parents[1]
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(FIXTURES)], cwd=repo, capture_output=True, text=True, timeout=600,
        env={"PYTHONPATH": str(repo), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out.pop("torch imported") is False
    assert "Amphibian Regeneration" in out["sample.pdf"]
    assert "orchard" in out["scan.pdf"].lower(), out["scan.pdf"][:300]  # read by OCR: the scan has no text layer
    assert "Hive Inspection" in out["sample.docx"]
    assert "Sourdough" in out["sample.html"]
