"""RunContext: the per-run values middleware and tools read from ``runtime.context``.

Server-owned fields (thread, run, user) are set by the run worker, never by the client.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

ReasoningEffort = Literal["minimal", "low", "medium", "high"]


@dataclass(frozen=True, kw_only=True)
class AgentOptions:
    """What a request may choose for its run (validated at admission)."""

    model_name: str | None = None
    thinking_enabled: bool = False
    reasoning_effort: ReasoningEffort | None = None
    is_plan_mode: bool = False
    subagent_enabled: bool = False
    max_concurrent_subagents: int = 3
    agent_name: str | None = None

    def context(
        self,
        *,
        thread_id: str,
        run_id: str,
        user_id: str | None,
        allowed_tools: frozenset[str] | None = None,
    ) -> RunContext:
        options = {f.name: getattr(self, f.name) for f in fields(AgentOptions)}
        return RunContext(
            thread_id=thread_id,
            run_id=run_id,
            user_id=user_id,
            allowed_tools=allowed_tools,
            **options,
        )


@dataclass(kw_only=True)
class TokenMeter:
    """Tokens a run has used so far, its sub-agents' included (they share the meter)."""

    used: int = 0

    def add(self, tokens: int) -> int:
        self.used += max(0, tokens)
        return self.used


@dataclass(frozen=True, kw_only=True)
class RunContext(AgentOptions):
    """The options plus the identity the server sets: thread, run and user."""

    thread_id: str
    run_id: str
    user_id: str | None = None
    #: the tools the user's role may use (None: all); the tool policy middleware enforces it
    allowed_tools: frozenset[str] | None = None
    #: warnings for the run's journal (the worker records them when the run ends)
    notes: list[str] = field(default_factory=list, compare=False)
    #: the run's token use, shared with its sub-agents (the token budget reads it)
    tokens: TokenMeter = field(default_factory=TokenMeter, compare=False)
    #: set on a sub-agent's context: the ``task`` call it works for
    subagent_task_id: str | None = None
