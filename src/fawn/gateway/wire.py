"""Records → the wire shapes of ``langgraph_sdk.schema``."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from fawn.store.runs import RunRecord
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
