"""ThreadState: the lead agent's graph state and the reducers of its channels.

Each reducer answers one question: what happens when two writers update the channel in the
same step, or a later turn writes again. They are pure functions of (existing, new).

:func:`validate_update` checks a client-written update (``threads.update_state``) against the
channels' declared types before LangGraph applies it, so a malformed value is refused with the
channel's name instead of being merged (a string is iterable: ``merge_artifacts`` would happily
split ``"abc"`` into three artifacts). ``sandbox`` and ``thread_data`` are the server's alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired

from langchain.agents import AgentState
from langchain_core.messages import convert_to_messages
from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config

# typing_extensions' TypedDict: pydantic validates these (validate_update) on Python 3.11.
from typing_extensions import TypedDict


class SandboxState(TypedDict):
    sandbox_id: NotRequired[str | None]


class ThreadDataState(TypedDict):
    workspace_path: NotRequired[str | None]
    uploads_path: NotRequired[str | None]
    outputs_path: NotRequired[str | None]


@with_config(ConfigDict(extra="forbid"))
class ViewedImage(TypedDict):
    """Metadata of an image the model has been shown. Never the pixels: the bytes are read
    from the sandbox for the model call only, so checkpoints stay small (an update carrying
    ``base64`` is refused)."""

    mime_type: str
    size: NotRequired[int]


class UploadedFile(TypedDict):
    filename: str
    size: int
    path: str
    extension: str


class Todo(TypedDict):
    content: str
    status: str


DelegationStatus = Literal[
    "in_progress", "completed", "failed", "cancelled", "timed_out", "polling_timed_out"
]
#: Statuses a delegation ends in (DeerFlow's ``subagent_status`` values).
TERMINAL_DELEGATION_STATUSES: frozenset[str] = frozenset(
    {"completed", "failed", "cancelled", "timed_out", "polling_timed_out"}
)
#: How many delegations the ledger keeps (the oldest go first).
MAX_DELEGATIONS = 100
#: How many file versions ``read_files`` remembers (the oldest go first).
MAX_READ_FILES = 500


class DelegationEntry(TypedDict):
    """One ``task`` delegation: the id is the tool call's, ``run_id`` the run that made it."""

    id: str
    run_id: str
    description: str
    subagent_type: str
    status: DelegationStatus
    created_at: str
    stop_reason: NotRequired[str]
    result_brief: NotRequired[str]


class SandboxConflictError(ValueError):
    """Two different sandboxes were bound to one thread."""


class InvalidStateUpdate(ValueError):
    """A state update names an unknown channel or carries a value of the wrong shape."""

    def __init__(self, channel: str, message: str) -> None:
        super().__init__(message)
        self.channel = channel


def merge_sandbox(existing: SandboxState | None, new: SandboxState | None) -> SandboxState | None:
    """Idempotent binding: the same id again is a no-op, a different id is an error."""
    if new is None:
        return existing
    if existing is None or existing.get("sandbox_id") is None:
        return new
    if new.get("sandbox_id") in (None, existing.get("sandbox_id")):
        return existing
    raise SandboxConflictError(
        f"thread is bound to sandbox {existing.get('sandbox_id')!r}, "
        f"refusing to rebind it to {new.get('sandbox_id')!r}"
    )


def merge_artifacts(existing: list[str] | None, new: list[str] | None) -> list[str]:
    """Order-preserving, de-duplicating union; cumulative across turns (``None`` adds nothing)."""
    return list(dict.fromkeys([*(existing or []), *(new or [])]))


def merge_todos(existing: list[Todo] | None, new: list[Todo] | None) -> list[Todo] | None:
    """``None`` keeps the list, ``[]`` clears it, any other list replaces it."""
    if new is None:
        return existing
    return list(new)


def merge_viewed_images(
    existing: dict[str, ViewedImage] | None, new: dict[str, ViewedImage] | None
) -> dict[str, ViewedImage]:
    """Merge by path (new wins); an empty dict clears."""
    if new is None:
        return dict(existing or {})
    if not new:
        return {}
    return {**(existing or {}), **new}


