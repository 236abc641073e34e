"""ThreadService: thread records, their LangGraph state, history, copies and deletion.

It answers with typed values (records, LangGraph ``StateSnapshot``s, checkpoint configs);
the gateway renders them.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import anyio.to_thread
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.errors import InvalidUpdateError
from langgraph.types import StateSnapshot, StateUpdate

from fawn.agent.graph import LeadAgent
from fawn.agent.serialize import to_jsonable
from fawn.agent.snapshots import pending_interrupts
from fawn.agent.state import INPUT_NODE, InvalidStateUpdate, validate_update
from fawn.runs.errors import Conflict, InvalidInput, NotFound, ServiceError
from fawn.sandbox.base import SandboxProvider
from fawn.sandbox.errors import InvalidThreadId
from fawn.sandbox.local import SANDBOX_ID_PREFIX
from fawn.sandbox.paths import ThreadPaths, validate_thread_id
from fawn.sandbox.treecopy import copy_tree
from fawn.store.checkpoints import Saver, copy_thread, put_pending_writes
from fawn.store.errors import CheckpointModeMismatch, ThreadExists
from fawn.store.run_queue import IdleThread
from fawn.store.scope import SYSTEM, Scope
from fawn.store.threads import (
    ThreadFilter,
    ThreadRecord,
    ThreadRepository,
    ThreadSortBy,
    ThreadStateSnapshot,
    ThreadStatus,
)

#: One superstep of ``threads.create(supersteps=...)``: ``(values, as_node)`` pairs applied
#: together, as if those nodes had run in the same step.
Superstep = Sequence[tuple[Any, str]]

#: Checkpoint metadata LangGraph writes and reads back (history order, forks; in the
#: ``delta`` checkpoint mode, when the next keyframe is due).
CHECKPOINT_OWNED_METADATA = frozenset(
    {"source", "step", "parents", "counters_since_delta_snapshot"}
)


def thread_config(thread_id: str, checkpoint: Mapping[str, Any] | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint:
        configurable.update({k: v for k, v in checkpoint.items() if v is not None})
        configurable["thread_id"] = thread_id
    return {"configurable": configurable}


def is_valid_thread_id(thread_id: str) -> bool:
    try:
        validate_thread_id(thread_id)
    except InvalidThreadId:
        return False
    return True


def thread_row(
    snapshot: StateSnapshot,
    values: dict[str, Any],
    *,
    status: ThreadStatus | None = None,
    error: Any = None,
) -> ThreadStateSnapshot:
    """What the thread row keeps of a state: its values (``values``, already JSON), pending
    interrupts, and a status (by default ``interrupted`` while an interrupt waits)."""
    interrupts = pending_interrupts(snapshot)
    return ThreadStateSnapshot(
        values=values if snapshot.config else None,
        interrupts=interrupts,
        status=status or ("interrupted" if interrupts else "idle"),
        error=error,
    )


def _move_if_present(source: Path, target: Path) -> None:
    if source.exists():
        source.rename(target)


def check_thread_id(thread_id: str) -> str:
    try:
        return validate_thread_id(thread_id)
    except InvalidThreadId as exc:
        raise InvalidInput(f"thread_id: {exc}", field="thread_id") from exc


class ThreadService:
    def __init__(
        self,
        repo: ThreadRepository,
        agent: LeadAgent,
        saver: Saver,
        data_dir: Path,
        sandbox: SandboxProvider,
    ) -> None:
        self._repo = repo
        self._agent = agent
        self._saver = saver
        self._data_dir = data_dir
        self._sandbox = sandbox

    @property
    def repo(self) -> ThreadRepository:
        return self._repo

    # -- records -------------------------------------------------------------------------

    async def create(
        self,
        thread_id: str | None,
        metadata: Mapping[str, Any] | None,
        if_exists: Literal["raise", "do_nothing"],
        *,
        supersteps: Sequence[Superstep] = (),
        scope: Scope = SYSTEM,
    ) -> ThreadRecord:
        """Create a thread owned by ``scope.user_id``, optionally with initial state.
        ``do_nothing`` returns an existing thread unchanged (its supersteps are not applied)
        when the scope reaches it."""
        tid = str(uuid.uuid4()) if thread_id is None else check_thread_id(thread_id)
        for step in supersteps:
            for values, as_node in step:
                self._validate_update(values, as_node)
        try:
            record = await self._repo.create(tid, metadata=metadata, scope=scope)
        except ThreadExists as exc:
            existing = await self._repo.get(tid, scope=scope)
            if if_exists == "do_nothing" and existing is not None:
                return existing
            raise Conflict(f"thread {tid} already exists") from exc
        if not supersteps:
            return record
        updates = [
            [StateUpdate(values, as_node) for values, as_node in step] for step in supersteps
        ]
        try:
            await self._apply(self._agent.graph.abulk_update_state(thread_config(tid), updates))
        except Exception:
            await self._saver.adelete_thread(tid)
            await self._repo.delete(tid, scope=SYSTEM)
            raise
        await self.refresh(tid)
        return await self.get(tid, scope=scope)

    async def get(
        self, thread_id: str, *, scope: Scope = SYSTEM, checkpoints: bool = True
    ) -> ThreadRecord:
        """The thread if ``scope`` reaches it; another owner's thread is not found, exactly
        like a missing one.

        Every route that reads or writes the thread's checkpoints (state, history, copy,
        runs...) comes through here with ``checkpoints`` set, the default: a thread created
        in the other checkpoint mode is refused with a conflict naming both modes, never
        misread. Only the routes on the record alone (read, patch, delete) clear it."""
        # An id that could never have been created is not looked up (PostgreSQL refuses NULs).
        valid = is_valid_thread_id(thread_id)
        record = await self._repo.get(thread_id, scope=scope) if valid else None
        if record is None:
            raise NotFound(f"thread {thread_id} not found")
        if checkpoints:
            self._require_mode(record)
        return record

    def _require_mode(self, record: ThreadRecord) -> None:
        try:
            record.require_mode(self._repo.checkpoint_mode)
        except CheckpointModeMismatch as exc:
            raise Conflict(str(exc)) from exc

    async def update_metadata(
        self, thread_id: str, metadata: Mapping[str, Any], *, scope: Scope = SYSTEM
    ) -> ThreadRecord:
        await self.get(thread_id, scope=scope, checkpoints=False)
        record = await self._repo.update_metadata(thread_id, metadata, scope=scope)
        if record is None:
            raise NotFound(f"thread {thread_id} not found")
        return record

    async def delete(self, thread_id: str, *, scope: Scope = SYSTEM) -> None:
        """Remove the record, every checkpoint and the thread's files, and release its
        sandbox."""
        record = await self.get(thread_id, scope=scope, checkpoints=False)
        await self._saver.adelete_thread(thread_id)
        await self._repo.delete(thread_id, scope=scope)
        await self._sandbox.release(SANDBOX_ID_PREFIX + thread_id)
        await asyncio.to_thread(shutil.rmtree, self._thread_dir(record), True)

    async def search(
        self,
        flt: ThreadFilter,
        *,
        limit: int,
        offset: int,
        sort_by: ThreadSortBy,
        sort_order: Literal["asc", "desc"],
        scope: Scope = SYSTEM,
    ) -> tuple[list[ThreadRecord], int]:
        if flt.ids is not None:  # ids no thread can have match nothing, and are not looked up
            flt = replace(flt, ids=[tid for tid in flt.ids if is_valid_thread_id(tid)])
        return await self._repo.search(
            flt, limit=limit, offset=offset, sort_by=sort_by, sort_order=sort_order, scope=scope
        )

    async def count(self, flt: ThreadFilter, *, scope: Scope = SYSTEM) -> int:
        return await self._repo.count(flt, scope=scope)

    async def copy(
        self,
        thread_id: str,
        *,
        scope: Scope = SYSTEM,
        metadata: Mapping[str, Any] | None = None,
    ) -> ThreadRecord:
        """A new thread with the same checkpoints (history) and files, owned by
        ``scope.user_id`` (the copier), with ``metadata`` (default: the source's); all of it
        or, if any step fails, nothing (see :mod:`fawn.sandbox.treecopy` for the files)."""
        source = await self.get(thread_id, scope=scope)
        target = str(uuid.uuid4())
        source_dir = self._thread_dir(source)
        target_dir = ThreadPaths.for_thread(self._data_dir, target, scope.user_id).thread_dir
        # Files first, beside the final place: the step most likely to fail touches no record.
        staging = target_dir.with_name(f".copy-{target}")
        try:
            if source_dir.is_dir():
                # The copier's own tree may not exist yet (their first thread).
                await anyio.to_thread.run_sync(
                    lambda: staging.parent.mkdir(parents=True, exist_ok=True)
                )
                # anyio's worker is not abandoned on cancellation: cleanup sees a finished copy
                await anyio.to_thread.run_sync(copy_tree, source_dir, staging)
            await self._repo.create(
                target, metadata=source.metadata if metadata is None else metadata, scope=scope
            )
            await copy_thread(self._saver, thread_id, target)
            await self._repo.save_state(
                target,
                ThreadStateSnapshot(
                    values=source.values,
                    interrupts=source.interrupts,
                    status="interrupted" if source.interrupts else "idle",
                ),
            )
            await anyio.to_thread.run_sync(_move_if_present, staging, target_dir)
        except OSError as exc:
            await self._discard_copy(target, staging)
            raise ServiceError(
                f"thread {thread_id} could not be copied: {exc.strerror or exc}"
            ) from exc
        except BaseException:
            await self._discard_copy(target, staging)
            raise
        return await self.get(target, scope=scope)

    async def _discard_copy(self, target: str, staging: Path) -> None:
        """Remove whatever an unfinished copy made: its files, checkpoints and record."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(shutil.rmtree, staging, True)
            await self._saver.adelete_thread(target)
            await self._repo.delete(target, scope=SYSTEM)

    async def prune(
        self, thread_ids: Sequence[str], strategy: str, *, scope: Scope = SYSTEM
    ) -> int:
        """``delete`` removes threads entirely; ``keep_latest`` keeps only the latest checkpoint.
        Unknown ids (and threads outside ``scope``) are skipped; the answer counts the threads
        pruned."""
        pruned = 0
        for tid in dict.fromkeys(thread_ids):
            record = await self._repo.get(tid, scope=scope) if is_valid_thread_id(tid) else None
            if record is None:
                continue
            if strategy == "delete":
                await self.delete(tid, scope=scope)
            else:
                self._require_mode(record)
                await self._keep_latest_checkpoint(tid)
            pruned += 1
        return pruned

    # -- state ---------------------------------------------------------------------------

    async def get_state(
        self,
        thread_id: str,
        checkpoint: Mapping[str, Any] | None = None,
        *,
        subgraphs: bool = False,
        scope: Scope = SYSTEM,
    ) -> StateSnapshot:
        await self.get(thread_id, scope=scope)
        await self._require_checkpoint(thread_id, checkpoint)
        config = thread_config(thread_id, checkpoint)
        return await self._agent.graph.aget_state(config, subgraphs=subgraphs)

    async def history(
        self,
        thread_id: str,
        *,
        limit: int,
        before: str | Mapping[str, Any] | None,
        metadata: Mapping[str, Any] | None,
        checkpoint: Mapping[str, Any] | None,
        scope: Scope = SYSTEM,
    ) -> list[StateSnapshot]:
        """States newest first: at most ``limit``, older than ``before`` (a checkpoint id or a
        checkpoint), whose checkpoint metadata contains ``metadata``."""
        await self.get(thread_id, scope=scope)
        await self._require_checkpoint(thread_id, checkpoint)
        before_config: RunnableConfig | None = None
        if isinstance(before, str):
            if "\x00" in before:
                raise InvalidInput("before: not a checkpoint id", field="before")
            before_config = thread_config(thread_id, {"checkpoint_id": before})
        elif before:
            before_config = thread_config(thread_id, before)
        return [
            snap
            async for snap in self._agent.graph.aget_state_history(
                thread_config(thread_id, checkpoint),
                filter=dict(metadata) if metadata else None,
                before=before_config,
                limit=limit,
            )
        ]

    async def update_state(
        self,
        thread_id: str,
        values: Any,
        *,
        as_node: str | None,
        checkpoint: Mapping[str, Any] | None,
        held: IdleThread,
    ) -> RunnableConfig:
        """Apply ``values`` through the channels' reducers, as if ``as_node`` had written them,
        on top of the latest checkpoint or of ``checkpoint`` (which forks from it). ``held``
        keeps the thread idle meanwhile (no run is admitted until the row is written) and
        writes the thread row. Answers the new checkpoint's config."""
        self._validate_update(values, as_node)
        await self._require_checkpoint(thread_id, checkpoint)
        config = thread_config(thread_id, checkpoint)
        new_config = await self._apply(
            self._agent.graph.aupdate_state(config, values, as_node=as_node)
        )
        snapshot = await self._agent.graph.aget_state(thread_config(thread_id))
        await held.save_state(thread_row(snapshot, to_jsonable(snapshot.values or {})))
        return new_config

    async def patch_checkpoint_metadata(
        self, thread_id: str, metadata: Mapping[str, Any], *, scope: Scope = SYSTEM
    ) -> None:
        """Merge ``metadata`` into the latest checkpoint's metadata, in place (no new
        checkpoint: the state and the history's shape are unchanged). The keys LangGraph
        keeps there itself (``source``, ``step``, ``parents``) are not the client's."""
        await self.get(thread_id, scope=scope)
        owned = sorted(set(metadata) & CHECKPOINT_OWNED_METADATA)
        if owned:
            raise InvalidInput(
                f"metadata.{owned[0]} is written by LangGraph, not by a client",
                field=f"metadata.{owned[0]}",
            )
        latest = await self._saver.aget_tuple(thread_config(thread_id))
        if latest is None:
            raise NotFound(f"thread {thread_id} has no state to patch yet")
        conf = latest.config["configurable"]
        parent = (latest.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        target: RunnableConfig = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": conf.get("checkpoint_ns", ""),
                **({"checkpoint_id": parent} if parent else {}),
            }
        }
        merged = cast(CheckpointMetadata, {**latest.metadata, **metadata})
        await self._saver.aput(target, latest.checkpoint, merged, {})

    async def refresh(
        self, thread_id: str, *, status: ThreadStatus | None = None, error: Any = None
    ) -> None:
        """Copy the latest checkpoint's values and interrupts onto the thread row."""
        snapshot = await self._agent.graph.aget_state(thread_config(thread_id))
        row = thread_row(snapshot, to_jsonable(snapshot.values or {}), status=status, error=error)
        await self._repo.save_state(thread_id, row)

    # -- helpers -------------------------------------------------------------------------

    def _thread_dir(self, record: ThreadRecord) -> Path:
        return ThreadPaths.for_thread(self._data_dir, record.thread_id, record.user_id).thread_dir

    def _validate_update(self, values: Any, as_node: str | None) -> None:
        if isinstance(values, Mapping):
            try:
                validate_update(values)
            except InvalidStateUpdate as exc:
                raise InvalidInput(str(exc), field=f"values.{exc.channel}") from exc
        elif values is not None:
            raise InvalidInput(
                "values must be an object mapping channels to values", field="values"
            )
        if as_node is not None and as_node not in self._agent.graph.nodes and as_node != INPUT_NODE:
            nodes = ", ".join(n for n in self._agent.graph.nodes if not n.startswith("__"))
            raise InvalidInput(
                f"unknown node {as_node!r} for as_node; nodes: {nodes}", field="as_node"
            )

    @staticmethod
    async def _apply(update: Any) -> RunnableConfig:
        """Await a LangGraph state update; a reducer's refusal becomes a 422."""
        try:
            config: RunnableConfig = await update
        except (InvalidUpdateError, ValueError, TypeError) as exc:
            raise InvalidInput(f"state update rejected: {exc}", field="values") from exc
        return config

    async def _require_checkpoint(
        self, thread_id: str, checkpoint: Mapping[str, Any] | None
    ) -> None:
        """404 for a checkpoint id this thread does not have (LangGraph would read it as an
        empty state, and an update would silently fork from nothing)."""
        checkpoint_id = (checkpoint or {}).get("checkpoint_id")
        if not checkpoint_id:
            return
        found = "\x00" not in str(checkpoint_id) and (
            await self._saver.aget_tuple(thread_config(thread_id, checkpoint)) is not None
        )
        if not found:
            raise NotFound(f"checkpoint {checkpoint_id} not found in thread {thread_id}")

    async def _keep_latest_checkpoint(self, thread_id: str) -> None:
        delta = self._repo.checkpoint_mode == "delta"
        if not delta:
            try:
                await self._saver.aprune([thread_id], strategy="keep_latest")
                return
            except NotImplementedError:
                pass  # the SQLite saver has no prune
        # Rewrite the latest checkpoint of each namespace (and its pending writes) as the
        # thread's only one. In ``delta`` mode the latest checkpoint holds no messages (its
        # ancestors' writes do): the kept one holds the whole list, rebuilt first.
        latest: dict[str, Any] = {}
        async for item in self._saver.alist({"configurable": {"thread_id": thread_id}}):
            latest.setdefault(item.config["configurable"].get("checkpoint_ns", ""), item)
        root = latest.get("")
        if delta and root is not None:
            state = await self._agent.graph.aget_state(root.config)
            values = {**root.checkpoint["channel_values"]}
            values["messages"] = list(state.values.get("messages", []))
            latest[""] = root._replace(
                checkpoint=cast(Checkpoint, {**root.checkpoint, "channel_values": values})
            )
        await self._saver.adelete_thread(thread_id)
        for ns, item in latest.items():
            config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
            stored = await self._saver.aput(
                config, item.checkpoint, item.metadata, dict(item.checkpoint["channel_versions"])
            )
            await put_pending_writes(self._saver, stored, item.pending_writes or [])
