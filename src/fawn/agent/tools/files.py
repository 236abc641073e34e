"""``ls``, ``read_file``, ``write_file`` and ``str_replace``: files in the thread's mounts.

The work happens on the host, in a worker thread, through :mod:`fawn.agent.tools.hostfs`
(resolve, then open without following links). Results name virtual paths only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from langchain_core.tools import BaseTool, tool

from fawn.agent.tools.access import RunToolRuntime, thread_sandbox
from fawn.agent.tools.errors import EditMismatch, InvalidToolInput
from fawn.agent.tools.hostfs import (
    WriteLocks,
    decode_text,
    open_directory,
    read_bytes,
    resolve,
    walk,
    write_bytes,
)
from fawn.agent.tools.names import LS, READ_FILE, STR_REPLACE, WRITE_FILE
from fawn.sandbox import PathPolicy, SandboxProvider

#: Largest file ``read_file`` and ``str_replace`` load.
MAX_TEXT_FILE_BYTES = 16 * 1024 * 1024
#: Longest text ``read_file`` returns; the rest is cut with a marker saying how to go on.
MAX_READ_CHARS = 50_000
LS_MAX_DEPTH = 2
LS_MAX_ENTRIES = 500
#: Directories listed but not descended into by ``ls``, ``glob`` and ``grep``.
NOISY_DIRECTORIES = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", ".tox", ".fawn"}
)  # fmt: skip

_SUFFIX = {"dir": "/", "link": "@", "file": "", "other": ""}
_TOO_LARGE_HINT = "; use bash (head, tail, sed -n, grep) to read parts of it"


def list_directory(policy: PathPolicy, path: str) -> str:
    """Entries up to two levels below ``path``, one virtual path per line, depth first.

    Directories end with ``/`` and symbolic links with ``@`` (never followed).
    """
    target = resolve(policy, path)
    root = open_directory(target, policy)
    lines: list[str] = []
    base = target.virtual.rstrip("/")
    try:
        with contextlib.closing(walk(root, max_depth=LS_MAX_DEPTH, prune=NOISY_DIRECTORIES)) as it:
            for entry in it:
                if len(lines) == LS_MAX_ENTRIES:
                    lines.append(
                        f"[listing stopped after {LS_MAX_ENTRIES} entries; "
                        "list a subdirectory, or use glob, to see more]"
                    )
                    break
                lines.append(f"{base}/{entry.relative}{_SUFFIX[entry.kind]}")
    finally:
        os.close(root)
    return "\n".join(lines) if lines else f"(empty directory: {target.virtual})"


def _split_lines(text: str) -> list[str]:
    """Lines with their ``\\n``, numbered as editors and ``sed -n`` do (only ``\\n`` ends one)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _check_range(start_line: int | None, end_line: int | None) -> None:
    if start_line is not None and start_line < 1:
        raise InvalidToolInput("start_line must be 1 or more (lines are numbered from 1)")
    if end_line is not None and end_line < 1:
        raise InvalidToolInput("end_line must be 1 or more (lines are numbered from 1)")
    if start_line is not None and end_line is not None and end_line < start_line:
        raise InvalidToolInput(f"end_line ({end_line}) is before start_line ({start_line})")


def _cap(text: str, first_line: int) -> str:
    if len(text) <= MAX_READ_CHARS:
        return text
    cut = text[:MAX_READ_CHARS]
    if "\n" not in cut:
        return (
            f"{cut}\n[truncated: line {first_line} alone is longer than {MAX_READ_CHARS} "
            "characters; use bash (e.g. `cut -c`, `fold`) to read it in parts]"
        )
    cut = cut[: cut.rindex("\n") + 1]
    next_line = first_line + cut.count("\n")
    return (
        f"{cut}[truncated: {len(text)} characters, the first {len(cut)} shown; "
        f"continue with start_line={next_line}]"
    )


def read_text(policy: PathPolicy, path: str, start_line: int | None, end_line: int | None) -> str:
    """The text of ``path``, or its lines ``start_line``..``end_line`` (1-based, inclusive)."""
    _check_range(start_line, end_line)
    target = resolve(policy, path)
    data = read_bytes(target, policy, limit=MAX_TEXT_FILE_BYTES, hint=_TOO_LARGE_HINT)
    text = decode_text(data, target.virtual)
    if not text:
        return f"(empty file: {target.virtual})"
    if start_line is None and end_line is None:
        return _cap(text, 1)
    lines = _split_lines(text)
    start = start_line or 1
    if start > len(lines):
        raise InvalidToolInput(
            f"start_line {start} is past the end of {target.virtual}, which has {len(lines)} lines"
        )
    end = min(end_line or len(lines), len(lines))
    return _cap("".join(lines[start - 1 : end]), start)


