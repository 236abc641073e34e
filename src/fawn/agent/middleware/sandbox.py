"""Sandbox: the thread's execution environment, acquired on the thread's first run.

The provider hands out one sandbox per thread (the same id every time), so acquiring again
on later runs is cheap and re-creates the binding after a server restart. The id is kept in
``state["sandbox"]``; its reducer makes writing the same id a no-op and refuses a different
one, so a thread can never silently switch sandboxes.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import ThreadState
from fawn.sandbox.base import SandboxProvider


class SandboxMiddleware(ChainMiddleware):
    placement = Placement(name="sandbox", stage=Stage.RESOURCES)

    def __init__(self, provider: SandboxProvider) -> None:
        super().__init__()
        self._provider = provider

    async def abefore_agent(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        bound = (state.get("sandbox") or {}).get("sandbox_id")
        if bound is not None and self._provider.get(bound) is not None:
            return None
        sandbox = await self._provider.acquire(run_context(runtime).thread_id)
        if sandbox.id == bound:
            return None
        return {"sandbox": {"sandbox_id": sandbox.id}}
