"""The ASGI middleware in front of the streamable HTTP app: the front door (front_door.py: health, Origin, bearer
token or OAuth caller, body size), the JSON-RPC parse guard (jsonrpc_errors.py) and the cancel relay for
2025-11-25 clients (cancel_relay.py)."""
