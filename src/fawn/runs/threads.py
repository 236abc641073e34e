"""ThreadService: thread records, their LangGraph state, history, copies and deletion."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.errors import InvalidUpdateError

from fawn.agent.graph import LeadAgent
from fawn.agent.serialize import to_jsonable
from fawn.agent.snapshots import checkpoint_ref, pending_interrupts, snapshot_json
from fawn.agent.state import STATE_CHANNELS
from fawn.runs.errors import Conflict, InvalidInput, NotFound
from fawn.sandbox.errors import InvalidThreadId
from fawn.sandbox.paths import ThreadPaths, validate_thread_id
from fawn.store.checkpoints import Saver, copy_thread
from fawn.store.errors import ThreadExists
from fawn.store.threads import (
    ThreadFilter,
    ThreadRecord,
    ThreadRepository,
    ThreadSortBy,
    ThreadStateSnapshot,
    ThreadStatus,
)


def thread_config(thread_id: str, checkpoint: Mapping[str, Any] | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint:
        configurable.update({k: v for k, v in checkpoint.items() if v is not None})
        configurable["thread_id"] = thread_id
    return {"configurable": configurable}


class ThreadService:
    def __init__(
        self,
        repo: ThreadRepository,
        agent: LeadAgent,
        saver: Saver,
        data_dir: Any,
    ) -> None:
        self._repo = repo
        self._agent = agent
        self._saver = saver
        self._data_dir = data_dir

    @property
    def repo(self) -> ThreadRepository:
        return self._repo

    async def create(
        self,
        thread_id: str | None,
        metadata: Mapping[str, Any] | None,
        if_exists: Literal["raise", "do_nothing"],
    ) -> ThreadRecord:
        tid = thread_id or str(uuid.uuid4())
        try:
            return await self._repo.create(tid, metadata=metadata, if_exists=if_exists)
        except ThreadExists as exc:
            raise Conflict(f"thread {tid} already exists") from exc

    async def get(self, thread_id: str) -> ThreadRecord:
        record = await self._repo.get(thread_id)
        if record is None:
            raise NotFound(f"thread {thread_id} not found")
        return record

    async def update_metadata(self, thread_id: str, metadata: Mapping[str, Any]) -> ThreadRecord:
        record = await self._repo.update_metadata(thread_id, metadata)
        if record is None:
            raise NotFound(f"thread {thread_id} not found")
        return record

    async def delete(self, thread_id: str) -> None:
        """Remove the record, every checkpoint and the thread's files."""
        await self.get(thread_id)
        await self._saver.adelete_thread(thread_id)
        await self._repo.delete(thread_id)
        paths = ThreadPaths.for_thread(self._data_dir, thread_id)
        await asyncio.to_thread(shutil.rmtree, paths.thread_dir, True)

    async def search(
        self,
        flt: ThreadFilter,
        *,
        limit: int,
        offset: int,
        sort_by: ThreadSortBy,
        sort_order: Literal["asc", "desc"],
    ) -> tuple[list[ThreadRecord], int]:
        return await self._repo.search(
            flt, limit=limit, offset=offset, sort_by=sort_by, sort_order=sort_order
        )

    async def count(self, flt: ThreadFilter) -> int:
        return await self._repo.count(flt)

    async def copy(self, thread_id: str) -> ThreadRecord:
        source = await self.get(thread_id)
        target = str(uuid.uuid4())
        await self._repo.create(target, metadata=source.metadata)
        await copy_thread(self._saver, thread_id, target)
        await self._repo.save_state(
            target,
            ThreadStateSnapshot(
                values=source.values,
                interrupts=source.interrupts,
                status="interrupted" if source.interrupts else "idle",
            ),
        )
        return await self.get(target)

    async def prune(self, thread_ids: Sequence[str], strategy: str) -> int:
        pruned = 0
        for tid in thread_ids:
            if await self._repo.get(tid) is None:
                continue
            if strategy == "delete":
                await self.delete(tid)
            else:
                await self._saver.aprune([tid], strategy="keep_latest")
            pruned += 1
        return pruned

    async def get_state(
        self,
        thread_id: str,
        checkpoint: Mapping[str, Any] | None = None,
        *,
        subgraphs: bool = False,
    ) -> dict[str, Any]:
        await self.get(thread_id)
        config = thread_config(thread_id, checkpoint)
        snapshot = await self._agent.graph.aget_state(config, subgraphs=subgraphs)
        if checkpoint and checkpoint.get("checkpoint_id") and snapshot.config is None:
            raise NotFound(
                f"checkpoint {checkpoint.get('checkpoint_id')} not found in thread {thread_id}"
            )
        return snapshot_json(snapshot, thread_id)

    async def history(
        self,
        thread_id: str,
        *,
        limit: int,
        before: str | Mapping[str, Any] | None,
        metadata: Mapping[str, Any] | None,
        checkpoint: Mapping[str, Any] | None,
    ) -> list[dict[str, Any]]:
        await self.get(thread_id)
        before_config: RunnableConfig | None = None
        if isinstance(before, str):
            before_config = thread_config(thread_id, {"checkpoint_id": before})
        elif before:
            before_config = thread_config(thread_id, before)
        return [
            snapshot_json(snap, thread_id)
            async for snap in self._agent.graph.aget_state_history(
                thread_config(thread_id, checkpoint),
                filter=dict(metadata) if metadata else None,
                before=before_config,
                limit=limit,
            )
        ]

    def _validate_update(self, values: Any, as_node: str | None) -> None:
        if isinstance(values, Mapping):
            unknown = sorted(set(values) - STATE_CHANNELS)
            if unknown:
                raise InvalidInput(
                    f"unknown state channel(s): {', '.join(unknown)}; "
                    f"writable channels: {', '.join(sorted(STATE_CHANNELS))}",
                    field="values",
                )
        elif values is not None:
            raise InvalidInput(
                "values must be an object mapping channels to values", field="values"
            )
        if as_node is not None and as_node not in self._agent.graph.nodes:
            nodes = ", ".join(n for n in self._agent.graph.nodes if not n.startswith("__"))
            raise InvalidInput(
                f"unknown node {as_node!r} for as_node; nodes: {nodes}", field="as_node"
            )

    async def update_state(
        self,
        thread_id: str,
        values: Any,
        *,
        as_node: str | None,
        checkpoint: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        await self.get(thread_id)
        self._validate_update(values, as_node)
        config = thread_config(thread_id, checkpoint)
        try:
            new_config = await self._agent.graph.aupdate_state(config, values, as_node=as_node)
        except (InvalidUpdateError, ValueError, TypeError) as exc:
            raise InvalidInput(f"state update rejected: {exc}", field="values") from exc
        await self.refresh(thread_id)
        ref = checkpoint_ref(new_config, thread_id)
        return {
            "checkpoint": ref,
            "configurable": to_jsonable(new_config.get("configurable", {})),
            "checkpoint_id": ref["checkpoint_id"] if ref else None,
        }

    async def refresh(
        self, thread_id: str, *, status: ThreadStatus | None = None, error: Any = None
    ) -> None:
        """Copy the latest checkpoint's values and interrupts onto the thread row."""
        snapshot = await self._agent.graph.aget_state(thread_config(thread_id))
        interrupts = pending_interrupts(snapshot)
        if status is None:
            status = "interrupted" if interrupts else "idle"
        await self._repo.save_state(
            thread_id,
            ThreadStateSnapshot(
                values=to_jsonable(snapshot.values) if snapshot.config else None,
                interrupts=interrupts,
                status=status,
                error=error,
            ),
        )


def check_thread_id(thread_id: str) -> str:
    try:
        return validate_thread_id(thread_id)
    except InvalidThreadId as exc:
        raise InvalidInput(str(exc), field="thread_id") from exc
