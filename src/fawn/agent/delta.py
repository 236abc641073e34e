"""The ``delta`` checkpoint mode: ``messages`` kept as per-step writes, not whole lists.

In the ``full`` mode (LangGraph's shape) every checkpoint stores the thread's whole message
list, so the bytes a turn adds grow with the thread. In ``delta`` the ``messages`` channel is
LangGraph's :class:`~langgraph.channels.delta.DeltaChannel`: a checkpoint stores no list, the
step's writes (which every saver keeps anyway, as pending writes) are the record, and a read
rebuilds the list by replaying the writes since the nearest keyframe (a checkpoint that holds
the whole list, written every ``keyframe_every`` updates of the channel). Time travel, forks
and copies work on it as on any channel: the replay follows the parent chain.

A replay must rebuild exactly what the run saw, so the reducer has ``add_messages``'s
semantics (merge by id, ``RemoveMessage``, ``REMOVE_ALL_MESSAGES``) but is deterministic where
``add_messages`` is not: a message written without an id gets one derived from its place in
the list (the id of the message before it, the list's length, its position in the write)
instead of a random one, so every read of the same checkpoint gives the same ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Required, cast, get_type_hints

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    RemoveMessage,
    convert_to_messages,
    message_chunk_to_message,
)
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from typing_extensions import TypedDict

from fawn.agent.state import ThreadState
from fawn.config.settings import CheckpointMode

#: the namespace of the ids given to messages written without one (``uuid5``)
MESSAGE_ID_NAMESPACE = uuid.UUID("6f1c1b8e-3c2a-4a57-9f0e-2d7a0c5e9b11")


def _coerce(write: Any) -> list[BaseMessage]:
    """What ``add_messages`` makes of one side: a list of plain (non-chunk) messages."""
    items = write if isinstance(write, list) else [write]
    return [message_chunk_to_message(m) for m in convert_to_messages(items)]


def _with_stable_ids(write: Any, merged: Sequence[BaseMessage]) -> list[BaseMessage]:
    messages = _coerce(write)
    tail = merged[-1].id if merged else ""
    stamped: list[BaseMessage] = []
    for index, message in enumerate(messages):
        if message.id is None:
            derived = uuid.uuid5(MESSAGE_ID_NAMESPACE, f"{tail}:{len(merged)}:{index}")
            message = message.model_copy(update={"id": str(derived)})
        stamped.append(message)
    return stamped


def replay_messages(state: Sequence[BaseMessage], writes: Sequence[Any]) -> list[BaseMessage]:
    """``add_messages`` applied to each write in turn (``DeltaChannel``'s batch reducer).

    Folding one write at a time makes it batching-invariant, as ``DeltaChannel`` requires:
    ``replay(replay(s, xs), ys) == replay(s, xs + ys)``. The fold keeps its index of ids
    from write to write (``add_messages`` rebuilds it, and re-checks the whole list, on
    every call): a read replays up to ``keyframe_every`` writes onto a long list.
    """
    merged: list[BaseMessage] = _coerce(list(state)) if state else []
    position = {m.id: i for i, m in enumerate(merged)}
    for write in writes:
        right = _with_stable_ids(write, merged)
        reset = [i for i, m in enumerate(right) if _removes_all(m)]
        if reset:
            merged = right[reset[-1] + 1 :]
            position = {m.id: i for i, m in enumerate(merged)}
            continue
        removed: set[str | None] = set()
        for message in right:
            at = position.get(message.id)
            if at is not None:
                if isinstance(message, RemoveMessage):
                    removed.add(message.id)
                else:
                    removed.discard(message.id)
                    merged[at] = message
            elif isinstance(message, RemoveMessage):
                raise ValueError(
                    f"Attempting to delete a message with an ID that doesn't exist ('{message.id}')"
                )
            else:
                position[message.id] = len(merged)
                merged.append(message)
        if removed:
            merged = [m for m in merged if m.id not in removed]
            position = {m.id: i for i, m in enumerate(merged)}
    return merged


def _removes_all(message: BaseMessage) -> bool:
    return isinstance(message, RemoveMessage) and message.id == REMOVE_ALL_MESSAGES


def thread_state_schema(mode: CheckpointMode, *, keyframe_every: int) -> type[Any]:
    """The lead agent's state schema for a checkpoint mode: ``ThreadState`` itself for
    ``full``; for ``delta`` the same channels with ``messages`` on a ``DeltaChannel``."""
    if mode == "full":
        return ThreadState
    hints = get_type_hints(ThreadState, include_extras=True)
    hints["messages"] = Required[
        Annotated[
            list[AnyMessage],
            DeltaChannel(replay_messages, list, snapshot_frequency=keyframe_every),
        ]
    ]
    return cast(type[Any], TypedDict("DeltaThreadState", hints))  # type: ignore[operator]
