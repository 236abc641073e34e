"""Errors raised by the lead agent's tools.

```
AgentError (fawn.agent.errors)
 └── ToolError                 tool_error
      ├── InvalidToolInput     invalid_tool_input   arguments that cannot work (bad regex, range)
      ├── FileMissing          file_not_found       nothing at the path
      ├── WrongFileType        wrong_file_type      a directory, a binary file, not an image...
      ├── FileTooLarge         file_too_large
      ├── EditMismatch         edit_mismatch        str_replace's old_str missing or ambiguous
      └── NotPresentable       not_presentable      present_files outside the outputs directory
```

Tools raise instead of returning error text: the tool-error middleware turns any exception
into a ``ToolMessage(status="error")``. Path checks raise :class:`fawn.sandbox.SandboxError`
subclasses unchanged. Every message names virtual paths only and says what to do instead,
because the model reads it. ``ToolError`` is also a LangChain ``ToolException``.
"""

from __future__ import annotations

import errno

from langchain_core.tools import ToolException

from fawn.agent.errors import AgentError


class ToolError(AgentError, ToolException):
    """Root of the tools' errors."""

    code = "tool_error"


class InvalidToolInput(ToolError):
    code = "invalid_tool_input"


class FileMissing(ToolError):
    code = "file_not_found"


class WrongFileType(ToolError):
    code = "wrong_file_type"


class FileTooLarge(ToolError):
    code = "file_too_large"


class EditMismatch(ToolError):
    code = "edit_mismatch"


class NotPresentable(ToolError):
    code = "not_presentable"


def from_os_error(error: OSError, virtual: str) -> ToolError:
    """A tool error for ``error`` that names ``virtual``.

    ``str(error)`` is never used: it carries the host path.
    """
    if isinstance(error, FileNotFoundError):
        return FileMissing(f"{virtual} does not exist")
    if isinstance(error, IsADirectoryError):
        return WrongFileType(f"{virtual} is a directory, not a file")
    if isinstance(error, NotADirectoryError):
        return WrongFileType(f"a component of {virtual} is a file, not a directory")
    if isinstance(error, PermissionError):
        return ToolError(f"permission denied: {virtual}")
    if error.errno == errno.ELOOP:
        return ToolError(f"{virtual} changed into a symbolic link while being opened; retry")
    reason = error.strerror or type(error).__name__
    return ToolError(f"{virtual}: {reason}")
