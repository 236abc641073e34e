"""Records → the wire shapes of ``langgraph_sdk.schema``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fawn.store.runs import RunRecord
from fawn.store.threads import ThreadRecord


def thread_json(record: ThreadRecord, select: Sequence[str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "thread_id": record.thread_id,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "state_updated_at": record.state_updated_at,
        "metadata": record.metadata,
        "status": record.status,
        "config": record.config,
        "values": record.values,
        "interrupts": record.interrupts,
        "error": record.error,
    }
    if select:
        return {k: body.get(k) for k in select}
    return body


def run_json(record: RunRecord) -> dict[str, Any]:
    return {
        "run_id": record.run_id,
        "thread_id": record.thread_id,
        "assistant_id": record.assistant_id,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "status": record.status,
        "metadata": record.metadata,
        "multitask_strategy": record.multitask_strategy,
        "kwargs": record.kwargs,
        "error": record.error,
        "stop_reason": record.stop_reason,
        "usage": {
            "prompt_tokens": record.usage.prompt_tokens,
            "completion_tokens": record.usage.completion_tokens,
            "total_tokens": record.usage.total_tokens,
        },
    }
