"""What a finished run did to its thread's files and what it delivered, as recorded by
finalization (the ``workspace_changes`` journal entry and the delivery receipt)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fawn.runs.errors import Conflict
from fawn.runs.service import RunService
from fawn.store.receipts import DeliveryReceipt, ReceiptRepository
from fawn.store.runs import ACTIVE

#: the journal entry finalization writes (``fawn.runs.finalization.RecordWorkspaceChanges``)
CHANGES_KIND = "workspace_changes"
NOT_RECORDED = "no changes were recorded for this run (it never executed, or it did not finish)"


@dataclass(frozen=True, kw_only=True)
class RunChanges:
    run_id: str
    thread_id: str
    #: False: no snapshot was taken (the run never executed, evidence is off, or it failed)
    recorded: bool
    reason: str | None
    added: list[dict[str, Any]]
    modified: list[dict[str, Any]]
    deleted: list[dict[str, Any]]
    receipt: DeliveryReceipt | None


class RunChangesQuery:
    def __init__(self, runs: RunService, receipts: ReceiptRepository) -> None:
        self._runs = runs
        self._receipts = receipts

    async def of(self, thread_id: str, run_id: str) -> RunChanges:
        """The run's changes (NotFound: no such run; Conflict: it has not finished)."""
        record = await self._runs.get(thread_id, run_id)
        if record.status in ACTIVE:
            raise Conflict(
                f"run {run_id} is {record.status}: its changes are recorded when it ends",
                retryable=True,
            )
        journal = await self._runs.journal(thread_id, run_id)
        data: dict[str, Any] = next(
            (e.data for e in reversed(journal) if e.kind == CHANGES_KIND),
            {
                "recorded": False,
                "reason": NOT_RECORDED,
            },
        )
        return RunChanges(
            run_id=run_id,
            thread_id=thread_id,
            recorded=bool(data.get("recorded")),
            reason=data.get("reason"),
            added=list(data.get("added") or []),
            modified=list(data.get("modified") or []),
            deleted=list(data.get("deleted") or []),
            receipt=await self._receipts.get(run_id),
        )
