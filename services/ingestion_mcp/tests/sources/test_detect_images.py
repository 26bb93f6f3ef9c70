"""Images that docling reads with OCR come in by URL too, named so docling knows what they are."""

from __future__ import annotations

import io

import pytest
from ingestion_mcp.ingest.acquire import from_fetched
from ingestion_mcp.sources import FetchedResource, SourceError, detect_kind
from PIL import Image


def image_bytes(fmt: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(out, format=fmt)
    return out.getvalue()


@pytest.mark.parametrize(("fmt", "extension"), [("PNG", ".png"), ("JPEG", ".jpg"), ("TIFF", ".tiff")])
def test_png_jpeg_tiff_are_images_and_keep_an_image_name(fmt: str, extension: str) -> None:
    data = image_bytes(fmt)
    assert detect_kind(data, "application/octet-stream", "scan") == "image"
    fetched = FetchedResource(url="https://example.com/scan", final_url="https://example.com/scan", status=200,
                              content_type="image/x", data=data, filename="scan", kind="image")  # fmt: skip
    acquired = from_fetched(fetched)
    assert acquired.name == f"scan{extension}" and acquired.data == data and acquired.markdown is None


def test_gif_is_still_refused_with_the_reason() -> None:
    with pytest.raises(SourceError) as caught:
        detect_kind(b"GIF89a" + b"\x00" * 32)
    assert "GIF" in caught.value.message
