"""Sandboxes on this machine: bubblewrap isolation, or (only if the operator opts in) none.

With ``bwrap`` installed every command runs in its own namespaces with only the thread's
``/mnt/user-data/{workspace,uploads,outputs}`` writable (see :mod:`fawn.sandbox.bwrap`).
Without it, commands are refused unless ``sandbox.allow_host_bash: true``; then they run
directly on the host, which is **not isolated** (see :class:`LocalSandbox`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from fawn.config.settings import SandboxSettings
from fawn.sandbox.base import CommandResult, Sandbox, SandboxProvider
from fawn.sandbox.bwrap import (
    Bind,
    BwrapSpec,
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

SANDBOX_ID_PREFIX = "local:"

_BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "dumb"}

_UNAVAILABLE = (
    "bubblewrap (bwrap) is not installed on this server, so commands cannot run isolated. "
    "Install bubblewrap, or set `sandbox.allow_host_bash: true` in the configuration to run "
    "commands directly on the host WITHOUT isolation."
)


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
    ) -> None:
        self._id = sandbox_id
        self._paths = paths
        self._settings = settings
        self._bwrap = bwrap
        self._system = system
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
        with self._launch(command) as launch:
            return await run_process(
                launch,
                time_limit=limit,
                max_output_chars=self._settings.max_output_chars,
                mask=self._policy.mask_stream(),
            )

    @contextlib.contextmanager
    def _launch(self, command: str) -> Iterator[Launch]:
        if self._bwrap is None:
            env = {**_BASE_ENV, "HOME": str(self._paths.workspace)}
            yield Launch(("/bin/sh", "-c", command), env, cwd=self._paths.workspace)
            return
        network = self._settings.allow_network
        with _data_descriptors(synthetic_etc(network=network)) as data_files:
            spec = BwrapSpec(
                bwrap=self._bwrap,
                system=self._system,
                mounts=self._mounts(),
                cwd=VIRTUAL_WORKSPACE,
                env={**_BASE_ENV, "HOME": VIRTUAL_WORKSPACE},
                network=network,
                data_files=data_files,
            )
            yield Launch(
                tuple(build_argv(spec, command)),
                _BASE_ENV,
                pass_fds=tuple(fd for fd, _ in data_files),
            )

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


@contextlib.contextmanager
def _data_descriptors(files: Mapping[str, str]) -> Iterator[tuple[tuple[int, str], ...]]:
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
                os.write(writer, content.encode())
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
