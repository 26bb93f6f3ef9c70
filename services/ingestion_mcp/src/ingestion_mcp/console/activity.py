"""The work pages: jobs (live), search (three modes side by side) and ingest (upload or URL)."""

from __future__ import annotations

import base64
import functools
from collections.abc import Awaitable, Callable
from pathlib import PurePosixPath
from typing import Any, get_args

import anyio
from ingestion_contracts.gateway import SearchMode, SearchRequest
from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response

from ..errors import ToolFailure
from ..ingest.acquire import file_type_of
from ..state import AppState
from .render import Refused, handled, page, see_other, write_form

MODES: tuple[str, ...] = get_args(SearchMode)  # hybrid, semantic, keyword
RECENT_SHOWN = 50  # ended jobs on the jobs page


def not_found(job_id: str, retention_s: float) -> ToolFailure:
    return ToolFailure(
        f"No job '{job_id}' (unknown, or finished more than {retention_s:.0f} s ago).",
        "The jobs page lists the running ones and those that ended since.",
        code="JOB_NOT_FOUND",
        status=404,
    )


def parse_filters(text: str) -> dict[str, str | int | float | bool]:
    """`page=3; file_type=pdf` -> {"page": 3, "file_type": "pdf"} (numbers and true/false typed)."""
    filters: dict[str, str | int | float | bool] = {}
    for part in text.replace("\n", ";").split(";"):
        key, sep, raw = part.partition("=")
        if not part.strip():
            continue
        if not sep or not key.strip():
            raise Refused(f"Filter {part.strip()!r} is not key=value.", "Write filters as key=value; key=value.",
                          code="INVALID_INPUT", status=400)  # fmt: skip
        value = raw.strip()
        filters[key.strip()] = (
            value.lower() == "true" if value.lower() in ("true", "false")
            else int(value) if value.lstrip("-").isdigit()
            else value
        )  # fmt: skip
    return filters


def words(text: str) -> list[str]:
    return [word.strip() for word in text.split(",") if word.strip()]


