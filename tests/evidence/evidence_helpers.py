"""Helpers for the evidence tests: scripted file work, the thread's host files, the
changes route."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import Any

import httpx

from tests.support.live import LiveServer

WS = "/mnt/user-data/workspace"
OUT = "/mnt/user-data/outputs"


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def write(path: str, content: str) -> dict[str, Any]:
    return call("write_file", description="write", path=path, content=content)


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return call("str_replace", description="edit", path=path, old_str=old, new_str=new)


def read(path: str) -> dict[str, Any]:
    return call("read_file", description="read", path=path)


def bash(command: str) -> dict[str, Any]:
    return call("bash", description="run", command=command)


def present(*paths: str) -> dict[str, Any]:
    return call("present_files", filepaths=list(paths))


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def user_data(server: LiveServer, tid: str) -> Path:
    root = server.data_dir / "threads" / tid / "user-data"
    for part in ("workspace", "outputs", "uploads"):
        (root / part).mkdir(parents=True, exist_ok=True)
    return root


async def changes(server: LiveServer, tid: str, rid: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        return await http.get(f"/api/threads/{tid}/runs/{rid}/changes")


async def events(server: LiveServer, tid: str, rid: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        response = await http.get(f"/api/threads/{tid}/runs/{rid}/events")
    assert response.status_code == 200, response.text
    return list(response.json()["events"])


def tree_digest(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``root``: (kind, sha256 of content, link target or mode)."""
    found: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = ("dir", oct(st.st_mode & 0o7777))
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[rel] = (digest, oct(st.st_mode & 0o7777))
    return found


async def wait_until(predicate: Any, what: str, seconds: float = 30.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never happened: {what}")
