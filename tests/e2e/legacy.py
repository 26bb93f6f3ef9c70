"""The documents of the 0.2 index fixture (tests/fixtures/legacy-index), at the absolute path it recorded."""

from __future__ import annotations

from pathlib import Path

LEGACY_DOCS = Path("/tmp/ingestion-mcp-legacy/docs")
DOCS = {
    "alpha.md": "# Alpha policy\n\nThe alpha policy requires every harbour lantern to be inspected each spring.\n",
    "plain.md": "# Plain notes\n\nThe copper violin is tuned in winter, when the glacier is quiet.\n",
}


def write_legacy_docs() -> Path:
    LEGACY_DOCS.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (LEGACY_DOCS / name).write_text(text, encoding="utf-8")
    return LEGACY_DOCS
