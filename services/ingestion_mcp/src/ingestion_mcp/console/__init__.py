"""The operator console (docs/console.md): server-rendered pages over the same app state the tools use."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..access.auth import OAuthGate
from ..state import AppState
from .activity import ActivityPages
from .pages import LibraryPages
from .render import HERE, handled, page, see_other, visitor, write_form
from .session import ConsoleGate, cookie_header

PREFIXES = ("/collections", "/jobs", "/search", "/ingest", "/login", "/logout")
STATIC = "/static/"


def serves(path: str) -> bool:
    """The paths the console answers; /mcp, /healthz, /readyz, /metrics and /queue stay the server's."""
    return path == "/" or path.startswith(STATIC) or any(path == p or path.startswith(p + "/") for p in PREFIXES)


def build_console(
    state: AppState, *, oauth: OAuthGate | None, origin_allowed: Callable[[str], bool], max_body: int
) -> ConsoleGate:
    library, activity = LibraryPages(state), ActivityPages(state)
    routes = [
        Route("/", library.collections),
        Route("/collections/{name}", library.collection),
        Route("/collections/{name}/delete", library.delete_collection, methods=["POST"]),
        Route("/collections/{name}/documents", library.documents),
        Route("/collections/{name}/documents/{doc_id}", library.document),
        Route("/collections/{name}/documents/{doc_id}/delete", library.delete_document, methods=["POST"]),
        Route("/collections/{name}/documents/{doc_id}/pages/{page:int}", library.page_view),
        Route("/collections/{name}/documents/{doc_id}/pages/{page:int}/image", library.page_image),
        Route("/jobs", activity.jobs),
        Route("/jobs/table", activity.jobs_table),
        Route("/jobs/recent", activity.recent_jobs),
        Route("/jobs/{job_id}", activity.job),
        Route("/jobs/{job_id}/panel", activity.job_panel),
        Route("/jobs/{job_id}/cancel", activity.cancel, methods=["POST"]),
        Route("/search", activity.search),
        Route("/ingest", activity.ingest_form),
        Route("/ingest", activity.ingest, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes)
    gate = ConsoleGate(app, state.settings, oauth=oauth, origin_allowed=origin_allowed, max_body=max_body)
    app.router.routes += [
        Route("/login", partial(login_form, gate=gate)),
        Route("/login", partial(login, gate=gate), methods=["POST"]),
        Route("/logout", handled(partial(logout, gate=gate)), methods=["POST"]),
    ]
    return gate


def safe_next(target: str | None) -> str:
    """Only a path on this server (never //host or a scheme): no open redirect after login."""
    return target if target and target.startswith("/") and not target.startswith("//") else "/"


async def login_form(request: Request, gate: ConsoleGate) -> Response:
    if gate.mode == "none" or visitor(request).caller is not None:
        return see_other(safe_next(request.query_params.get("next")))
    return page(request, "login.html", mode=gate.mode, error=None)


async def login(request: Request, gate: ConsoleGate) -> Response:
    """Exchange the token typed in for a session cookie (the token is checked as the MCP endpoint checks it)."""
    form = await request.form(max_files=0, max_fields=5)
    token, target = str(form.get("token") or "").strip(), safe_next(request.query_params.get("next"))
    session, problem = await gate.login(token) if token else (None, "Enter a token.")
    if session is None:
        return page(request, "login.html", 401, mode=gate.mode, error=problem)
    response = see_other(target)
    value = gate.sessions.sign(session)
    response.headers.append("set-cookie", cookie_header(value, secure=visitor(request).secure,
                                                        max_age=gate.sessions.lifetime_s).decode())  # fmt: skip
    return response


async def logout(request: Request, gate: ConsoleGate) -> Response:
    await write_form(request)
    response = see_other("/login" if gate.mode != "none" else "/")
    response.headers.append("set-cookie", cookie_header("", secure=visitor(request).secure, max_age=0).decode())
    return response
