"""Thread data: the thread's ``/mnt/user-data`` directories in state, as the agent sees
them (virtual paths: state is sent to clients, and host paths are the server's business).

The sandbox provider owns the thread's file layout, so the paths come from the thread's
sandbox (acquired by the sandbox middleware just before), not from a second computation
that could disagree with it. State is written only when the paths change.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import thread_sandbox
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import ThreadState
from fawn.sandbox.base import SandboxProvider


class ThreadDataMiddleware(ChainMiddleware):
    placement = Placement(name="thread_data", stage=Stage.RESOURCES, after=frozenset({"sandbox"}))

    def __init__(self, provider: SandboxProvider) -> None:
        super().__init__()
        self._provider = provider

    async def abefore_agent(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        sandbox = await thread_sandbox(self._provider, state, runtime)
        paths = sandbox.paths.as_state()
        if state.get("thread_data") == paths:
            return None
        return {"thread_data": paths}
