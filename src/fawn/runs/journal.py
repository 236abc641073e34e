"""RunJournal: the durable record of what a run did, beside its stream.

The stream is a bounded, expiring view; the journal is kept with the run record: when it
started and ended, with what outcome and usage, each tool call with its result status and
duration, warnings (a model option the model ignores), errors. It is collected in memory and
written in the run's finalization transaction, so a rolled-back run takes it along.

Sub-agents report through LangChain custom callback events named ``fawn.subagent`` (the
``task`` tool dispatches them; see ``fawn.agent.subagents.task_tool``): each becomes a
journal entry of its ``kind`` (``subagent_started``, ``subagent_step``,
``subagent_finished``), collected with the rest and written in the same one transaction,
and a finished sub-agent's tokens go to the usage ledger apart from the lead's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, UsageMetadataCallbackHandler
from langgraph.errors import GraphBubbleUp

from fawn.runs.clock import Clock
from fawn.store.runs import RunEventEntry, Usage

#: The custom callback event sub-agents report through (``fawn.agent``'s ``task`` tool).
SUBAGENT_EVENT = "fawn.subagent"
_SUBAGENT_KINDS = frozenset({"subagent_started", "subagent_step", "subagent_finished"})


class RunJournal(BaseCallbackHandler):
    """Journal entries of one run; also a LangChain callback handler for tool activity."""

    run_inline = True  # appends only: no need for an executor hop per callback
    # Only tool events are journalled ("agent" events include them): skip the rest, which
    # LangChain would otherwise dispatch here for every graph step and model call.
    ignore_chain = True
    ignore_llm = True
    ignore_chat_model = True
    ignore_retriever = True
    ignore_retry = True

    def __init__(self, clock: Clock) -> None:
        self.entries: list[RunEventEntry] = []
        self._clock = clock
        self._tools: dict[UUID, tuple[str, float]] = {}
        self._started = clock.monotonic()

    def note(self, kind: str, data: dict[str, Any], at: datetime | None = None) -> None:
        self.entries.append(RunEventEntry(kind=kind, data=data, created_at=at or self._clock.now()))

    @property
    def elapsed_ms(self) -> int:
        return round((self._clock.monotonic() - self._started) * 1000)

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        self._tools[run_id] = (name, self._clock.monotonic())
        self.note("tool_started", {"tool": name})

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._tool_done(run_id, "success", None)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if isinstance(error, GraphBubbleUp):  # paused (an interrupt), not failed
            self._tool_done(run_id, "interrupted", None)
        else:
            self._tool_done(run_id, "error", f"{type(error).__name__}: {error}")

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if name != SUBAGENT_EVENT or not isinstance(data, dict):
            return
        kind = data.get("kind")
        if kind in _SUBAGENT_KINDS:
            self.note(str(kind), {k: v for k, v in data.items() if k != "kind"})

    def _tool_done(self, run_id: UUID, status: str, error: str | None) -> None:
        now = self._clock.monotonic()
        name, started = self._tools.pop(run_id, ("tool", now))
        data: dict[str, Any] = {
            "tool": name,
            "status": status,
            "duration_ms": round((now - started) * 1000),
        }
        if error is not None:
            data["error"] = error[:2000]
        self.note("tool_finished", data)


class UsageLedger(UsageMetadataCallbackHandler):
    """Token usage of one run, per model (LangChain's handler, told to skip the chain, tool
    and retriever events it never reads), plus its sub-agents' (reported when each ends)."""

    run_inline = True
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True

    def __init__(self) -> None:
        super().__init__()
        self._subagents = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if name != SUBAGENT_EVENT or not isinstance(data, dict):
            return
        usage = data.get("usage")
        if data.get("kind") != "subagent_finished" or not isinstance(usage, dict):
            return
        for key in self._subagents:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                self._subagents[key] += value

    def lead_totals(self) -> Usage:
        """The lead agent's own tokens, summed over every model it called."""
        totals = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        for meta in self.usage_metadata.values():
            for key in totals:
                totals[key] += int(meta.get(key, 0) or 0)  # type: ignore[call-overload]
        return _usage(totals)

    def subagent_totals(self) -> Usage:
        """The tokens of the run's sub-agents."""
        return _usage(self._subagents)

    def totals(self) -> Usage:
        """The run's tokens: the lead's and its sub-agents'."""
        lead, sub = self.lead_totals(), self.subagent_totals()
        return Usage(
            prompt_tokens=lead.prompt_tokens + sub.prompt_tokens,
            completion_tokens=lead.completion_tokens + sub.completion_tokens,
            total_tokens=lead.total_tokens + sub.total_tokens,
        )


def _usage(totals: dict[str, int]) -> Usage:
    return Usage(
        prompt_tokens=totals["input_tokens"],
        completion_tokens=totals["output_tokens"],
        total_tokens=totals["total_tokens"],
    )
