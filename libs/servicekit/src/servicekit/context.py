"""Request-scoped context: the request id that follows a call across services."""

from contextvars import ContextVar

REQUEST_ID_HEADER = "X-Request-ID"
request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)
