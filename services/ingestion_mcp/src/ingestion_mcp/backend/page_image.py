"""A page image as the gateway answers it (GET .../pages/{page}/image): the bytes and what its headers say."""

from __future__ import annotations

from dataclasses import dataclass

import httpx


def _numbers(value: str) -> list[float]:
    try:
        return [float(part) for part in value.split(",") if part.strip()]
    except ValueError:
        return []


@dataclass(frozen=True)
class PageImage:
    data: bytes
    media_type: str
    page_size: tuple[float, float] | None  # points (an image's pixels)
    marked: int  # boxes of the passage drawn on this page
    cited: int  # ... of them, the lines of the sentences cited for the query (drawn apart)
    cited_box: list[float] | None  # x0, top, x1, bottom around those lines, in points
    passage_pages: list[int]  # pages the passage has boxes on
    render_ms: float

    @classmethod
    def from_response(cls, response: httpx.Response) -> PageImage:
        size = _numbers(response.headers.get("x-page-size", ""))
        return cls(
            data=response.content,
            media_type=response.headers.get("content-type", "image/png").split(";")[0],
            page_size=(size[0], size[1]) if len(size) == 2 else None,
            marked=int(response.headers.get("x-marked") or 0),
            cited=int(response.headers.get("x-cited") or 0),
            cited_box=_numbers(response.headers.get("x-cited-box", "")) or None,
            passage_pages=[int(p) for p in _numbers(response.headers.get("x-passage-pages", ""))],
            render_ms=float(response.headers.get("x-render-ms") or 0.0),
        )