class ActivityPages:
    def __init__(self, state: AppState) -> None:
        self.state = state

    # -- jobs ---------------------------------------------------------------------------------
    @handled
    async def jobs(self, request: Request) -> Response:
        """The caller's running jobs, then those that ended (still kept); both tables poll themselves."""
        running, recent = await self.state.own_active_jobs(), await self.state.own_recent_jobs(RECENT_SHOWN)
        return page(request, "jobs.html", jobs=running, recent=recent, retention=self._retention())

    @handled
    async def jobs_table(self, request: Request) -> Response:
        return page(request, "_jobs.html", jobs=await self.state.own_active_jobs())

    @handled
    async def recent_jobs(self, request: Request) -> Response:
        recent = await self.state.own_recent_jobs(RECENT_SHOWN)
        return page(request, "_recent_jobs.html", recent=recent, retention=self._retention())

    def _retention(self) -> str:
        seconds = self.state.jobs.retention_s
        return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"

    async def _job(self, job_id: str) -> Any:
        job = await self.state.own_job(job_id)  # another caller's job answers as unknown
        if job is None:
            raise not_found(job_id, self.state.settings.job_retention_s)
        return job

    @handled
    async def job(self, request: Request) -> Response:
        return page(request, "job.html", job=await self._job(request.path_params["job_id"]))

    @handled
    async def job_panel(self, request: Request) -> Response:
        return page(request, "_job.html", job=await self._job(request.path_params["job_id"]))

    @handled
    async def cancel(self, request: Request) -> Response:
        """Cancel one of the caller's jobs (AppState.cancel_job, as the cancel_job tool: audited)."""
        form = await write_form(request)
        job_id = request.path_params["job_id"]
        job = await self.state.cancel_job(job_id, "cancelled in the console", wait_s=0)
        if job is None:
            raise not_found(job_id, self.state.settings.job_retention_s)
        back = form.get("back")
        return see_other("/jobs" if back == "jobs" else f"/jobs/{job.id}")

    # -- search -------------------------------------------------------------------------------
    @handled
    async def search(self, request: Request) -> Response:
        """The query in each mode asked for (all three side by side by default), through the library facade."""
        params = request.query_params
        form = {name: params.get(name, "") for name in ("q", "collection", "mode", "filters", "tags", "min_score",
                                                          "top_k")}  # fmt: skip
        modes = ([form["mode"]] if form["mode"] in MODES else list(MODES)) if form["q"].strip() else []
        requests = {mode: self._request(form, mode) for mode in modes}  # a bad field is refused before any search
        found: dict[str, Any] = {}

        async def run(name: str, call: Callable[[], Awaitable[Any]]) -> None:
            try:
                found[name] = await call()
            except Exception as exc:  # noqa: BLE001 - raised below as itself, not inside an exception group
                found[name] = exc

        # The listing and each mode's search at once: the gateway embeds one while Milvus answers another.
        async with anyio.create_task_group() as group:
            group.start_soon(run, "", self.state.library.collections)
            for mode, search in requests.items():
                group.start_soon(run, mode, functools.partial(self.state.library.search, search))
        if failed := next((value for value in found.values() if isinstance(value, Exception)), None):
            raise failed
        results = {mode: found[mode] for mode in modes} if modes else None
        return page(request, "search.html", form=form, collections=found[""], results=results, modes=MODES)

    @staticmethod
    def _request(form: dict[str, str], mode: str) -> SearchRequest:
        try:
            request = SearchRequest(
                query=form["q"].strip(), collections=[form["collection"]] if form["collection"] else None,
                mode=mode,  # type: ignore[arg-type]  # one of MODES
                top_k=int(form["top_k"] or 10), filters=parse_filters(form["filters"]), tags=words(form["tags"]),
                min_score=float(form["min_score"]) if form["min_score"] else None,
            )  # fmt: skip
        except (ValidationError, ValueError) as exc:
            problem = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise Refused(f"The search cannot run: {problem}.", "Correct the field and search again.",
                          code="INVALID_INPUT", status=400) from None  # fmt: skip
        return request

    # -- ingest -------------------------------------------------------------------------------
    @handled
    async def ingest_form(self, request: Request) -> Response:
        return page(request, "ingest.html", default=self.state.settings.default_collection, error=None,
                    collections=await self.state.library.collections())  # fmt: skip

    @handled
    async def ingest(self, request: Request) -> Response:
        """Submit an upload or a URL as a job of the same kinds the tools submit; then follow it."""
        form = await write_form(request)
        try:
            collection = self.state.collection(str(form.get("collection") or "").strip() or None)
            tags = words(str(form.get("tags") or "")) or None
            common: dict[str, Any] = {"collection": collection, "source": None, "tags": tags, "chunking": "default",
                                      "metadata": None, "force": bool(form.get("force"))}  # fmt: skip
            upload, url = form.get("file"), str(form.get("url") or "").strip()
            if isinstance(upload, UploadFile) and upload.filename:
                job = await self._upload(upload, common)
            elif url:
                job = await self.state.submit_job("ingest_from_url", {"url": url, **common}, url)
            else:
                raise Refused("Nothing to ingest.", "Choose a file or give a URL.", code="INVALID_INPUT", status=400)
        except ToolFailure as exc:
            return page(request, "ingest.html", exc.status if exc.status and exc.status >= 400 else 400,
                        default=self.state.settings.default_collection, error=exc,
                        collections=await self.state.library.collections())  # fmt: skip
        finally:
            await form.close()
        return see_other(f"/jobs/{job.id}")

    async def _upload(self, upload: UploadFile, common: dict[str, Any]) -> Any:
        """The file's bytes travel in the job (any worker runs it), under the same cap as ingest_text's text."""
        name = PurePosixPath((upload.filename or "").replace("\\", "/")).name
        file_type_of(name)  # an unsupported type is refused now, with the tools' message
        limit = self.state.settings.max_payload_bytes
        data = await upload.read(limit + 1)
        if len(data) > limit:
            raise Refused(
                f"File too large (over {self.state.settings.max_payload_mb} MiB). The limit on what a call carries "
                f"is {self.state.settings.max_payload_mb} MiB (INGESTION_MCP_MAX_PAYLOAD_MB).",
                "Put the file under an allowed folder and ingest it by path (ingest_document), or raise the limit.",
                code="FILE_TOO_LARGE", status=413,
            )  # fmt: skip
        params = {"data_b64": base64.b64encode(data).decode(), "file_name": name, **common}
        return await self.state.submit_job("ingest_upload", params, name)
