"""Sandbox: the thread's execution environment, acquired on the thread's first run.

The provider hands out one sandbox per thread (the same id every time), so acquiring again
on later runs is cheap and re-creates the binding after a server restart. The id is kept in
``state["sandbox"]``; its reducer makes writing the same id a no-op and refuses a different
one, so a thread can never silently switch sandboxes.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

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
        thread_id = run_context(runtime).thread_id
        bound = (state.get("sandbox") or {}).get("sandbox_id")
        current = self._provider.get(bound) if bound is not None else None
        if current is not None and current.paths.thread_id == thread_id:
            return None
        sandbox = await self._provider.acquire(thread_id)
        if sandbox.id == bound:
            return None
        if bound is None:
            return {"sandbox": {"sandbox_id": sandbox.id}}
        # A provider hands out one id per thread, so a different bound id was inherited: a
        # copied or branched thread carries its parent's binding in state. It gets its own
        # sandbox, replacing the inherited id on purpose (the reducer would refuse a silent
        # switch): two threads never share one environment.
        return {"sandbox": Overwrite({"sandbox_id": sandbox.id})}
