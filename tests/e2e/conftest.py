"""The three services as real processes (scripts/service_stack.py), shared by the fault, concurrency,
durability, auth and observability tests. Tests that stop a service bring it back; a test that
fails half-way is covered by ``stack.ensure_running()`` before the next one."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).parent))  # journeys.py: the user-journey helpers

from service_stack import ServiceStack  # noqa: E402

# Distinctive, so a leak into any log or answer is found by a plain substring search.
STACK_TOKEN = "e2e-stack-token-" + uuid.uuid4().hex


@pytest.fixture(scope="session")
def stack_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceStack]:
    with ServiceStack(tmp_path_factory.mktemp("stack"), auth_token=STACK_TOKEN) as stack:
        yield stack
    assert STACK_TOKEN not in stack.logs(), "the token leaked into a service log"


@pytest.fixture
def stack(stack_session: ServiceStack) -> ServiceStack:
    stack_session.ensure_running()
    return stack_session


@pytest.fixture
def collection() -> str:
    return "t_" + uuid.uuid4().hex[:10]
