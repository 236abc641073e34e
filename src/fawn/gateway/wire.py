"""Typed values → the wire shapes of ``langgraph_sdk.schema``: every JSON body the API sends
about threads, states and runs is built here."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from fawn.agent.serialize import interrupts_json, to_jsonable
from fawn.gateway.stream_events import error_json
from fawn.runs.changes import RunChanges
from fawn.runs.outcome import RunResult
from fawn.store.runs import RunEventEntry, RunRecord
from fawn.store.threads import ThreadRecord


def thread_json(
    record: ThreadRecord,
    select: Sequence[str] | None = None,
    *,
    extract: Mapping[str, str] | None = None,
    include: Collection[str] = (),
) -> dict[str, Any]:
    """The SDK's ``Thread``; ``select`` keeps some fields, ``extract`` adds ``extracted``
    (alias → the value at a path such as ``values.messages[-1]``, None when absent), and
    ``include=["ttl"]`` adds ``ttl``, always None: threads here never expire."""
    body = record.as_dict()
    if "ttl" in include:
        body["ttl"] = None
    extracted = {alias: _at_path(body, path) for alias, path in (extract or {}).items()}
    if select:
        body = {k: body.get(k) for k in select}
    if extract:
        body["extracted"] = extracted
    return body


_PATH_PART = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def _at_path(document: Any, path: str) -> Any:
    value = document
    for key, index in _PATH_PART.findall(path):
        if key:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        else:
            position = int(index)
            if not isinstance(value, list) or not -len(value) <= position < len(value):
                return None
            value = value[position]
    return value


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


def journal_json(entries: Sequence[RunEventEntry]) -> dict[str, Any]:
    """``GET /api/threads/{tid}/runs/{rid}/events``."""
    return {
        "events": [
            {"seq": e.seq, "kind": e.kind, "data": e.data, "created_at": e.created_at}
            for e in entries
        ]
    }


def changes_json(changes: RunChanges) -> dict[str, Any]:
    """``GET /api/threads/{tid}/runs/{rid}/changes``."""
    receipt = changes.receipt
    return {
        "run_id": changes.run_id,
        "thread_id": changes.thread_id,
        "recorded": changes.recorded,
        "reason": changes.reason,
        "added": changes.added,
        "modified": changes.modified,
        "deleted": changes.deleted,
        "receipt": None
        if receipt is None
        else {
            "presented": receipt.presented,
            "produced": receipt.produced,
            "matched": receipt.matched,
            "satisfied": receipt.satisfied,
            "recovered": receipt.recovered,
            "created_at": receipt.created_at,
        },
    }


def result_json(result: RunResult) -> Any:
    """What ``runs.wait``/``join`` answer: the final values (with pending interrupts under
    ``__interrupt__``), or ``{"__error__": {error, message}}``."""
    if result.error is not None:
        return {"__error__": error_json(result.error)}
    state = result.state
    if state is None:
        return {}
    values = to_jsonable(state.values or {})
    interrupts = [i for task in state.tasks for i in task.interrupts]
    if not interrupts:
        return values
    return {**values, "__interrupt__": interrupts_json(interrupts)}


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


def state_json(
    snapshot: StateSnapshot, thread_id: str, select: Sequence[str] | None = None
) -> dict[str, Any]:
    """The SDK's ``ThreadState``; ``select`` keeps some fields (``values.<channel>`` keeps
    one channel of the values)."""
    return _select_fields(_state_json(snapshot, thread_id), select)


def _state_json(snapshot: StateSnapshot, thread_id: str) -> dict[str, Any]:
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
            "state": _state_json(task.state, thread_id)
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


def _select_fields(state: dict[str, Any], select: Sequence[str] | None) -> dict[str, Any]:
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


def update_state_json(config: RunnableConfig, thread_id: str) -> dict[str, Any]:
    """``POST /threads/{id}/state``: the new checkpoint."""
    ref = checkpoint_ref(config, thread_id)
    return {
        "checkpoint": ref,
        "configurable": to_jsonable(config.get("configurable", {})),
        "checkpoint_id": ref["checkpoint_id"] if ref else None,
    }
