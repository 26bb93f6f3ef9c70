"""Nothing leaves the machine unless the user asked (a URL or git ingest): the telemetry switches of the
dependencies, set before any of them is imported.

Each package of the project (ingestion_mcp, vector_gateway, docling_service, chunker_service) calls ``keep_local()``
first thing in its ``__init__``, so the switches hold in every process: the server, the embedded services, the docling
workers it spawns (they inherit the environment) and the commands. A value the user set is kept: setting one to
another value is asking for it. docs/privacy.md lists what each switch stops and how it was checked.
"""

from __future__ import annotations

import os

# variable: value that keeps the dependency local.
SWITCHES = {
    # ONNX Runtime (1.32 on Linux) otherwise writes ~/.cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,
    # onnxruntime.db} and a .ses file in the temp folder, and looks up mobile.events.data.microsoft.com to send them.
    "ORT_DISABLE_TELEMETRY": "1",
    # huggingface_hub (docling's dependency): no usage pings and no download; the models ship in the packages.
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_OFFLINE": "1",
    # The cross-tool convention (consoledonottrack.com) for any other dependency that honours it.
    "DO_NOT_TRACK": "1",
}


def keep_local() -> None:
    for name, value in SWITCHES.items():
        os.environ.setdefault(name, value)
