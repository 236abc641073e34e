"""RunContext: the per-run values middleware and tools read from ``runtime.context``.

Server-owned fields (thread, run, user) are set by the run worker, never by the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ReasoningEffort = Literal["minimal", "low", "medium", "high"]


@dataclass(frozen=True, kw_only=True)
class RunContext:
    thread_id: str
    run_id: str
    user_id: str | None = None
    model_name: str | None = None
    thinking_enabled: bool = False
    reasoning_effort: ReasoningEffort | None = None
    is_plan_mode: bool = False
    subagent_enabled: bool = False
    max_concurrent_subagents: int = 3
    agent_name: str | None = None
