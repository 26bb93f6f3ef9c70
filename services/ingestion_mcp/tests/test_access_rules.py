"""Deny by default (issue 41): every Backend method has an access rule, and one without a rule is refused.

The guard holds the backend (access/guarded_backend.py); what it has no rule for never reaches the services.
These tests need no service: a method that got through would reach a closed port and fail otherwise than refused.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator

import httpx
import pytest
from ingestion_mcp.access.guarded_backend import RULES, GuardedBackend, NoRule, unruled
from ingestion_mcp.access.policy import Caller, Grant, acting_as
from ingestion_mcp.backend import Backend
from ingestion_mcp.backend.clients import ServiceClient

CLOSED = "http://127.0.0.1:9"  # nothing listens: a call that gets through fails as unreachable, not refused


@pytest.fixture
async def backend() -> AsyncIterator[Backend]:
    def client(name: str) -> ServiceClient:
        return ServiceClient(name, httpx.AsyncClient(base_url=CLOSED), attempts=1)

    made = Backend(docling=client("docling"), chunker=client("chunker"), gateway=client("gateway"))
    yield made
    await made.aclose()


def backend_methods() -> set[str]:
    return {name for name, _ in inspect.getmembers(Backend, callable) if not name.startswith("_")}


def test_every_backend_method_has_a_rule_and_every_rule_a_method() -> None:
    """A Backend method added without a line in access/guarded_backend.py RULES fails here (and is refused)."""
    assert unruled() == [], (
        "add a rule for each in access/guarded_backend.py RULES (docs/profiles.md, 'How to add a tool')"
    )
    assert set(RULES) - backend_methods() == set(), "rules for methods Backend no longer has"
    # The guard's own names never shadow a Backend method (it would answer instead of the rule).
    own = {name for name in vars(GuardedBackend) if not name.startswith("_")}
    assert own & backend_methods() == set()


async def test_a_method_added_without_a_rule_is_refused_and_never_runs(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    async def export_collection(self: Backend, collection: str) -> str:
        ran.append(collection)
        return "every document of " + collection

    monkeypatch.setattr(Backend, "export_collection", export_collection, raising=False)
    assert unruled() == ["export_collection"]  # the enumeration finds it
    guarded = GuardedBackend.over(backend)
    for caller in (Caller.everything(), Caller("carol", (Grant("team-*", "read"),))):
        with acting_as(caller), pytest.raises(NoRule) as refused:
            await guarded.export_collection("team-a")  # type: ignore[attr-defined]  # added above, no rule
        assert refused.value.code == "FORBIDDEN" and "export_collection" in refused.value.message
    assert ran == []
    # Nor do the raw service clients get past the guard.
    with pytest.raises(NoRule):
        guarded.gateway  # noqa: B018 - the attribute access itself is refused
    assert not hasattr(guarded, "docling")


async def test_every_rule_kind_refuses_without_the_right_before_anything_is_sent(backend: Backend) -> None:
    """A reader of team-* is refused a write anywhere and a read elsewhere before the (closed) services are asked;
    calls that name no collection pass (and then meet the closed port)."""
    from ingestion_contracts.gateway import UpsertDocumentRequest
    from ingestion_mcp.errors import ToolFailure, UpstreamError

    guarded = GuardedBackend.over(backend)
    with acting_as(Caller("carol", (Grant("team-*", "read"),))):
        document = UpsertDocumentRequest.model_construct(source="a.md")  # refused before it is read
        for write in (
            guarded.upsert("team-a", document),
            guarded.delete_document("team-a", "doc1"),
            guarded.create_collection("team-b"),
            guarded.vector_add("team-a", None),  # type: ignore[arg-type]  # refused before the request is read
        ):
            with pytest.raises(ToolFailure) as refused:
                await write
            assert refused.value.code == "FORBIDDEN", refused.value
        with pytest.raises(UpstreamError) as unreachable:  # a read of team-a is allowed: it reaches the port
            await guarded.get_document("team-a", "doc1")
        assert unreachable.value.code == "SERVICE_UNAVAILABLE"
        with pytest.raises(UpstreamError) as open_call:
            await guarded.embedding_model()
        assert open_call.value.code == "SERVICE_UNAVAILABLE"