def merge_delegations(
    existing: list[DelegationEntry] | None, new: list[DelegationEntry] | None
) -> list[DelegationEntry]:
    """The latest version of each task replaces the earlier one, in first-seen order.

    A terminal status is never overwritten by an in-progress update (a stale write from
    before the task ended); the first ``created_at`` is kept. At most
    :data:`MAX_DELEGATIONS` entries are kept, the oldest dropped first.
    """
    if not new:
        return list(existing or [])
    by_id: dict[str, DelegationEntry] = {}
    for entry in [*(existing or []), *new]:
        previous = by_id.get(entry["id"])
        if previous is None:
            by_id[entry["id"]] = entry
            continue
        stale = (
            previous["status"] in TERMINAL_DELEGATION_STATUSES
            and entry["status"] not in TERMINAL_DELEGATION_STATUSES
        )
        if not stale:
            by_id[entry["id"]] = {**entry, "created_at": previous["created_at"]}
    merged = list(by_id.values())
    return merged[-MAX_DELEGATIONS:]


def merge_read_files(existing: dict[str, str] | None, new: dict[str, str] | None) -> dict[str, str]:
    """Path → digest of the version the agent last read or wrote; the newest update of a path
    wins and moves it to the end; at most :data:`MAX_READ_FILES` paths (oldest dropped)."""
    merged = dict(existing or {})
    for path, digest in (new or {}).items():
        merged.pop(path, None)
        merged[path] = digest
    if len(merged) > MAX_READ_FILES:
        merged = dict(list(merged.items())[-MAX_READ_FILES:])
    return merged


class ThreadState(AgentState[Any]):
    sandbox: Annotated[NotRequired[SandboxState | None], merge_sandbox]
    thread_data: NotRequired[ThreadDataState | None]
    title: NotRequired[str | None]
    artifacts: Annotated[NotRequired[list[str]], merge_artifacts]
    todos: Annotated[NotRequired[list[Todo] | None], merge_todos]
    uploaded_files: NotRequired[list[UploadedFile] | None]
    viewed_images: Annotated[NotRequired[dict[str, ViewedImage]], merge_viewed_images]
    # Optional types: the channels stay out of the values until first written.
    delegations: Annotated[NotRequired[list[DelegationEntry] | None], merge_delegations]
    read_files: Annotated[NotRequired[dict[str, str] | None], merge_read_files]


# What a client may write to each channel (``None`` is "no change" for the reducer channels).
CHANNEL_TYPES: dict[str, TypeAdapter[Any]] = {
    "title": TypeAdapter(str | None),
    "artifacts": TypeAdapter(list[str] | None),
    "todos": TypeAdapter(list[Todo] | None),
    "uploaded_files": TypeAdapter(list[UploadedFile] | None),
    "viewed_images": TypeAdapter(dict[str, ViewedImage] | None),
}

#: Channels only the server writes: which sandbox the thread is bound to and the host paths
#: behind it (a client choosing them could point a run at another thread's sandbox or
#: files), the delegation ledger the sub-agent limits count, and the file versions the
#: read-before-write check trusts.
SERVER_CHANNELS: frozenset[str] = frozenset({"sandbox", "thread_data", "delegations", "read_files"})

#: Channels a client may write through ``threads.update_state``.
STATE_CHANNELS: frozenset[str] = frozenset({"messages", *CHANNEL_TYPES})

#: The pseudo-node a state update names to be written as the graph's input (LangGraph's
#: ``update_state``/``bulk_update_state`` treat it so; it is not a node of the graph).
INPUT_NODE = "__input__"


def validate_update(values: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidStateUpdate` naming the first channel that is unknown, owned by
    the server, or malformed."""
    owned = sorted(SERVER_CHANNELS.intersection(values))
    if owned:
        raise InvalidStateUpdate(
            owned[0],
            f"{', '.join(owned)}: set by the server for the thread; clients cannot write it",
        )
    unknown = sorted(set(values) - STATE_CHANNELS)
    if unknown:
        raise InvalidStateUpdate(
            unknown[0],
            f"unknown state channel(s): {', '.join(unknown)}; "
            f"writable channels: {', '.join(sorted(STATE_CHANNELS))}",
        )
    for channel, value in values.items():
        if channel == "messages":
            _check_messages(value)
            continue
        try:
            CHANNEL_TYPES[channel].validate_python(value, strict=True)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in (channel, *err['loc']))}: {err['msg']}"
                for err in exc.errors()
            )
            raise InvalidStateUpdate(channel, problems) from None


def _check_messages(value: Any) -> None:
    """What ``add_messages`` would accept: a message or a list of messages (dicts, tuples...)."""
    try:
        convert_to_messages(value if isinstance(value, list) else [value])
    # langchain reports an unsupported message with NotImplementedError, a bad dict with
    # ValueError (pydantic's ValidationError included).
    except (NotImplementedError, ValueError, TypeError, KeyError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidStateUpdate("messages", f"messages: {first_line}") from None
