"""The sandbox's exception tree.

```
SandboxError                 code, retryable
 ├── PathOutsideSandbox      path_outside_sandbox
 │    └── ForbiddenPath      forbidden_path        (refused to an HTTP client)
 ├── PathNotFound            path_not_found
 ├── ReadOnlyPath            read_only_path
 ├── SandboxUnavailable      sandbox_unavailable
 ├── InvalidThreadId         invalid_thread_id
 ├── InvalidFilename         invalid_filename
 ├── UploadTooLarge          upload_too_large
 ├── TooManyFiles            too_many_files
 ├── UnsafeUploadTarget      unsafe_upload_target
 └── NoSuchFile              file_not_found
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


class ForbiddenPath(PathOutsideSandbox):
    """A path an HTTP client asked for that leaves the thread's ``/mnt/user-data`` mounts."""

    code = "forbidden_path"


class InvalidFilename(SandboxError):
    """An upload name that reduces to nothing usable (empty, ``.``, ``..``, only separators)."""

    code = "invalid_filename"


class UploadTooLarge(SandboxError):
    """An uploaded file larger than ``uploads.max_file_bytes``; nothing of it is kept."""

    code = "upload_too_large"


class TooManyFiles(SandboxError):
    """More files in one upload request than ``uploads.max_files``."""

    code = "too_many_files"


class UnsafeUploadTarget(SandboxError):
    """The upload's name is taken by something that is not a regular file (a symlink, a directory)."""

    code = "unsafe_upload_target"


class NoSuchFile(SandboxError):
    """A file named by a request (an upload, an artifact) that does not exist as a regular file."""

    code = "file_not_found"
