"""A run's evidence of its file work: the pre-run snapshot, the changes, what it presented,
and the delivery check; and restoring the pre-run files on rollback.

The snapshot before is taken when the run starts executing (recorded on disk: a rollback
restores it); the snapshot after is taken by finalization, which compares the two
(:mod:`fawn.evidence`). What the run presented is read from its own ``present_files``
calls as they end (a callback, like the journal's): files presented by earlier runs, or
pre-existing files presented without being changed, prove nothing about this run's output.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from fawn.agent.tools.names import PRESENT_FILES
from fawn.evidence import Changes, EvidenceError, EvidenceStore, RunSnapshot, SnapshotMissing
from fawn.sandbox.paths import SINGLE_USER, VIRTUAL_OUTPUTS, ThreadPaths

log = logging.getLogger(__name__)

OwnerOf = Callable[[str], Awaitable[str | None]]


class PresentedFiles(BaseCallbackHandler):
    """The paths this run's ``present_files`` calls presented (successful calls only)."""

    run_inline = True
    ignore_chain = True
    ignore_llm = True
    ignore_chat_model = True
    ignore_retriever = True
    ignore_retry = True

    def __init__(self) -> None:
        self.paths: list[str] = []

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if kwargs.get("name") != PRESENT_FILES:
            return
        update = getattr(output, "update", None)
        artifacts = update.get("artifacts") if isinstance(update, dict) else None
        if isinstance(artifacts, list):
            for path in artifacts:
                if isinstance(path, str) and path not in self.paths:
                    self.paths.append(path)


@dataclass(kw_only=True)
class RunEvidence:
    """What one run's evidence collects while it executes."""

    presented: PresentedFiles = field(default_factory=PresentedFiles)
    before: RunSnapshot | None = None
    #: the thread's ``user-data`` directory, found when the run started (finalization
    #: needs no database read for it)
    user_data: Path | None = None
    #: why there is no snapshot before (it failed: the run has no file evidence)
    unavailable: str | None = None


@dataclass(frozen=True, kw_only=True)
class Receipt:
    """The delivery receipt: what the run presented and produced under outputs/."""

    presented: list[str]
    produced: list[str]
    matched: list[str]
    satisfied: bool

    @property
    def unpresented(self) -> list[str]:
        return [p for p in self.produced if p not in self.matched]


def failure(exc: Exception) -> str:
    """What went wrong, for the journal (an OS error's message without its host path)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def receipt_of(changes: Changes | None, presented: list[str]) -> Receipt:
    """Produced: regular files under outputs/ the run created or whose content it changed."""
    produced: list[str] = []
    if changes is not None:
        for change in (*changes.added, *changes.modified):
            if (
                change.type == "file"
                and change.path.startswith(VIRTUAL_OUTPUTS + "/")
                and change.blob_before != change.blob_after
            ):
                produced.append(change.path)
    matched = [p for p in produced if p in presented]
    return Receipt(
        presented=list(presented),
        produced=produced,
        matched=matched,
        satisfied=len(matched) == len(produced),
    )


class WorkspaceEvidence:
    """Snapshots, changes and restores of threads' files (``None`` store: all disabled)."""

    def __init__(
        self,
        store: EvidenceStore | None,
        data_dir: Path,
        owner_of: OwnerOf,
        *,
        require_delivery: bool,
    ) -> None:
        self._store = store
        self._data_dir = data_dir
        self._owner_of = owner_of
        self.require_delivery = require_delivery and store is not None

    @property
    def enabled(self) -> bool:
        return self._store is not None

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    async def _user_data(self, thread_id: str) -> Path:
        owner = await self._owner_of(thread_id)
        return ThreadPaths.for_thread(self._data_dir, thread_id, owner or SINGLE_USER).root

    async def before(self, thread_id: str, run_id: str, evidence: RunEvidence) -> None:
        """Snapshot the thread's files as the run starts, and record it for a rollback.
        A failure leaves the run without file evidence (it is noted, the run goes on)."""
        if self._store is None:
            return
        store = self._store
        user_data = await self._user_data(thread_id)

        def take() -> RunSnapshot:
            thread = store.thread(user_data)
            snapshot = thread.snapshot()
            thread.record(run_id, snapshot)
            return snapshot

        try:
            evidence.before = await asyncio.to_thread(take)
            evidence.user_data = user_data
        except (OSError, EvidenceError) as exc:
            log.warning("run %s: the workspace snapshot failed: %s", run_id, exc)
            evidence.unavailable = f"the workspace snapshot failed: {failure(exc)}"

    async def changes(self, thread_id: str, evidence: RunEvidence) -> Changes | None:
        """What changed since the snapshot before (None: no snapshot before)."""
        if self._store is None or evidence.before is None or evidence.user_data is None:
            return None
        store, before, user_data = self._store, evidence.before, evidence.user_data

        def compare() -> Changes:
            thread = store.thread(user_data)
            changes = thread.changes(before, thread.snapshot())
            thread.prune()
            return changes

        return await asyncio.to_thread(compare)

    async def restore(self, thread_id: str, run_id: str) -> None:
        """Put the thread's files back as they were before ``run_id`` (no snapshot: the
        run never started executing, or evidence is off — nothing to restore)."""
        if self._store is None:
            return
        store = self._store
        user_data = await self._user_data(thread_id)

        def put_back() -> None:
            thread = store.thread(user_data)
            try:
                snapshot = thread.before(run_id)
            except SnapshotMissing:
                return
            thread.restore(snapshot)

        await asyncio.to_thread(put_back)
