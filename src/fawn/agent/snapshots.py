"""StateSnapshot (LangGraph) → the ``ThreadState`` wire shape of ``langgraph_sdk.schema``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from fawn.agent.serialize import interrupts_json, to_jsonable


def checkpoint_ref(config: RunnableConfig | None, thread_id: str) -> dict[str, Any] | None:
    if not config:
        return None
    conf = config.get("configurable", {})
    return {
        "thread_id": conf.get("thread_id", thread_id),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf.get("checkpoint_id"),
        "checkpoint_map": conf.get("checkpoint_map"),
    }


def snapshot_json(snapshot: StateSnapshot, thread_id: str) -> dict[str, Any]:
    checkpoint = checkpoint_ref(snapshot.config, thread_id) or {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": None,
        "checkpoint_map": None,
    }
    parent = checkpoint_ref(snapshot.parent_config, thread_id)
    tasks = [
        {
            "id": task.id,
            "name": task.name,
            "path": to_jsonable(list(task.path)),
            "error": repr(task.error) if task.error is not None else None,
            "interrupts": interrupts_json(task.interrupts),
            "checkpoint": checkpoint_ref(task.state, thread_id)
            if isinstance(task.state, dict)
            else None,
            "state": snapshot_json(task.state, thread_id)
            if isinstance(task.state, StateSnapshot)
            else None,
            "result": to_jsonable(task.result) if task.result is not None else None,
        }
        for task in snapshot.tasks
    ]
    return {
        "values": to_jsonable(snapshot.values or {}),
        "next": list(snapshot.next),
        "tasks": tasks,
        "metadata": to_jsonable(snapshot.metadata or {}),
        "created_at": snapshot.created_at,
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "interrupts": interrupts_json(snapshot.interrupts),
        "checkpoint_id": checkpoint["checkpoint_id"],
        "parent_checkpoint_id": parent["checkpoint_id"] if parent else None,
    }


def pending_interrupts(snapshot: StateSnapshot) -> dict[str, list[dict[str, Any]]]:
    """``{task_id: [{value, id}]}`` as the Thread shape carries them."""
    return {task.id: interrupts_json(task.interrupts) for task in snapshot.tasks if task.interrupts}


def select_fields(state: dict[str, Any], select: Sequence[str] | None) -> dict[str, Any]:
    """Keep the ``select``-ed fields of a wire state; ``values.<channel>`` keeps one channel."""
    if not select:
        return state
    picked: dict[str, Any] = {}
    for field in select:
        channel = field.removeprefix("values.")
        if channel != field and "values" not in select:
            values = state.get("values") or {}
            kept = picked.setdefault("values", {})
            if channel in values:
                kept[channel] = values[channel]
        elif field in state:
            picked[field] = state[field]
    return picked
