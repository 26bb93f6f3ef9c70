"""Templates, the page answer, the write check and the error page every console route shares."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from servicekit import request_id_var
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..errors import ToolFailure
from ..observability import new_request_id, tool_var
from .cited import as_param, pieces
from .session import Visitor

log = logging.getLogger("ingestion_mcp.console")
HERE = Path(__file__).parent
# Autoescape on for everything: a document's text, a title, an error message are always shown as text.
TEMPLATES = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined)
TEMPLATES.filters.update(pieces=pieces, cited_param=as_param)  # a search's cited sentences (cited.py)
Endpoint = Callable[..., Awaitable[Response]]  # (request) or, on a pages class, (self, request)


class Refused(ToolFailure):
    """A console request refused before any work (a missing CSRF token, a bad form)."""


def visitor(request: Request) -> Visitor:
    found: Visitor = request.state.visitor
    return found


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A page (or, for htmx, a fragment) with what every template needs: the CSRF token, the session."""
    who = visitor(request)
    html = TEMPLATES.get_template(template).render(
        csrf=who.csrf or "", logged_in=who.logged_in, subject=who.caller.subject if who.caller else None,
        path=request.url.path, **context,
    )  # fmt: skip
    return HTMLResponse(html, status_code=status)


async def write_form(request: Request) -> FormData:
    """The form of a write (POST), once its CSRF token is checked: the hidden field or the htmx header."""
    form = await request.form(max_files=1, max_fields=50)
    submitted = request.headers.get("x-csrf-token") or form.get("csrf_token")
    if not visitor(request).csrf_ok(submitted if isinstance(submitted, str) else None):
        await form.close()
        raise Refused(
            "This form has expired or did not come from this console (no valid CSRF token).",
            "Reload the page and try again.",
            code="CSRF_FAILED",
            status=403,
        )
    return form


def see_other(url: str, request: Request | None = None) -> Response:
    """303 to the next page; for an htmx request, htmx's own redirect header (it would swap a followed one)."""
    if request is not None and request.headers.get("hx-request"):
        return Response(status_code=200, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


def endpoint_name(endpoint: Any) -> str:
    """The page function's name, through the functools.partial that binds some of its arguments (/logout)."""
    while isinstance(endpoint, functools.partial):
        endpoint = endpoint.func
    return str(getattr(endpoint, "__name__", "page"))


def handled(endpoint: Endpoint) -> Endpoint:
    """Errors become the error page: the tools' message and suggestion, never a traceback or a path."""

    @functools.wraps(endpoint)
    async def answer(*args: Any) -> Response:
        request: Request = args[-1]
        # What the audit records name as the tool, and the id that follows the page's calls into every service.
        tool_var.set(f"console.{endpoint_name(endpoint)}")
        request_id_var.set(request_id_var.get() or new_request_id())
        try:
            return await endpoint(*args)
        except ToolFailure as exc:
            status = exc.status if exc.status and 400 <= exc.status < 600 else 400
            return page(request, "error.html", status, message=exc.message, suggestion=exc.suggestion,
                        code=exc.code)  # fmt: skip
        except Exception:
            log.exception("console page %s failed", request.url.path)
            suggestion = "Try again; if it persists, the server log has the details."
            return page(request, "error.html", 500, message="Something went wrong on the server.",
                        suggestion=suggestion, code="INTERNAL_ERROR")  # fmt: skip

    return answer
