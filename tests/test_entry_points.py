"""Every entry point refuses a bad setting the same way (issue 41): servicekit.settings_or_exit writes one line that
names the environment variable and why, then exits 2. Run in process: the settings are read before anything starts.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest


def _docling() -> None:
    from docling_service.main import run

    run()


def _chunker() -> None:
    from chunker_service.main import run

    run()


def _gateway() -> None:
    from vector_gateway.main import run

    run()


def _mcp() -> None:
    from ingestion_mcp.cli.server_command import main

    main([])


def _worker() -> None:
    from ingestion_mcp.cli.worker_command import main

    main([])


def _index() -> None:
    from ingestion_mcp.cli.index_command import main

    main(["status"])


ENTRY_POINTS: dict[str, tuple[Callable[[], None], str]] = {
    # program: (its entry point, a variable it reads)
    "docling-service": (_docling, "DOCLING_PORT"),
    "chunker-service": (_chunker, "CHUNKER_PORT"),
    "vector-gateway": (_gateway, "VECTOR_GATEWAY_PORT"),
    "ingestion-mcp": (_mcp, "INGESTION_MCP_PORT"),
    "ingestion-mcp-worker": (_worker, "INGESTION_MCP_PORT"),
    "ingestion-index": (_index, "INGESTION_MCP_PORT"),
}


@pytest.mark.parametrize("program", ENTRY_POINTS)
def test_a_bad_setting_exits_2_with_one_line_naming_the_variable(
    program: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    entry, variable = ENTRY_POINTS[program]
    monkeypatch.setenv(variable, "seventy")
    with pytest.raises(SystemExit) as exited:
        entry()
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"{program}: invalid configuration: {variable}: Input should be a valid integer"), err
    assert "Traceback" not in "\n".join(err)
