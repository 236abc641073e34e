"""Per-thread isolated command execution and the virtual-path policy.

Depends only on :mod:`fawn.config` and the standard library.
"""

from fawn.sandbox.base import CommandResult, Sandbox, SandboxProvider
from fawn.sandbox.errors import (
    InvalidThreadId,
    PathNotFound,
    PathOutsideSandbox,
    ReadOnlyPath,
    SandboxError,
    SandboxUnavailable,
)
from fawn.sandbox.local import LocalSandbox, LocalSandboxProvider
from fawn.sandbox.paths import (
    VIRTUAL_OUTPUTS,
    VIRTUAL_SKILLS,
    VIRTUAL_UPLOADS,
    VIRTUAL_USER_DATA,
    VIRTUAL_WORKSPACE,
    PathPolicy,
    ThreadPaths,
    validate_thread_id,
)
from fawn.sandbox.process import TIMEOUT_EXIT_CODE

__all__ = [
    "TIMEOUT_EXIT_CODE",
    "VIRTUAL_OUTPUTS",
    "VIRTUAL_SKILLS",
    "VIRTUAL_UPLOADS",
    "VIRTUAL_USER_DATA",
    "VIRTUAL_WORKSPACE",
    "CommandResult",
    "InvalidThreadId",
    "LocalSandbox",
    "LocalSandboxProvider",
    "PathNotFound",
    "PathOutsideSandbox",
    "PathPolicy",
    "ReadOnlyPath",
    "Sandbox",
    "SandboxError",
    "SandboxProvider",
    "SandboxUnavailable",
    "ThreadPaths",
    "validate_thread_id",
]
