"""The lead agent's tools (names and arguments as in DeerFlow).

:func:`build_tools` returns them all; the middleware hides :data:`PLAN_MODE_TOOLS` outside
plan mode and :data:`VISION_TOOLS` for models without vision. Every path argument is a
virtual path (``/mnt/user-data/...``), and no result ever shows a host path.

Tools raise on failure (:class:`ToolError` subclasses, or :class:`fawn.sandbox.SandboxError`
for paths outside the sandbox and a missing bubblewrap); the tool-error middleware turns the
exception into a ``ToolMessage(status="error")`` carrying its message. They are async only:
drive the graph with ``ainvoke``/``astream``.
"""

from __future__ import annotations

from langchain_core.tools import BaseTool

from fawn.agent.tools.clarification import (
    CLARIFICATION_INTERRUPT,
    ClarificationRequest,
    ClarificationType,
    clarification_tool,
)
from fawn.agent.tools.errors import (
    EditMismatch,
    FileMissing,
    FileTooLarge,
    InvalidToolInput,
    NotPresentable,
    ToolError,
    WrongFileType,
)
from fawn.agent.tools.files import file_tools
from fawn.agent.tools.names import (
    ASK_CLARIFICATION,
    BASH,
    GLOB,
    GREP,
    LS,
    PLAN_MODE_TOOLS,
    PRESENT_FILES,
    READ_FILE,
    SANDBOX_TOOLS,
    STR_REPLACE,
    VIEW_IMAGE,
    VISION_TOOLS,
    WRITE_FILE,
    WRITE_TODOS,
)
from fawn.agent.tools.present_files import present_files_tool
from fawn.agent.tools.search import search_tools
from fawn.agent.tools.shell import bash_tool
from fawn.agent.tools.todos import TodoItem, todos_tool
from fawn.agent.tools.view_image import MAX_IMAGE_BYTES, load_image_b64, view_image_tool
from fawn.sandbox import SandboxProvider


def build_tools(sandbox: SandboxProvider) -> list[BaseTool]:
    """Every lead-agent tool, working in the sandboxes ``sandbox`` hands out per thread.

    Build the list once per provider and share it between runs: a tool finds its thread
    through ``runtime.context`` (a :class:`fawn.agent.context.RunContext`), and
    ``write_file``/``str_replace`` serialise edits of one file through locks the list
    shares. Building it costs about 0.1 s (tool schemas), which a run should not pay.
    """
    return [
        bash_tool(sandbox),
        *file_tools(sandbox),
        *search_tools(sandbox),
        present_files_tool(sandbox),
        view_image_tool(sandbox),
        clarification_tool(),
        todos_tool(),
    ]


__all__ = [
    "ASK_CLARIFICATION",
    "BASH",
    "CLARIFICATION_INTERRUPT",
    "GLOB",
    "GREP",
    "LS",
    "MAX_IMAGE_BYTES",
    "PLAN_MODE_TOOLS",
    "PRESENT_FILES",
    "READ_FILE",
    "SANDBOX_TOOLS",
    "STR_REPLACE",
    "VIEW_IMAGE",
    "VISION_TOOLS",
    "WRITE_FILE",
    "WRITE_TODOS",
    "ClarificationRequest",
    "ClarificationType",
    "EditMismatch",
    "FileMissing",
    "FileTooLarge",
    "InvalidToolInput",
    "NotPresentable",
    "TodoItem",
    "ToolError",
    "WrongFileType",
    "build_tools",
    "load_image_b64",
]
