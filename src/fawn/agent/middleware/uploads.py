"""Uploads: this turn's new files are announced in the user's message.

Before the agent runs, the thread's uploads are listed (``fawn.sandbox.uploads``); the
files not already announced in an earlier human message are written into the last human
message as an ``<uploaded_files>`` block (``- name (size)`` lines with their virtual paths),
and ``uploaded_files`` is set to exactly that list (``[]`` when there is none).

The input sanitization middleware runs first, so a user cannot type a block of their own;
the blocks found in earlier messages are therefore the framework's.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import last_human_index, thread_sandbox
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import ThreadState, UploadedFile
from fawn.sandbox.base import SandboxProvider
from fawn.sandbox.uploads import list_uploads

OPEN_TAG = "<uploaded_files>"
CLOSE_TAG = "</uploaded_files>"
_BLOCK = re.compile(re.escape(OPEN_TAG) + r"(.*?)" + re.escape(CLOSE_TAG), re.DOTALL)
# Greedy name, so "report (1).pdf (2.0 KB)" yields "report (1).pdf".
_ENTRY = re.compile(r"^-\s+(.+)\s+\(([^()]*)\)\s*$")


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def uploads_block(files: Sequence[UploadedFile]) -> str:
    lines = [OPEN_TAG, "The user uploaded these files (read them with read_file):"]
    for file in files:
        lines.append(f"- {file['filename']} ({human_size(file['size'])})")
        lines.append(f"  Path: {file['path']}")
    lines.append(CLOSE_TAG)
    return "\n".join(lines)


def announced_files(text: str) -> set[str]:
    """File names listed in the ``<uploaded_files>`` blocks of ``text``."""
    names: set[str] = set()
    for block in _BLOCK.findall(text):
        for line in block.splitlines():
            match = _ENTRY.match(line.strip())
            if match:
                names.add(match.group(1).strip())
    return names


def strip_blocks(text: str) -> str:
    """``text`` without its ``<uploaded_files>`` blocks (what the user actually typed)."""
    return _BLOCK.sub("", text).strip()


def _with_block(message: HumanMessage, block: str) -> HumanMessage:
    content = message.content
    if isinstance(content, str):
        new: Any = f"{block}\n\n{content}" if content else block
    else:
        new = [{"type": "text", "text": block}, *content]
    return message.model_copy(update={"content": new})


def _announced_in(messages: Iterable[AnyMessage]) -> set[str]:
    names: set[str] = set()
    for message in messages:
        if isinstance(message, HumanMessage):
            names |= announced_files(message.text)
    return names


class UploadsMiddleware(ChainMiddleware):
    # After sanitization, which would escape the block, and the sandbox, whose directories
    # are listed here.
    placement = Placement(
        name="uploads",
        stage=Stage.RESOURCES,
        after=frozenset({"input_sanitization", "sandbox"}),
    )

    def __init__(self, provider: SandboxProvider) -> None:
        super().__init__()
        self._provider = provider

    async def abefore_agent(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        sandbox = await thread_sandbox(self._provider, state, runtime)
        files = await asyncio.to_thread(list_uploads, sandbox.paths)
        return self._update(state["messages"], files)

    @staticmethod
    def _update(messages: list[AnyMessage], files: list[UploadedFile]) -> dict[str, Any]:
        last = last_human_index(messages)
        if last is None:
            return {"uploaded_files": []}
        # The last message counts too: a run without new input must not announce twice.
        shown = _announced_in(messages)
        new = [f for f in files if f["filename"] not in shown]
        if not new:
            return {"uploaded_files": []}
        message = messages[last]
        assert isinstance(message, HumanMessage)
        return {"uploaded_files": new, "messages": [_with_block(message, uploads_block(new))]}
