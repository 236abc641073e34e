"""The seams: what a sandbox is and how one is obtained for a thread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fawn.sandbox.paths import PathPolicy, ThreadPaths


@dataclass(frozen=True)
class CommandResult:
    """The outcome of one command.

    ``output`` is stdout and stderr interleaved as one stream, with host paths masked and
    capped in length (``truncated`` tells whether the middle was cut). A command that ran
    out of time was killed with its whole process tree: ``timed_out`` is set and the output
    ends with a line saying so.
    """

    exit_code: int
    output: str
    timed_out: bool = False
    truncated: bool = False


class Sandbox(Protocol):
    """Isolated command execution for one thread."""

    @property
    def id(self) -> str: ...

    @property
    def paths(self) -> ThreadPaths: ...

    @property
    def policy(self) -> PathPolicy: ...

    # ``timeout`` is the command's time limit, not the caller's: reaching it kills the
    # command and still returns a result (``timed_out=True``), which ``asyncio.timeout``
    # around the call could not do.
    async def execute(
        self,
        command: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c`` in ``/mnt/user-data/workspace``.

        ``timeout`` (seconds) overrides the configured default for this call.
        """
        ...


class SandboxProvider(Protocol):
    """Hands out one sandbox per thread and owns their lifetime."""

    async def acquire(self, thread_id: str) -> Sandbox:
        """The thread's sandbox (the same id on every call), creating its directories."""
        ...

    def get(self, sandbox_id: str) -> Sandbox | None:
        """A sandbox previously acquired and not yet released."""
        ...

    async def release(self, sandbox_id: str) -> None:
        """Forget the sandbox; the thread's files stay on disk. Unknown ids are ignored."""
        ...

    async def aclose(self) -> None:
        """Release every sandbox."""
        ...
