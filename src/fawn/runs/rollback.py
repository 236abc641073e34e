"""Restoring a thread to before a run: its conversation state (the checkpoint) and its
files (``workspace/`` and ``outputs/``, from the pre-run snapshot)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from fawn.agent.graph import LeadAgent
from fawn.runs.threads import thread_config
from fawn.runs.workspace import WorkspaceEvidence
from fawn.store.checkpoints import Saver


class Rollback:
    def __init__(self, agent: LeadAgent, saver: Saver, files: WorkspaceEvidence) -> None:
        self._agent = agent
        self._saver = saver
        self._files = files

    async def restore(self, thread_id: str, run_id: str) -> None:
        """Make the newest checkpoint this run did not write the thread's latest again.

        The run's checkpoints carry its ``run_id`` in their metadata; the anchor is looked up
        only when a rollback happens. A thread with no earlier checkpoint is emptied.
        Idempotent: after a restore the newest checkpoint is a copy not written by the run.
        The files are put back as the pre-run snapshot holds them (idempotent too).
        """
        await self._files.restore(thread_id, run_id)
        anchor: RunnableConfig | None = None
        # closed before writing: a saver may hold its connection while listing
        listing = cast(
            AsyncGenerator[CheckpointTuple, None], self._saver.alist(thread_config(thread_id))
        )
        async with contextlib.aclosing(listing) as items:
            async for item in items:
                if item.metadata.get("run_id") != run_id:
                    anchor = item.config
                    break
        if anchor is None:
            await self._saver.adelete_thread(thread_id)
        else:
            await self._agent.graph.aupdate_state(anchor, None, as_node="__copy__")
