"""The sandbox's exception tree.

```
SandboxError                 code, retryable
 ├── PathOutsideSandbox      path_outside_sandbox
 ├── PathNotFound            path_not_found
 ├── ReadOnlyPath            read_only_path
 ├── SandboxUnavailable      sandbox_unavailable
 └── InvalidThreadId         invalid_thread_id
```

Messages are shown to the model and to users, so they only ever name *virtual* paths
(``/mnt/user-data/...``); a host path in a message would leak the server's layout.
"""

from __future__ import annotations


class SandboxError(Exception):
    """Root of every error raised by :mod:`fawn.sandbox`."""

    code: str = "sandbox_error"
    retryable: bool = False

    def __init__(self, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if retryable is not None:
            self.retryable = retryable


class PathOutsideSandbox(SandboxError):
    """A path that does not stay inside the thread's mounts (``..``, symlinks, host paths)."""

    code = "path_outside_sandbox"


class PathNotFound(SandboxError):
    """A virtual path that maps to nothing (e.g. ``/mnt/skills`` when no skills are set up)."""

    code = "path_not_found"


class ReadOnlyPath(SandboxError):
    """A write aimed at a read-only mount (``/mnt/skills``)."""

    code = "read_only_path"


class SandboxUnavailable(SandboxError):
    """Commands cannot run: the isolation they need is missing on this host."""

    code = "sandbox_unavailable"


class InvalidThreadId(SandboxError):
    """A thread id that is not safe to use as a directory name."""

    code = "invalid_thread_id"
