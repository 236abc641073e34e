"""How a run ended, as values (the gateway renders them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from langgraph.types import StateSnapshot

from fawn.store.runs import RunStatus

#: a run's final status as its stream and waiters see it; ``deleted`` after a rollback
EndStatus = RunStatus | Literal["deleted"]


@dataclass(frozen=True, kw_only=True)
class RunError:
    """Why a run failed: an exception's class name (or a fawn label) and a message."""

    error: str
    message: str

    @classmethod
    def of(cls, exc: BaseException) -> RunError:
        return cls(error=type(exc).__name__, message=str(exc) or type(exc).__name__)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What execution concluded, before finalization makes it durable."""

    status: RunStatus
    stop_reason: str | None = None
    error: RunError | None = None


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What ``runs.wait``/``join`` answer: the thread's state after the run, or its error."""

    state: StateSnapshot | None
    error: RunError | None = None


@dataclass(frozen=True, kw_only=True)
class RunEnded:
    """A run's stream ended without its own terminal events reaching the follower (they were
    never published, or the stream backend lost them): the durable record says how."""

    run_id: str
    status: EndStatus
    error: RunError | None = None
