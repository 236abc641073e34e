"""Helpers for the sandbox tests that run real commands."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from pathlib import Path

from fawn.sandbox import LocalSandboxProvider

ProviderFactory = Callable[..., LocalSandboxProvider]
"""The ``make_provider`` fixture: ``make_provider(**sandbox_settings)``."""


def unique_sleep() -> str:
    """A ``sleep`` command no other process on this machine is running."""
    return f"sleep 60.{secrets.randbelow(10**6):06d}"


def processes_running(command: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains ``command``."""
    needle = command.replace(" ", "\0").encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline or command.encode() in cmdline:
            found.append(int(entry.name))
    return found


async def wait_until(condition: Callable[[], object], *, within: float = 5.0) -> None:
    # Polling: the condition is the state of other processes, which no event reports.
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.02)
