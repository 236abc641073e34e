"""Where a thread's files live on the host, and the policy mapping virtual paths onto them.

The agent only ever sees virtual paths::

    /mnt/user-data/workspace   read-write   <thread>/user-data/workspace
    /mnt/user-data/uploads     read-write   <thread>/user-data/uploads
    /mnt/user-data/outputs     read-write   <thread>/user-data/outputs
    /mnt/skills                read-only    <skills_dir>

where ``<thread>`` is ``<data_dir>/users/<owner>/threads/<id>`` (``<data_dir>/threads/<id>``
for the single user of a server without authentication).

Inside bubblewrap those are the real mounts; for file tools running in the server process,
:class:`PathPolicy` performs the same mapping and refuses anything that escapes it, whether
by ``..``, by an absolute host path or by a symlink planted in a writable mount.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from fawn.sandbox.errors import (
    InvalidThreadId,
    PathNotFound,
    PathOutsideSandbox,
    ReadOnlyPath,
)
from fawn.sandbox.masking import HostPathMasker, MaskStream

VIRTUAL_USER_DATA = "/mnt/user-data"
VIRTUAL_WORKSPACE = "/mnt/user-data/workspace"
VIRTUAL_UPLOADS = "/mnt/user-data/uploads"
VIRTUAL_OUTPUTS = "/mnt/user-data/outputs"
VIRTUAL_SKILLS = "/mnt/skills"

# Canonical UUIDs (hyphenated or not) match this too, so one pattern covers both forms.
_THREAD_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def validate_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` if it is safe as a single directory name, else raise.

    Accepted: a UUID in its canonical text form, or 1-64 of ``A-Z a-z 0-9 _ -``.
    """
    if not _THREAD_ID.fullmatch(thread_id):
        raise InvalidThreadId(
            "thread id must be a UUID or 1-64 characters from A-Z, a-z, 0-9, '_' and '-'"
        )
    return thread_id


#: The owner of threads on a server without authentication (``fawn.store.scope.DEFAULT_USER``;
#: the two packages are siblings and may not import each other).
SINGLE_USER = "default"

_PLAIN_OWNER = re.compile(r"[A-Za-z0-9_-]{1,64}")


def owner_dir_name(owner: str) -> str:
    """A directory name for an owner: the id itself when it is a plain name (user ids are),
    else ``=`` and its SHA-256 (identities from a custom ``Auth`` handler can be anything;
    ``=`` never starts a plain name, so the two forms cannot collide)."""
    if _PLAIN_OWNER.fullmatch(owner):
        return owner
    return "=" + hashlib.sha256(owner.encode()).hexdigest()


@dataclass(frozen=True)
class ThreadPaths:
    """The host directories behind one thread's ``/mnt/user-data``."""

    thread_id: str
    root: Path
    workspace: Path
    uploads: Path
    outputs: Path

    @classmethod
    def for_thread(cls, data_dir: Path, thread_id: str, owner: str = SINGLE_USER) -> ThreadPaths:
        """``<data_dir>/users/<owner>/threads/<thread_id>/user-data/{workspace,uploads,outputs}``.

        The single user of a server without authentication keeps the layout that predates
        owners, ``<data_dir>/threads/<thread_id>/...``.
        """
        validate_thread_id(thread_id)
        base = Path(os.path.abspath(data_dir))
        if owner != SINGLE_USER:
            base = base / "users" / owner_dir_name(owner)
        root = base / "threads" / thread_id / "user-data"
        return cls(
            thread_id=thread_id,
            root=root,
            workspace=root / "workspace",
            uploads=root / "uploads",
            outputs=root / "outputs",
        )

    @property
    def thread_dir(self) -> Path:
        """``<...>/threads/<thread_id>``."""
        return self.root.parent

    def ensure(self) -> ThreadPaths:
        """Create the three directories if missing; return ``self``."""
        for directory in (self.workspace, self.uploads, self.outputs):
            directory.mkdir(parents=True, exist_ok=True)
        return self

    def as_state(self) -> dict[str, str]:
        """The thread's directories as the agent sees them, shaped for
        ``ThreadState.thread_data``: state goes to every client, and a host path there would
        tell browsers where the server keeps each user's files."""
        return {
            "workspace_path": VIRTUAL_WORKSPACE,
            "uploads_path": VIRTUAL_UPLOADS,
            "outputs_path": VIRTUAL_OUTPUTS,
        }


@dataclass(frozen=True)
class _Mount:
    virtual: str
    host: str
    resolved: str
    writable: bool
    # The user-data root is only a directory listing the three mounts; nothing below it
    # other than those mounts is reachable.
    exact_only: bool = False