def write_text(policy: PathPolicy, locks: WriteLocks, path: str, content: str, append: bool) -> str:
    target = resolve(policy, path, write=True)
    with locks.for_path(target.host):
        write_bytes(target, policy, content.encode("utf-8", "replace"), append=append)
    verb = "Appended" if append else "Wrote"
    return f"{verb} {len(content)} characters to {target.virtual}"


def replace_text(
    policy: PathPolicy,
    locks: WriteLocks,
    path: str,
    old_str: str,
    new_str: str,
    replace_all: bool,
) -> str:
    if not old_str:
        raise InvalidToolInput(
            "old_str is empty; give the exact text to replace (use write_file to write a whole file)"
        )
    target = resolve(policy, path, write=True)
    with locks.for_path(target.host):
        data = read_bytes(target, policy, limit=MAX_TEXT_FILE_BYTES, hint=_TOO_LARGE_HINT)
        text = decode_text(data, target.virtual)
        count = text.count(old_str)
        if count == 0:
            raise EditMismatch(
                f"old_str was not found in {target.virtual}. It must match the file exactly, "
                "including whitespace and indentation: read the file and copy the text"
            )
        if count > 1 and not replace_all:
            raise EditMismatch(
                f"old_str appears {count} times in {target.virtual}; include more surrounding "
                "text to make it unique, or set replace_all to true to replace every occurrence"
            )
        write_bytes(target, policy, text.replace(old_str, new_str).encode("utf-8", "replace"))
    return f"Replaced {count} occurrence{'' if count == 1 else 's'} in {target.virtual}"


def file_tools(provider: SandboxProvider) -> list[BaseTool]:
    """``ls``, ``read_file``, ``write_file`` and ``str_replace`` for the run's thread."""
    locks = WriteLocks()

    @tool(LS, parse_docstring=True)
    async def ls(description: str, path: str, runtime: RunToolRuntime) -> str:
        """List the contents of a directory up to 2 levels deep, one path per line.

        Directories end with `/`, symbolic links with `@`.

        Args:
            description: Explain why you are listing this directory, in a few words. ALWAYS PROVIDE THIS PARAMETER FIRST.
            path: The **absolute** path to the directory to list, e.g. /mnt/user-data/workspace.
        """
        policy = (await thread_sandbox(provider, runtime)).policy
        return policy.mask(await asyncio.to_thread(list_directory, policy, path))

    @tool(READ_FILE, parse_docstring=True)
    async def read_file(
        description: str,
        path: str,
        runtime: RunToolRuntime,
        start_line: int | None = None,
        end_line: int | None = None,
    ) -> str:
        """Read the contents of a text file. Use this to examine source code, configuration files, logs, or any text-based file.

        Args:
            description: Explain why you are reading this file, in a few words. ALWAYS PROVIDE THIS PARAMETER FIRST.
            path: The **absolute** path to the file to read.
            start_line: Optional first line to read (1-indexed, inclusive). Omit to start at the first line.
            end_line: Optional last line to read (1-indexed, inclusive). Omit to read through the last line.
        """
        policy = (await thread_sandbox(provider, runtime)).policy
        text = await asyncio.to_thread(read_text, policy, path, start_line, end_line)
        return policy.mask(text)

    @tool(WRITE_FILE, parse_docstring=True)
    async def write_file(
        description: str, path: str, content: str, runtime: RunToolRuntime, append: bool = False
    ) -> str:
        """Write text content to a file, creating missing parent directories. By default this overwrites the file; set append to true to add to its end instead.

        Args:
            description: Explain why you are writing this file, in a few words. ALWAYS PROVIDE THIS PARAMETER FIRST.
            path: The **absolute** path to the file to write, under /mnt/user-data.
            content: The content to write to the file.
            append: Whether to append the content to the end of the file instead of overwriting it. Defaults to false.
        """
        policy = (await thread_sandbox(provider, runtime)).policy
        return await asyncio.to_thread(write_text, policy, locks, path, content, append)

    @tool(STR_REPLACE, parse_docstring=True)
    async def str_replace(
        description: str,
        path: str,
        old_str: str,
        new_str: str,
        runtime: RunToolRuntime,
        replace_all: bool = False,
    ) -> str:
        """Replace a substring in a file with another substring. Unless replace_all is true, the substring must appear **exactly once** in the file.

        Args:
            description: Explain why you are making this replacement, in a few words. ALWAYS PROVIDE THIS PARAMETER FIRST.
            path: The **absolute** path to the file to change.
            old_str: The exact text to replace, including whitespace and indentation.
            new_str: The text to put in its place.
            replace_all: Whether to replace every occurrence instead of exactly one. Defaults to false.
        """
        policy = (await thread_sandbox(provider, runtime)).policy
        return await asyncio.to_thread(
            replace_text, policy, locks, path, old_str, new_str, replace_all
        )

    return [ls, read_file, write_file, str_replace]
