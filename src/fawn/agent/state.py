"""ThreadState: the lead agent's graph state and the reducers of its channels.

Each reducer answers one question: what happens when two writers update the channel in the
same step, or a later turn writes again. They are pure functions of (existing, new).
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

from langchain.agents import AgentState


class SandboxState(TypedDict):
    sandbox_id: NotRequired[str | None]


class ThreadDataState(TypedDict):
    workspace_path: NotRequired[str | None]
    uploads_path: NotRequired[str | None]
    outputs_path: NotRequired[str | None]


class ViewedImage(TypedDict):
    """Metadata of an image the model has been shown. Never the pixels: the bytes are read
    from the sandbox for the model call only, so checkpoints stay small."""

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


class SandboxConflictError(ValueError):
    """Two different sandboxes were bound to one thread."""


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
    """Order-preserving, de-duplicating union; cumulative across turns."""
    if new is None:
        return list(existing or [])
    return list(dict.fromkeys([*(existing or []), *new]))


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


class ThreadState(AgentState[Any]):
    sandbox: Annotated[NotRequired[SandboxState | None], merge_sandbox]
    thread_data: NotRequired[ThreadDataState | None]
    title: NotRequired[str | None]
    artifacts: Annotated[NotRequired[list[str]], merge_artifacts]
    todos: Annotated[NotRequired[list[Todo] | None], merge_todos]
    uploaded_files: NotRequired[list[UploadedFile] | None]
    viewed_images: Annotated[NotRequired[dict[str, ViewedImage]], merge_viewed_images]


#: Channels a client may write through ``threads.update_state`` (besides ``messages``).
STATE_CHANNELS: frozenset[str] = frozenset(
    {
        "messages",
        "sandbox",
        "thread_data",
        "title",
        "artifacts",
        "todos",
        "uploaded_files",
        "viewed_images",
    }
)
