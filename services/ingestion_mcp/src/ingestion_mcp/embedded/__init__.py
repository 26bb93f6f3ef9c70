"""The laptop default: the three services in this process (services), one host per data folder that other
processes attach to (link) over a private Unix socket (socket), reached through a streaming in-process ASGI
transport (asgi_stream)."""
