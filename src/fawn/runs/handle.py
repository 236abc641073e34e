"""The live side of a run: its task, cancel request and outcome (the record lives in the store)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

from fawn.runs.spec import RunSpec
from fawn.store.runs import RunStatus

CancelAction = Literal["interrupt", "rollback", "shutdown", "lease_lost"]


@dataclass(frozen=True, kw_only=True)
class RunOutcome:
    status: RunStatus | Literal["deleted"]
    values: Any = None
    error: dict[str, str] | None = None


@dataclass(kw_only=True, eq=False)
class RunHandle:
    run_id: str
    thread_id: str
    spec: RunSpec
    ahead: list[str]
    user_id: str | None = None
    task: asyncio.Task[None] | None = None
    cancel_action: CancelAction | None = None
    started: bool = False
    finalizing: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)
    outcome: RunOutcome | None = None

    def request_cancel(self, action: CancelAction) -> bool:
        """Cancel the task once; later requests do not change the first action."""
        if (
            self.cancel_action is not None
            or self.finalizing
            or self.task is None
            or self.task.done()
        ):
            return False
        self.cancel_action = action
        self.task.cancel()
        return True
