"""Sandboxes on this machine: bubblewrap isolation, or (only if the operator opts in) none.

With ``bwrap`` installed every command runs in its own namespaces with only the thread's
``/mnt/user-data/{workspace,uploads,outputs}`` writable (see :mod:`fawn.sandbox.bwrap`).
Without it, commands are refused unless ``sandbox.allow_host_bash: true``; then they run
directly on the host, which is **not isolated** (see :class:`LocalSandbox`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fawn.config.settings import SandboxSettings
from fawn.sandbox.base import CommandResult, Sandbox, SandboxProvider
from fawn.sandbox.bwrap import (
    Bind,
    BwrapSpec,
    Rlimits,
    Symlink,
    build_argv,
    host_system_layout,
    synthetic_etc,
)
from fawn.sandbox.errors import SandboxUnavailable
from fawn.sandbox.paths import (
    SINGLE_USER,
    VIRTUAL_OUTPUTS,
    VIRTUAL_SKILLS,
    VIRTUAL_UPLOADS,
    VIRTUAL_WORKSPACE,
    PathPolicy,
    ThreadPaths,
    validate_thread_id,
)
from fawn.sandbox.process import Launch, run_process
from fawn.sandbox.quota import Unreachable, grant_search, survey
from fawn.sandbox.seccomp import filter_program

SANDBOX_ID_PREFIX = "local:"

_BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "dumb"}

logger = logging.getLogger(__name__)

_UNAVAILABLE = (
    "bubblewrap (bwrap) is not installed on this server, so commands cannot run isolated. "
    "Install bubblewrap, or set `sandbox.allow_host_bash: true` in the configuration to run "
    "commands directly on the host WITHOUT isolation."
)


_MIB = 1024 * 1024


@dataclass(frozen=True)
class Hardening:
    """What every isolated command runs under, found once per provider.

    ``uid``: the host uid (and gid) commands run as — ``sandbox.run_as_uid`` when the server
    runs as root, None (the server's own, already unprivileged) otherwise. The switch is made
    by ``setpriv`` (``setpriv_path``) just before bubblewrap: switching in the forked child
    would make Python fork the whole server instead of ``vfork``-ing it.
    """

    seccomp: bytes
    prlimit: str
    uid: int | None
    setpriv: str | None

    @classmethod
    def load(cls, settings: SandboxSettings, bwrap: str) -> Hardening:
        """Raises :class:`SandboxUnavailable` when part of it cannot be had on this host."""
        _check_executable(bwrap)
        prlimit = _util_linux("prlimit", "resource limits")
        uid = settings.run_as_uid if os.geteuid() == 0 else None
        setpriv = _util_linux("setpriv", "an unprivileged uid") if uid is not None else None
        return cls(seccomp=filter_program(), prlimit=prlimit, uid=uid, setpriv=setpriv)

    def wrap(self, argv: list[str]) -> tuple[str, ...]:
        """``argv`` run as the sandbox's uid (unchanged when the server is not root)."""
        if self.uid is None or self.setpriv is None:
            return tuple(argv)
        uid = str(self.uid)
        switch = [self.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
        return (*switch, *argv)


def _check_executable(program: str) -> None:
    """``program`` must be a native executable: ``setpriv`` (like ``execvp``) would run
    anything else as a shell script."""
    try:
        with open(program, "rb") as file:
            magic = file.read(4)
    except OSError as error:
        raise SandboxUnavailable(f"the command could not be started: {error.strerror}") from None
    if magic != b"\x7fELF":
        raise SandboxUnavailable("the command could not be started: Exec format error")


def _util_linux(program: str, purpose: str) -> str:
    path = shutil.which(program)
    if path is None or not path.startswith(("/usr/", "/bin/")):
        raise SandboxUnavailable(
            f"{program} (from util-linux) is not installed on this server, so commands "
            f"cannot run with {purpose}; install util-linux"
        )
    return path


class LocalSandbox:
    """One thread's sandbox on this machine.

    With bubblewrap (``isolated``) a command sees only the thread's mounts and no network
    unless allowed. Without it, and only with ``allow_host_bash``,
    the command runs as the server's user directly on the host, in the workspace directory,
    with the same reduced environment, timeout and output cap — but it can read and write
    anything that user can: this mode is NOT isolated and is meant for trusted, local use.
    """

    def __init__(
        self,
        *,
        sandbox_id: str,
        paths: ThreadPaths,
        settings: SandboxSettings,
        bwrap: str | None,
        system: tuple[Bind | Symlink, ...],
        data_dir: Path,
        hardening: Callable[[], Hardening],
        gate: asyncio.Semaphore,
    ) -> None:
        self._id = sandbox_id
        self._paths = paths
        self._settings = settings
        self._bwrap = bwrap
        self._system = system
        self._hardening = hardening
        self._gate = gate
        self._data_dir = data_dir
        self._reachable = False
        self._policy = PathPolicy(paths, settings.skills_dir)

    @property
    def id(self) -> str:
        return self._id

    @property
    def paths(self) -> ThreadPaths:
        return self._paths

    @property
    def policy(self) -> PathPolicy:
        return self._policy

    @property
    def isolated(self) -> bool:
        """Whether commands run under bubblewrap."""
        return self._bwrap is not None

    async def execute(
        self,
        command: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the command's limit; see Sandbox
    ) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c`` in the workspace.

        Raises :class:`SandboxUnavailable` when bubblewrap is missing and host execution is
        not allowed.
        """
        if self._bwrap is None and not self._settings.allow_host_bash:
            raise SandboxUnavailable(_UNAVAILABLE)
        limit = self._settings.timeout_seconds if timeout is None else timeout
        async with self._gate:
            if self._bwrap is None:
                env = {**_BASE_ENV, "HOME": str(self._paths.workspace)}
                launch = Launch(("/bin/sh", "-c", command), env, cwd=self._paths.workspace)
                return await run_process(
                    launch,
                    time_limit=limit,
                    max_output_chars=self._settings.max_output_chars,
                    mask=self._policy.mask_stream(),
                )
            return await self._execute_isolated(self._bwrap, command, limit)

    async def _execute_isolated(self, bwrap: str, command: str, limit: float) -> CommandResult:
        hardening = self._hardening()
        limits = self._settings.limits
        quota = limits.disk_quota_mib * _MIB
        roots = (self._paths.workspace, self._paths.uploads, self._paths.outputs)
        if hardening.uid is not None and not self._reachable:
            await asyncio.to_thread(self._make_reachable, hardening.uid)
        before = await asyncio.to_thread(survey, roots, hardening.uid)
        left = max(quota - before.bytes, 0) if before.complete else 0
        # No file may outgrow what is left of the quota; but at least a small one may be
        # written, so that a thread at its quota can still work its way out of it.
        file_size = min(limits.file_size_mib * _MIB, max(left, _MIB))
        rlimits = Rlimits(
            address_space=limits.memory_mib * _MIB,
            processes=limits.processes,
            cpu_seconds=limits.cpu_seconds,
            file_size=file_size,
            open_files=limits.open_files,
        )

        # A thread with many files takes long to measure: the watch then skips turns, so
        # that measuring never takes more than a tenth of the command's time.
        next_survey = 0.0

        async def watch() -> str | None:
            nonlocal next_survey
            started = time.monotonic()
            if started < next_survey:
                return None
            now = await asyncio.to_thread(survey, roots)
            next_survey = started + 10 * (time.monotonic() - started)
            if now.complete and now.bytes <= quota:
                return None
            return (
                f"[the command was stopped: the thread's files reached its disk quota of "
                f"{limits.disk_quota_mib} MiB; delete files to make room]"
            )

        with self._launch(bwrap, command, hardening, rlimits) as launch:
            result = await run_process(
                launch,
                time_limit=limit,
                max_output_chars=self._settings.max_output_chars,
                mask=self._policy.mask_stream(),
                watch=watch,
            )
        _raise_if_not_started(result)
        if (
            not before.complete
            or before.bytes >= quota
            or rlimits.file_size < limits.file_size_mib * _MIB
        ):
            after = await asyncio.to_thread(survey, roots)
            if not after.complete or after.bytes >= quota:
                note = (
                    f"[the thread's files are at its disk quota of {limits.disk_quota_mib} MiB: "
                    "writing fails until files are deleted]"
                )
                if note not in result.output:
                    result = dataclasses.replace(result, output=_with_line(result.output, note))
        return result

    def _make_reachable(self, uid: int) -> None:
        try:
            grant_search(self._data_dir, self._paths.root, uid)
            skills = self._policy.skills_dir
            if skills is not None and skills.is_dir():
                grant_search(skills, skills, uid)
        except Unreachable as error:
            # The message reaches the model: the host path goes to the log only.
            logger.error(
                "sandbox uid %d cannot search %s (above the data or skills directory); "
                "make it searchable (chmod o+x) or move the directory",
                uid,
                error.directory,
            )
            raise SandboxUnavailable(
                f"the sandbox's uid ({uid}) cannot reach the thread's files: a directory "
                "above the server's data or skills directory is not searchable by other "
                "users (the server's log names it); the operator must make it searchable "
                "or move the data directory"
            ) from None
        self._reachable = True

    @contextlib.contextmanager
    def _launch(
        self, bwrap: str, command: str, hardening: Hardening, rlimits: Rlimits
    ) -> Iterator[Launch]:
        network = self._settings.allow_network
        files = synthetic_etc(network=network)
        with (
            _data_descriptors(files) as data_files,
            _data_descriptors({"seccomp": hardening.seccomp}) as seccomp,
        ):
            spec = BwrapSpec(
                bwrap=bwrap,
                system=self._system,
                mounts=self._mounts(),
                cwd=VIRTUAL_WORKSPACE,
                env={**_BASE_ENV, "HOME": VIRTUAL_WORKSPACE},
                network=network,
                data_files=data_files,
                seccomp_fd=seccomp[0][0],
                rlimits=rlimits,
                prlimit=hardening.prlimit,
                tmp_bytes=self._settings.limits.tmp_mib * _MIB,
            )
            fds = [fd for fd, _ in data_files] + [seccomp[0][0]]
            yield Launch(hardening.wrap(build_argv(spec, command)), _BASE_ENV, pass_fds=tuple(fds))

    def _mounts(self) -> tuple[Bind, ...]:
        mounts = [
            Bind(str(self._paths.workspace), VIRTUAL_WORKSPACE, writable=True),
            Bind(str(self._paths.uploads), VIRTUAL_UPLOADS, writable=True),
            Bind(str(self._paths.outputs), VIRTUAL_OUTPUTS, writable=True),
        ]
        skills = self._policy.skills_dir
        if skills is not None:
            mounts.append(Bind(str(skills), VIRTUAL_SKILLS, optional=True))
        return tuple(mounts)


def _raise_if_not_started(result: CommandResult) -> None:
    """Raise :class:`SandboxUnavailable` when the command never ran: ``setpriv`` could not
    execute bubblewrap, or bubblewrap could not set the sandbox up (no user namespaces for
    the uid...). Their messages name host paths: the log gets them, the caller the reason."""
    first = result.output.split("\n", 1)[0]
    if result.exit_code == 127 and first.startswith("setpriv: failed to execute "):
        logger.error("sandbox: %s", first)
        reason = first.rsplit(": ", 1)[-1]
        raise SandboxUnavailable(f"the command could not be started: {reason}")
    if result.exit_code == 1 and first.startswith("bwrap: "):
        logger.error("sandbox: %s", first)
        reason = first.rsplit(": ", 1)[-1]
        raise SandboxUnavailable(f"the sandbox could not be set up: {reason}")


def _with_line(output: str, line: str) -> str:
    return f"{output}{'' if output.endswith(chr(10)) or not output else chr(10)}{line}\n"


@contextlib.contextmanager
def _data_descriptors(
    files: Mapping[str, str | bytes],
) -> Iterator[tuple[tuple[int, str], ...]]:
    """One pipe per file, already holding its content, for bwrap's ``--ro-bind-data``.

    The contents are far below a pipe's buffer, so writing before bwrap starts cannot block.
    """
    readers: list[int] = []
    try:
        entries: list[tuple[int, str]] = []
        for dest, content in files.items():
            reader, writer = os.pipe()
            readers.append(reader)
            try:
                data = content.encode() if isinstance(content, str) else content
                os.write(writer, data)
            finally:
                os.close(writer)
            entries.append((reader, dest))
        yield tuple(entries)
    finally:
        for reader in readers:
            os.close(reader)


#: Finds the owner of a thread (its files live under the owner's directory).
OwnerOf = Callable[[str], Awaitable[str | None]]


class LocalSandboxProvider:
    """One :class:`LocalSandbox` per thread, in the thread's directory under its owner's
    (``owner_of``; without it, or for an unknown thread, the single-user layout)."""

    def __init__(
        self, data_dir: Path, settings: SandboxSettings, owner_of: OwnerOf | None = None
    ) -> None:
        self._data_dir = Path(os.path.abspath(data_dir))
        self._settings = settings
        self._owner_of = owner_of
        self._bwrap = shutil.which(settings.bwrap_path)
        self._system = host_system_layout() if self._bwrap is not None else ()
        self._sandboxes: dict[str, LocalSandbox] = {}
        self._gate = asyncio.Semaphore(settings.limits.max_concurrent)
        self._hardening: Hardening | None = None

    def hardening(self) -> Hardening:
        """The seccomp filter, ``prlimit`` and uid commands run under (loaded on first use;
        raises :class:`SandboxUnavailable`, and is tried again, when it cannot be had)."""
        if self._hardening is None:
            self._hardening = Hardening.load(self._settings, self._bwrap or "bwrap")
        return self._hardening

    @property
    def isolated(self) -> bool:
        """Whether commands run under bubblewrap (else refused, or on the host if allowed)."""
        return self._bwrap is not None

    async def acquire(self, thread_id: str) -> LocalSandbox:
        """The thread's sandbox (id ``local:<thread_id>``), creating its directories."""
        validate_thread_id(thread_id)
        sandbox_id = SANDBOX_ID_PREFIX + thread_id
        existing = self._sandboxes.get(sandbox_id)
        owner = await self._owner_of(thread_id) if self._owner_of is not None else None
        paths = ThreadPaths.for_thread(self._data_dir, thread_id, owner or SINGLE_USER)
        await asyncio.to_thread(paths.ensure)
        if existing is not None and existing.paths == paths:
            return existing
        sandbox = LocalSandbox(
            sandbox_id=sandbox_id,
            paths=paths,
            settings=self._settings,
            bwrap=self._bwrap,
            system=self._system,
            data_dir=self._data_dir,
            hardening=self.hardening,
            gate=self._gate,
        )
        self._sandboxes[sandbox_id] = sandbox
        return sandbox

    def get(self, sandbox_id: str) -> LocalSandbox | None:
        return self._sandboxes.get(sandbox_id)

    async def release(self, sandbox_id: str) -> None:
        self._sandboxes.pop(sandbox_id, None)

    async def aclose(self) -> None:
        self._sandboxes.clear()


if TYPE_CHECKING:
    # Let the type checker prove the local classes implement the protocols.
    def _conforms(
        provider: LocalSandboxProvider, sandbox: LocalSandbox
    ) -> tuple[SandboxProvider, Sandbox]:
        return provider, sandbox
