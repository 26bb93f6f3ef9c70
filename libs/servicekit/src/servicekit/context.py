"""Request-scoped context: the request id that follows a call across services."""

from contextvars import ContextVar

REQUEST_ID_HEADER = "X-Request-ID"
request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)
# Where the middleware also leaves the id: handlers that run outside it (the 500 handler) read it there.
REQUEST_ID_SCOPE_KEY = "servicekit.request_id"
