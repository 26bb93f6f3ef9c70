"""Logs for people and machines (issue 50, point 6): text lines when stderr is a terminal, JSON lines otherwise
(a client's log file, a pipe, a container's collector), and what was asked when the setting says."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
import re
from collections.abc import Iterator

import pytest
from servicekit.logging import TextFormatter, configure_logging, formatter_for, wants_json


@pytest.fixture
def terminal() -> Iterator[io.TextIOWrapper]:
    """A pseudo-terminal's end, as a person's terminal is to a process started there."""
    main, secondary = pty.openpty()
    stream = open(secondary, "w", encoding="utf-8", closefd=True)  # noqa: SIM115 - closed below
    try:
        yield stream
    finally:
        stream.close()
        os.close(main)


def test_a_terminal_gets_text_and_anything_else_json_unless_told(terminal: io.TextIOWrapper) -> None:
    read, write = os.pipe()
    with open(write, "w") as pipe:
        assert wants_json(None, pipe) is True and wants_json(False, pipe) is False
    os.close(read)
    assert wants_json(None, terminal) is False and wants_json(True, terminal) is True
    assert wants_json(None, io.StringIO()) is True  # no descriptor: a machine's buffer


def test_a_text_line_is_one_line_per_event_with_time_level_and_logger(terminal: io.TextIOWrapper) -> None:
    record = logging.LogRecord("vector_gateway.embedder", logging.WARNING, __file__, 1, "model %s slow", ("x",), None)
    line = formatter_for(None, terminal).format(record)
    assert re.fullmatch(r"\d\d:\d\d:\d\d WARNING vector_gateway\.embedder: model x slow", line), line
    assert json.loads(formatter_for(None, io.StringIO()).format(record))["msg"] == "model x slow"


def test_configure_logging_picks_the_format_by_its_stream(terminal: io.TextIOWrapper) -> None:
    root = logging.getLogger()
    kept = list(root.handlers)
    for handler in kept:
        root.removeHandler(handler)
    try:
        configure_logging("INFO", stream=terminal)
        (handler,) = root.handlers
        assert isinstance(handler.formatter, TextFormatter)
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in kept:
            root.addHandler(handler)
