"""The conversation page: ``GET /`` and its assets under ``/_ui/`` (static files of `fawn.web`).

Nothing here knows what the page does; it serves files with the headers that keep a page
that renders model output safe: a strict Content-Security-Policy (scripts, styles and
requests only from this origin, no inline script, no framing), ``nosniff`` and no referrer.
"""

from __future__ import annotations

import functools
from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, Response
from starlette.responses import FileResponse

from fawn.runs.errors import NotFound

router = APIRouter(include_in_schema=False)

#: Where the page's assets live; a prefix no API route uses.
ASSET_PREFIX = "/_ui"

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' blob: data:",
        "connect-src 'self'",
        "font-src 'self'",
        "manifest-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)

_SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-cache",
}

_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}


@functools.cache
def _static_root() -> Path:
    return Path(str(files("fawn.web").joinpath("static"))).resolve()


def _serve(root: Path, relative: str) -> Response:
    target = (root / relative).resolve()
    media_type = _MEDIA_TYPES.get(target.suffix)
    if media_type is None or not target.is_relative_to(root) or not target.is_file():
        raise NotFound(f"no page asset at {ASSET_PREFIX}/{relative}")
    return FileResponse(target, media_type=media_type, headers=_SECURITY_HEADERS)


@router.get("/")
async def page() -> Response:
    return _serve(_static_root(), "index.html")


@router.get(ASSET_PREFIX + "/{path:path}")
async def asset(path: str) -> Response:
    return _serve(_static_root(), path)
