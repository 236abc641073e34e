"""Health and server information."""

from __future__ import annotations

from importlib.metadata import version

from fastapi import APIRouter, Response

from fawn.gateway.responses import JSON

router = APIRouter(tags=["system"])


@router.get("/ok")
async def ok() -> Response:
    return JSON({"ok": True})


@router.get("/info")
async def info() -> Response:
    return JSON(
        {
            "version": version("fawn"),
            "langgraph_py_version": version("langgraph"),
            "flags": {"assistants": True, "crons": False, "langsmith": False},
        }
    )
