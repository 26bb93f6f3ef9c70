"""ResponseBudget.trim shortens the answer itself: it once took a list and popped it, and a model built
from a list keeps its own copy, so the answer went out as long as before."""

from __future__ import annotations

import pytest
from ingestion_mcp.library import ResponseBudget
from pydantic import BaseModel


class Answer(BaseModel):
    results: list[str]
    note: str = ""


def test_trim_shortens_the_models_own_list_until_the_answer_fits() -> None:
    built_from = ["x" * 400 for _ in range(10)]
    answer = Answer(results=built_from)
    assert answer.results is not built_from  # pydantic's copy: the trap trim must not fall into
    assert ResponseBudget(tokens=300).trim(answer, "results")
    assert 1 <= len(answer.results) < 10
    assert len(answer.model_dump_json()) // 4 + 1 <= 300
    assert len(built_from) == 10


def test_trim_keeps_one_item_and_says_when_nothing_was_dropped() -> None:
    answer = Answer(results=["x" * 4000, "y"])
    assert ResponseBudget(tokens=10).trim(answer, "results") and answer.results == ["x" * 4000]
    assert not ResponseBudget(tokens=10_000).trim(answer, "results")


def test_trim_refuses_a_field_that_is_not_a_list() -> None:
    with pytest.raises(TypeError, match=r"Answer\.note is not a list"):
        ResponseBudget(tokens=10).trim(Answer(results=[]), "note")
