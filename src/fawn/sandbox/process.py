"""Running one command: a deadline, a kill of its whole process group, bounded output.

The command is started with :class:`subprocess.Popen` — the standard library's fork and
exec, which closes every descriptor but stdin/stdout/stderr and the ones named in
``pass_fds`` (``close_fds``) without running Python in the child, and uses ``vfork`` (so
its cost does not grow with the server's memory; switching uid in the child would forbid
that, which is why the sandbox changes uid with ``setpriv`` instead). It is deliberately not the event loop's subprocess support:
uvloop's spawn leaves every inheritable descriptor of the server open in the child (the
listening socket among them), so what the child gets would depend on the loop. Its exit
and its output are then awaited through a pidfd and the output pipe, with the loop's plain
``add_reader``, which every loop has.

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
import subprocess
from collections.abc import Awaitable, Callable, Mapping
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
# After a kill, how long to wait for the pipe to close before giving up on the last output.
_SETTLE_SECONDS = 1.0
# How often a watch (see run_process) is asked whether the command must stop.
WATCH_INTERVAL_SECONDS = 1.0

#: A check made while the command runs: a reason to kill it, or None to let it go on.
Watch = Callable[[], Awaitable[str | None]]

# What the model reads when the kernel ended the command for a limit (by signal number).
_LIMIT_SIGNALS = {
    signal.SIGXFSZ: "[the command was stopped: a file reached the size limit]",
    signal.SIGXCPU: "[the command was stopped: it used up its CPU time limit]",
}


def _limit_note(exit_code: int) -> str | None:
    """The note for a command the kernel ended at a limit: killed by the signal itself, or
    (under bubblewrap or a shell) exiting with 128 + its number."""
    for number, note in _LIMIT_SIGNALS.items():
        if exit_code in (-number, 128 + number):
            return note
    return None


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


class _Child:
    """A started command: its pid, a pidfd telling when it exits, its output pipe."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        stdout = popen.stdout
        if stdout is None:  # pragma: no cover - stdout is always a pipe here
            raise RuntimeError("stdout is not a pipe")
        self.output = stdout.fileno()
        os.set_blocking(self.output, False)
        self.pidfd = os.pidfd_open(self.pid)
        self.eof = False

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        while (code := self.popen.poll()) is None:
            await _readable(self.pidfd)
        return code

    async def pump(self, sink: _OutputSink) -> None:
        while not self.eof:
            await _readable(self.output)
            try:
                chunk = os.read(self.output, _READ_CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                self.eof = True
                return
            sink.feed(chunk)

    def kill_group(self) -> None:
        # The group outlives its leader while any member lives, so this is right even after
        # the leader has been reaped; ESRCH just means nothing is left.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)

    def close(self) -> None:
        """Reap (the group was killed, so this cannot take long) and close descriptors."""
        if self.popen.poll() is None:
            self.kill_group()
            self.popen.wait()
        os.close(self.pidfd)
        if self.popen.stdout is not None:
            self.popen.stdout.close()


async def _readable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


async def run_process(
    launch: Launch,
    *,
    time_limit: float,
    max_output_chars: int,
    mask: MaskStream,
    watch: Watch | None = None,
) -> CommandResult:
    """Run ``launch`` to completion or for ``time_limit`` seconds, whichever comes first.

    ``watch``, if given, is awaited every :data:`WATCH_INTERVAL_SECONDS` while the command
    runs; when it returns a reason, the command is killed and the reason ends its output.
    """
    capture = OutputCapture(max_output_chars)
    sink = _OutputSink(mask, capture)
    child = _spawn(launch)
    timed_out = False
    stopped: str | None = None
    try:
        try:
            async with asyncio.timeout(time_limit):
                stopped, exit_code = await _wait_and_pump(child, sink, watch)
        except TimeoutError:
            timed_out = True
            exit_code = TIMEOUT_EXIT_CODE
            child.kill_group()
            await _settle(child, sink)
        except BaseException:
            # Cancelled (or failed) while the command runs: it must not outlive the call.
            child.kill_group()
            await _settle(child, sink)
            raise
    finally:
        child.close()
    sink.close()
    if timed_out:
        capture.feed_line(f"[command timed out after {time_limit:g} s and was killed]")
    elif stopped is not None:
        capture.feed_line(stopped)
    elif note := _limit_note(exit_code):
        capture.feed_line(note)
    return CommandResult(
        exit_code=exit_code,
        output=capture.text(),
        timed_out=timed_out,
        truncated=capture.truncated,
    )


def _spawn(launch: Launch) -> _Child:
    """Start the command; it gets exactly the descriptors 0, 1, 2 and ``pass_fds``.

    Synchronous (fork and exec return before any await), so no cancellation can land
    between the start and the moment the caller holds the child.
    """
    try:
        popen = subprocess.Popen(
            launch.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(launch.env),
            cwd=launch.cwd,
            pass_fds=launch.pass_fds,
            close_fds=True,
            start_new_session=True,
        )
    except OSError as error:
        # strerror only: the filename attached to the error would be a host path.
        raise SandboxUnavailable(
            f"the command could not be started: {error.strerror}",
            retryable=error.errno in _TRANSIENT_ERRNOS,
        ) from error
    try:
        return _Child(popen)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)
        popen.wait()
        if popen.stdout is not None:
            popen.stdout.close()
        raise


async def _wait_and_pump(
    child: _Child, sink: _OutputSink, watch: Watch | None
) -> tuple[str | None, int]:
    """Until the command ends: its exit code, or the reason ``watch`` gave to stop it."""
    async with asyncio.TaskGroup() as group:
        pump = group.create_task(child.pump(sink))
        exited = group.create_task(child.wait())
        # ``wait`` returns when the command itself has ended; a background child can hold
        # the pipe long after. So when the command is done, end whatever it left running
        # in its group, which closes the pipe.
        while not exited.done():
            await asyncio.wait([exited], timeout=WATCH_INTERVAL_SECONDS if watch else None)
            if not exited.done() and watch is not None and (reason := await watch()):
                child.kill_group()
                await asyncio.wait([pump, exited], timeout=_SETTLE_SECONDS)
                pump.cancel()
                exited.cancel()
                code = child.returncode
                return reason, -signal.SIGKILL if code is None else code
        child.kill_group()
    return None, exited.result()


async def _settle(child: _Child, sink: _OutputSink) -> None:
    """After a kill: collect the last output and reap, within a grace period.

    A process that escaped the group (its own ``setsid``, possible only outside bubblewrap)
    may keep the pipe open; past the grace period it is left behind rather than waited for.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_SETTLE_SECONDS):
            await child.pump(sink)
            await child.wait()
