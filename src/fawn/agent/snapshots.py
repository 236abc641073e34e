"""What a thread record keeps of a LangGraph ``StateSnapshot`` (its wire rendering lives in
the gateway, ``fawn.gateway.wire``)."""

from __future__ import annotations

from typing import Any

from langgraph.types import StateSnapshot

from fawn.agent.serialize import interrupts_json


def pending_interrupts(snapshot: StateSnapshot) -> dict[str, list[dict[str, Any]]]:
    """``{task_id: [{value, id}]}`` as the Thread shape carries them."""
    return {task.id: interrupts_json(task.interrupts) for task in snapshot.tasks if task.interrupts}
