"""Running one command: a deadline, a kill of its whole process group, bounded output.

The command is started in a new session, so its process group id is its pid; killing that
group takes every process it forked (unless one started a session of its own — under
bubblewrap those die with the sandbox's PID namespace anyway).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fawn.sandbox.base import CommandResult
from fawn.sandbox.capture import OutputCapture
from fawn.sandbox.errors import SandboxUnavailable
from fawn.sandbox.masking import MaskStream

TIMEOUT_EXIT_CODE = 124
"""The exit code reported for a command killed at its deadline (as ``timeout(1)`` does)."""

_READ_CHUNK = 64 * 1024
# Spawn failures that go away by themselves (process or descriptor limits, memory).
_TRANSIENT_ERRNOS = frozenset({errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE})
# How often to look whether the command has exited while its output pipe is still open.
_EXIT_POLL_SECONDS = 0.05
# After a kill, how long to wait for the pipe to close before giving up on the last output.
_SETTLE_SECONDS = 1.0


@dataclass(frozen=True)
class Launch:
    """Everything needed to start the process."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path | None = None
    pass_fds: tuple[int, ...] = ()


class _OutputSink:
    """Bytes in; decoded, masked and capped text out."""

    def __init__(self, mask: MaskStream, capture: OutputCapture) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._mask = mask
        self._capture = capture

    def feed(self, data: bytes) -> None:
        self._capture.feed(self._mask.feed(self._decoder.decode(data)))

    def close(self) -> None:
        rest = self._mask.feed(self._decoder.decode(b"", final=True))
        self._capture.feed(rest + self._mask.finish())


async def run_process(
    launch: Launch, *, time_limit: float, max_output_chars: int, mask: MaskStream
) -> CommandResult:
    """Run ``launch`` to completion or for ``time_limit`` seconds, whichever comes first."""
    capture = OutputCapture(max_output_chars)
    sink = _OutputSink(mask, capture)
    try:
        process = await _spawn(launch)
    except OSError as error:
        # strerror only: the filename attached to the error would be a host path.
        raise SandboxUnavailable(
            f"the command could not be started: {error.strerror}",
            retryable=error.errno in _TRANSIENT_ERRNOS,
        ) from error
    timed_out = False
    try:
        async with asyncio.timeout(time_limit):
            exit_code = await _wait_and_pump(process, sink)
    except TimeoutError:
        timed_out = True
        exit_code = TIMEOUT_EXIT_CODE
        _kill_group(process)
        await _settle(process, sink)
    except BaseException:
        # Cancelled (or failed) while the command runs: it must not outlive the call.
        _kill_group(process)
        await _settle(process, sink)
        raise
    sink.close()
    if timed_out:
        capture.feed_line(f"[command timed out after {time_limit:g} s and was killed]")
    return CommandResult(
        exit_code=exit_code,
        output=capture.text(),
        timed_out=timed_out,
        truncated=capture.truncated,
    )


async def _spawn(launch: Launch) -> asyncio.subprocess.Process:
    """Start the command. A cancellation that lands while asyncio is still connecting the
    pipes comes after the fork: asyncio would then kill the direct child only and wait for
    the command's whole tree to exit. So the start is shielded, and a cancelled start kills
    the group before the cancellation goes on."""
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *launch.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(launch.env),
            cwd=launch.cwd,
            pass_fds=launch.pass_fds,
            start_new_session=True,
        )
    )
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        await asyncio.wait([spawn])
        if not spawn.cancelled() and spawn.exception() is None:
            process = spawn.result()
            _kill_group(process)
            await process.wait()
        raise


async def _wait_and_pump(process: asyncio.subprocess.Process, sink: _OutputSink) -> int:
    async with asyncio.TaskGroup() as group:
        pump = group.create_task(_pump(process, sink))
        # ``Process.wait()`` only returns once the pipe is closed, and a background child
        # can hold the pipe long after the command itself has ended. So watch the return
        # code, and when the command is done, end whatever it left running in its group.
        while process.returncode is None and not pump.done():
            await asyncio.wait([pump], timeout=_EXIT_POLL_SECONDS)
        if process.returncode is not None:
            _kill_group(process)
    return await process.wait()


async def _pump(process: asyncio.subprocess.Process, sink: _OutputSink) -> None:
    stream = process.stdout
    if stream is None:  # pragma: no cover - stdout is always a pipe here
        raise RuntimeError("stdout is not a pipe")
    while chunk := await stream.read(_READ_CHUNK):
        sink.feed(chunk)


async def _settle(process: asyncio.subprocess.Process, sink: _OutputSink) -> None:
    """After a kill: collect the last output and reap, within a grace period.

    A process that escaped the group (its own ``setsid``, possible only outside bubblewrap)
    may keep the pipe open; past the grace period it is left behind rather than waited for.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_SETTLE_SECONDS):
            await _pump(process, sink)
            await process.wait()


def _kill_group(process: asyncio.subprocess.Process) -> None:
    # The group outlives its leader while any member lives, so this is right even after
    # the leader has been reaped; ESRCH just means nothing is left.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
