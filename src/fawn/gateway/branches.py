"""Branching a conversation from one of its assistant turns (DeerFlow's
``POST /api/threads/{id}/branches``).

The branch is a new thread whose state is the source's state right after that turn: the
newest checkpoint holding every message of the turn with nothing the user sees after it.
Branching from the latest turn copies the thread (its history and its files, all or
nothing); from an older turn, only that state is written (as the agent's last step, so the
branch is idle), and the files are not copied: they are not checkpointed, and today's
would hold what later turns made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from langgraph.constants import END
from langgraph.types import StateSnapshot

from fawn.agent.graph import LeadAgent
from fawn.agent.state import SERVER_CHANNELS
from fawn.gateway.auth.access import Caller
from fawn.gateway.services import Services
from fawn.runs.errors import Conflict

#: How far back the turn is looked for (checkpoints, newest first).
HISTORY_SCAN = 400
#: Channels an older turn's branch does not inherit: the server's own (the sandbox binding
#: and paths, set again by the branch's first run; the sub-agent ledger; the file versions
#: read, moot since the files are not copied).
EXCLUDED_CHANNELS = SERVER_CHANNELS
#: Metadata keys DeerFlow marks a branch with.
BRANCH_KEY = "deerflow_branch"

GONE = "This turn can no longer be branched from."

CloneMode = Literal["current_thread_best_effort", "skipped_historical_turn"]


@dataclass(frozen=True, kw_only=True)
class Branch:
    """DeerFlow's ``ThreadBranchResponse``."""

    thread_id: str
    parent_thread_id: str
    parent_checkpoint_id: str
    branched_from_message_id: str
    workspace_clone_mode: CloneMode
    history_seed_mode: Literal["seeded", "skipped_empty"]

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _visible(message: Any) -> bool:
    """A message DeerFlow's app shows: a human or AI message not marked hidden."""
    if (getattr(message, "additional_kwargs", None) or {}).get("hide_from_ui") is True:
        return False
    return getattr(message, "type", None) in ("human", "ai")


def _messages(snapshot: StateSnapshot) -> list[Any]:
    return list((snapshot.values or {}).get("messages") or [])


def holds_turn(messages: Sequence[Any], turn: set[str]) -> bool:
    """Whether ``messages`` hold every AI message of ``turn`` and nothing visible after it."""
    index = {m.id: i for i, m in enumerate(messages) if getattr(m, "id", None)}
    if not turn or not turn <= index.keys():
        return False
    if any(getattr(messages[index[i]], "type", None) != "ai" for i in turn):
        return False
    end = max(index[i] for i in turn)
    return not any(_visible(m) for m in messages[end + 1 :])


def turn_snapshot(history: Iterable[StateSnapshot], turn: set[str]) -> StateSnapshot:
    """The newest state right after ``turn`` (409 when the history no longer holds it)."""
    for snapshot in history:
        if holds_turn(_messages(snapshot), turn):
            return snapshot
    raise Conflict(GONE)


def _checkpoint_id(snapshot: StateSnapshot) -> str:
    checkpoint_id = snapshot.config.get("configurable", {}).get("checkpoint_id")
    if not isinstance(checkpoint_id, str) or not checkpoint_id:
        raise Conflict(GONE)
    return checkpoint_id


def exit_node(agent: LeadAgent) -> str:
    """The agent's last node (its one edge to the end): state written as this node leaves the
    thread idle, with nothing left to run."""
    [node] = [src for src, dst in agent.graph.builder.edges if dst == END]
    return node


async def branch_thread(
    services: Services,
    caller: Caller,
    thread_id: str,
    *,
    message_id: str,
    message_ids: Sequence[str],
    title: str | None,
) -> Branch:
    """A new thread, owned by the caller, from the turn of ``message_ids``."""
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    source = await services.threads.get(thread_id, scope=scope)
    turn = {message_id, *message_ids}
    history = await services.threads.history(
        thread_id, limit=HISTORY_SCAN, before=None, metadata=None, checkpoint=None, scope=scope
    )
    snapshot = turn_snapshot(history, turn)
    parent_checkpoint = _checkpoint_id(snapshot)
    value: dict[str, Any] = {
        "thread_id": None,
        "metadata": {
            **source.metadata,
            BRANCH_KEY: True,
            "branch_parent_thread_id": thread_id,
            "branch_parent_checkpoint_id": parent_checkpoint,
            "branch_parent_message_id": message_id,
            "branch_created_at": datetime.now(UTC).isoformat(),
        },
        "if_exists": "raise",
    }
    await caller.scope("threads", "create", value)
    metadata = caller.stamped(value["metadata"])
    latest = holds_turn(_messages(history[0]), turn) if history else False
    if latest and title and source.status == "interrupted":
        # the title is written as the agent's last step, which would drop the pause
        raise Conflict(
            "The thread waits for an answer: branch it without a title, or answer first."
        )
    if latest:
        branch = await services.threads.copy(thread_id, scope=scope, metadata=metadata)
        if title:
            await services.runs.update_state(
                branch.thread_id,
                {"title": title},
                as_node=exit_node(services.agent),
                checkpoint=None,
            )
    else:
        values = _branch_values(snapshot.values, title)
        branch = await services.threads.create(
            None,
            metadata,
            "raise",
            supersteps=[[(values, exit_node(services.agent))]],
            scope=scope,
        )
    return Branch(
        thread_id=branch.thread_id,
        parent_thread_id=thread_id,
        parent_checkpoint_id=parent_checkpoint,
        branched_from_message_id=message_id,
        workspace_clone_mode="current_thread_best_effort" if latest else "skipped_historical_turn",
        history_seed_mode="seeded" if _messages(snapshot) else "skipped_empty",
    )


def _branch_values(values: Mapping[str, Any], title: str | None) -> dict[str, Any]:
    kept = {k: v for k, v in values.items() if k not in EXCLUDED_CHANNELS}
    if title:
        kept["title"] = title
    return kept
