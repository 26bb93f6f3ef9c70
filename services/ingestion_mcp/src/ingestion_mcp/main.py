"""Entry point: `ingestion-mcp [--transport stdio|streamable-http] [--host H] [--port P]`.

Light on purpose: it reads the settings and, on stdio, starts answering `initialize` (handshake.py) before it
imports the MCP SDK, the tools and the services (serving.py), which take seconds (issue 49: answered within a
second of the process start; the services and the model load after, and a call that needs them waits).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .handshake import EarlyStdio
    from .settings import McpSettings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ingestion-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], help="default: stdio")
    parser.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default 8000)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    from servicekit import configure_allocators
    from servicekit.settings import settings_or_exit

    # Before anything imports pyarrow or starts threads: memory an idle trim can give back (docs/memory.md).
    configure_allocators()
    args = parse_args(argv)
    overrides = {k: v for k, v in vars(args).items() if v is not None}
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # The ready message says when the model is loaded; a progress bar and gRPC's own log (Milvus Lite's
    # keepalive chatter) would only bury it. Set either variable to see them.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    from .settings import McpSettings

    settings = settings_or_exit(McpSettings, "ingestion-mcp", **overrides)
    early = None
    if settings.transport == "stdio":  # the wire is taken now: `initialize` is answered while the rest loads
        from .handshake import EarlyStdio

        early = EarlyStdio(list(settings.profiles))
    run(settings, early)


def run(settings: McpSettings, early: EarlyStdio | None) -> None:
    """Load the server and serve; a configuration the tool set or the policy refuses exits with code 2."""
    import anyio
    from servicekit import configure_idle_trim, configure_logging

    from .access import audit
    from .access.auth import OAuthGate
    from .access.policy import PolicyError
    from .server import ProfileClash
    from .serving import serve

    configure_logging(settings.log_level, json_logs=settings.json_logs)
    configure_idle_trim(settings.idle_trim_s)
    audit.configure(settings.audit_log)  # its own sink: on at any log level
    try:
        if settings.auth_mode == "oauth":  # a bad policy file is a configuration error
            OAuthGate.from_settings(settings)
        anyio.run(serve, settings, early)  # the tool set is built first: a profile clash ends it at once
    except (ProfileClash, PolicyError) as exc:
        print(f"ingestion-mcp: invalid configuration: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
