"""RunJournal: the durable record of what a run did, beside its stream.

The stream is a bounded, expiring view; the journal is kept with the run record: when it
started and ended, with what outcome and usage, each tool call with its result status and
duration, warnings (a model option the model ignores), errors. It is collected in memory and
written in the run's finalization transaction, so a rolled-back run takes it along.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, UsageMetadataCallbackHandler
from langgraph.errors import GraphBubbleUp

from fawn.runs.clock import Clock
from fawn.store.runs import RunEventEntry, Usage


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
    ignore_custom_event = True

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
        if isinstance(error, GraphBubbleUp):  # ask_clarification: paused, not failed
            self._tool_done(run_id, "interrupted", None)
        else:
            self._tool_done(run_id, "error", f"{type(error).__name__}: {error}")

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
    and retriever events it never reads)."""

    run_inline = True
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def totals(self) -> Usage:
        """The run's tokens, summed over every model it called."""
        totals = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        for meta in self.usage_metadata.values():
            for key in totals:
                totals[key] += int(meta.get(key, 0) or 0)  # type: ignore[call-overload]
        return Usage(
            prompt_tokens=totals["input_tokens"],
            completion_tokens=totals["output_tokens"],
            total_tokens=totals["total_tokens"],
        )
