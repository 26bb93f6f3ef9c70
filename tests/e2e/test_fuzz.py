"""Schemathesis fuzzes each service's OpenAPI over HTTP against the real processes: never a 5xx.

The schemas come from the apps themselves (built, not started) so that pytest can parametrize at
collection time; every request goes to the running process. Few examples per operation: the point
is breadth (every operation, odd values) in well under a minute for the three services.
"""

from __future__ import annotations

import pytest
import schemathesis
from chunker_service.main import create_app as chunker_app
from chunker_service.settings import ChunkerSettings
from docling_service.main import create_app as docling_app
from docling_service.settings import DoclingSettings
from hypothesis import HealthCheck, settings
from service_stack import ServiceProcess, ServiceStack
from vector_gateway.main import create_app as gateway_app
from vector_gateway.settings import GatewaySettings

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
FUZZ = settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

docling = schemathesis.openapi.from_dict(docling_app(DoclingSettings()).openapi())
chunker = schemathesis.openapi.from_dict(chunker_app(ChunkerSettings()).openapi())
gateway = schemathesis.openapi.from_dict(gateway_app(GatewaySettings(milvus_uri="unused.db")).openapi())


def no_server_error(case, service: ServiceProcess, stack: ServiceStack) -> None:
    stack.ensure_running()
    response = case.call(base_url=service.url, headers=stack.headers(), timeout=60)
    assert response.status_code < 500, (case.method, case.formatted_path, response.status_code, response.text[:500])


@docling.parametrize()
@FUZZ
def test_docling_never_answers_5xx(case, stack_session: ServiceStack) -> None:
    no_server_error(case, stack_session.docling, stack_session)


@chunker.parametrize()
@FUZZ
def test_chunker_never_answers_5xx(case, stack_session: ServiceStack) -> None:
    no_server_error(case, stack_session.chunker, stack_session)


@gateway.parametrize()
@FUZZ
def test_gateway_never_answers_5xx(case, stack_session: ServiceStack) -> None:
    no_server_error(case, stack_session.gateway, stack_session)