def _normalize_virtual(path: str) -> str:
    """Make ``path`` absolute (relative to the workspace) and fold ``.``/``..`` lexically.

    ``..`` above ``/`` stays at ``/``, which is outside every mount, so climbing out fails later.
    """
    if "\0" in path:
        raise PathOutsideSandbox("path contains a NUL character")
    if not path.startswith("/"):
        path = f"{VIRTUAL_WORKSPACE}/{path}"
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class PathPolicy:
    """Maps virtual paths to host paths for one thread, refusing anything that escapes."""

    def __init__(self, paths: ThreadPaths, skills_dir: Path | None = None) -> None:
        self.paths = paths
        self.skills_dir = Path(os.path.abspath(skills_dir)) if skills_dir is not None else None
        # Resolved once: later symlink games on a mount root cannot widen the policy.
        mounts = [
            self._mount(VIRTUAL_USER_DATA, paths.root, writable=False, exact_only=True),
            self._mount(VIRTUAL_WORKSPACE, paths.workspace, writable=True),
            self._mount(VIRTUAL_UPLOADS, paths.uploads, writable=True),
            self._mount(VIRTUAL_OUTPUTS, paths.outputs, writable=True),
        ]
        if self.skills_dir is not None:
            mounts.append(self._mount(VIRTUAL_SKILLS, self.skills_dir, writable=False))
        self._mounts = tuple(mounts)
        self._masker = HostPathMasker(
            (host, mount.virtual) for mount in mounts for host in (mount.host, mount.resolved)
        )

    @staticmethod
    def _mount(virtual: str, host: Path, *, writable: bool, exact_only: bool = False) -> _Mount:
        return _Mount(virtual, str(host), os.path.realpath(host), writable, exact_only)

    def to_host(self, virtual: str, *, write: bool = False) -> Path:
        """The resolved host path behind ``virtual``.

        Relative paths are taken from ``/mnt/user-data/workspace``. Raises
        :class:`PathOutsideSandbox` when the path (after ``..`` folding and symlink
        resolution) leaves its mount, :class:`PathNotFound` for ``/mnt/skills`` without a
        skills directory, and :class:`ReadOnlyPath` for ``write=True`` on a read-only mount.
        The returned path need not exist.
        """
        normal = _normalize_virtual(virtual)
        mount = self._mount_of(normal)
        if write and not mount.writable:
            raise ReadOnlyPath(f"{normal} is read-only")
        relative = normal[len(mount.virtual) :].lstrip("/")
        # realpath resolves every existing component (symlinks included) and keeps the
        # not-yet-existing tail as written, which is what a later create would use.
        resolved = os.path.realpath(os.path.join(mount.host, relative) if relative else mount.host)
        if not _within(resolved, mount.resolved):
            raise PathOutsideSandbox(f"{normal} resolves to a location outside {mount.virtual}")
        return Path(resolved)

    def _mount_of(self, normal: str) -> _Mount:
        for mount in self._mounts:
            if normal == mount.virtual or (
                not mount.exact_only and normal.startswith(mount.virtual + "/")
            ):
                return mount
        if _within(normal, VIRTUAL_SKILLS):
            raise PathNotFound(f"{VIRTUAL_SKILLS} is not available: no skills are configured")
        # Echo the path, unless it is one of our host paths: that would confirm it to the caller.
        shown = "a host path" if self.mask(normal) != normal else normal
        raise PathOutsideSandbox(
            f"{shown} is outside the sandbox; use paths under {VIRTUAL_WORKSPACE}, "
            f"{VIRTUAL_UPLOADS}, {VIRTUAL_OUTPUTS} or {VIRTUAL_SKILLS}"
        )

    def to_virtual(self, host: Path) -> str:
        """The virtual path for a host path under one of the mounts (its plain or resolved form)."""
        text = os.path.abspath(host)
        candidates = sorted(
            ((prefix, mount) for mount in self._mounts for prefix in (mount.host, mount.resolved)),
            key=lambda item: len(item[0]),
            reverse=True,
        )
        for prefix, mount in candidates:
            if text == prefix:
                return mount.virtual
            if not mount.exact_only and text.startswith(prefix + "/"):
                return mount.virtual + text[len(prefix) :]
        raise PathOutsideSandbox("the path is not under any sandbox mount")

    def mask(self, text: str) -> str:
        """``text`` with every host mount root replaced by its virtual path."""
        return self._masker.mask(text)

    def mask_stream(self) -> MaskStream:
        """Like :meth:`mask`, for text that arrives in pieces."""
        return self._masker.stream()
