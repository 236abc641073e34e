"""Compacting a thread's context on request (DeerFlow's ``POST /api/threads/{id}/compact``).

The older messages are replaced by a summary, as the summarization middleware does during a
run once the history passes ``summarization.trigger_tokens``; here the user asks for it.
It needs summarization on (``summarization.enabled``), else it is refused with DeerFlow's
409. The summary is written as the agent's last step, so the thread stays idle; a thread
that is running, or waiting for an answer, is not compacted (the pause would be lost).
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware.summarization import ContextSize

from fawn.agent.middleware.summarization import compact
from fawn.gateway.branches import exit_node
from fawn.gateway.services import Services
from fawn.runs.errors import Conflict, ModelCallFailed

DISABLED = "Context compaction is disabled."


async def compact_context(
    services: Services,
    thread_id: str,
    *,
    model_name: str | None,
    keep: ContextSize | None,
    force: bool,
) -> dict[str, Any]:
    """DeerFlow's ``ThreadCompactResponse`` for compacting ``thread_id`` now."""
    settings = services.config.summarization
    if not settings.enabled:
        raise Conflict(DISABLED)
    record = await services.threads.get(thread_id)
    if record.status == "busy":
        raise Conflict(
            "Thread has a run in flight. Compact after the run finishes.", retryable=True
        )
    snapshot = await services.threads.get_state(thread_id)
    if snapshot.tasks or snapshot.next:
        raise Conflict("The thread waits for an answer. Compact after the run goes on.")
    messages = list((snapshot.values or {}).get("messages") or [])
    read_at = snapshot.config["configurable"].get("checkpoint_id")
    model = services.models.get(model_name)
    try:
        done = await compact(
            messages,
            model,
            keep=keep or ("messages", settings.keep_messages),
            trigger_tokens=None if force else settings.trigger_tokens,
        )
    except Exception as exc:
        raise ModelCallFailed("the model could not summarize the thread; try again") from exc
    if done is None:
        return _result(thread_id, compacted=False, reason="not_enough_messages")
    latest = await services.threads.get_state(thread_id)
    if latest.config["configurable"].get("checkpoint_id") != read_at:
        raise Conflict("The thread changed while it was summarized; try again.", retryable=True)
    config = await services.runs.update_state(
        thread_id, {"messages": done.update}, as_node=exit_node(services.agent), checkpoint=None
    )
    return _result(
        thread_id,
        compacted=True,
        removed_message_count=done.removed,
        preserved_message_count=done.preserved,
        summary_updated=True,
        checkpoint_id=config["configurable"].get("checkpoint_id"),
        total_tokens=done.tokens_before,
    )


def _result(thread_id: str, *, compacted: bool, **fields: Any) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "compacted": compacted,
        "reason": None,
        "removed_message_count": 0,
        "preserved_message_count": 0,
        "summary_updated": False,
        "checkpoint_id": None,
        "total_tokens": 0,
        **fields,
    }
