"""LangGraph API routes fawn does not implement: a 404 that says so, instead of a bare one."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from fawn.gateway.errors import error_body
from fawn.gateway.responses import JSON

router = APIRouter(tags=["unsupported"], include_in_schema=False)

_WHAT = {
    "crons": "crons are not implemented",
    "store": "the store API is not implemented",
}


def _refuse(key: str) -> Response:
    return JSON(
        error_body(f"not supported by fawn: {_WHAT[key]}", "not_supported"), status_code=404
    )


@router.api_route("/runs/crons{rest:path}", methods=["GET", "POST", "PATCH", "DELETE"])
@router.api_route("/threads/{thread_id}/runs/crons{rest:path}", methods=["POST"])
async def crons(request: Request) -> Response:
    return _refuse("crons")


@router.api_route("/store/{rest:path}", methods=["GET", "POST", "PUT", "DELETE"])
async def store(request: Request) -> Response:
    return _refuse("store")
