"""The ASGI middleware in front of the streamable HTTP app: the front door (guard.py: health, Origin, bearer
token or OAuth caller, body size), the JSON-RPC parse guard (jsonrpc_guard.py) and the cancel relay for
2025-11-25 clients (cancel_relay.py)."""
