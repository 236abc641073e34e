"""``glob`` and ``grep``: find files by name and lines by content in the thread's mounts.

Both walk the tree themselves (:func:`fawn.agent.tools.hostfs.walk`: no symbolic link is
followed) and stop at fixed caps, saying so in the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Generator, Iterator

from langchain_core.tools import BaseTool, tool

from fawn.agent.tools.access import RunToolRuntime, thread_sandbox
from fawn.agent.tools.errors import InvalidToolInput, WrongFileType
from fawn.agent.tools.files import MAX_TEXT_FILE_BYTES, NOISY_DIRECTORIES
from fawn.agent.tools.hostfs import (
    Entry,
    Target,
    decode_text,
    open_directory,
    read_bytes,
    read_entry,
    resolve,
    walk,
)
from fawn.agent.tools.names import GLOB, GREP
from fawn.agent.tools.patterns import Matcher, PatternError, compile_glob, compile_linear
from fawn.sandbox import PathPolicy, SandboxProvider

GLOB_MAX_RESULTS = 200
GREP_MAX_MATCHES = 100
#: Entries a search looks at before it stops (and says so).
SEARCH_MAX_ENTRIES = 50_000
SEARCH_MAX_DEPTH = 64
#: Seconds a search may take before it stops (and says so).
SEARCH_TIME_LIMIT = 30.0
#: Files larger than this are skipped by ``grep`` when walking a directory.
GREP_MAX_FILE_BYTES = 4 * 1024 * 1024
GREP_MAX_LINE_CHARS = 300


class _Scan:
    """A walk below a directory for one search, stopping at :data:`SEARCH_MAX_ENTRIES`.

    Opening raises :class:`WrongFileType` when ``target`` is not a directory.
    """

    def __init__(self, target: Target, policy: PathPolicy, *, keep: frozenset[str]) -> None:
        # A pattern naming a noisy directory (``node_modules/**``) asks to search it.
        self._prune = NOISY_DIRECTORIES - keep
        self._root = open_directory(target, policy)
        self.exhausted = True
        self.out_of_time = False
        self._deadline = time.monotonic() + SEARCH_TIME_LIMIT

    def __enter__(self) -> _Scan:
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self._root)

    def entries(self) -> Generator[Entry, None, None]:
        with contextlib.closing(
            walk(self._root, max_depth=SEARCH_MAX_DEPTH, prune=self._prune)
        ) as entries:
            for count, entry in enumerate(entries, start=1):
                if count > SEARCH_MAX_ENTRIES:
                    self.exhausted = False
                    return
                if time.monotonic() > self._deadline:
                    self.out_of_time = True
                    return
                yield entry

    def notes(self) -> list[str]:
        if self.out_of_time:
            return [f"[search stopped after {SEARCH_TIME_LIMIT:g} s; search a narrower path]"]
        if self.exhausted:
            return []
        return [f"[search stopped after {SEARCH_MAX_ENTRIES} entries; search a narrower path]"]


def find_paths(policy: PathPolicy, pattern: str, path: str) -> str:
    """Files (not directories) below ``path`` whose relative path matches ``pattern``."""
    regex = compile_glob(pattern)
    target = resolve(policy, path)
    with (
        _Scan(target, policy, keep=frozenset(pattern.split("/"))) as scan,
        contextlib.closing(scan.entries()) as entries,
    ):
        found = sorted(
            entry.relative
            for entry in entries
            if entry.kind != "dir" and regex.fullmatch(entry.relative)
        )
    if not found:
        return "\n".join([f"No files match {pattern!r} under {target.virtual}", *scan.notes()])
    base = target.virtual.rstrip("/")
    lines = [f"{base}/{relative}" for relative in found[:GLOB_MAX_RESULTS]]
    if len(found) > GLOB_MAX_RESULTS:
        lines.append(
            f"[{len(found) - GLOB_MAX_RESULTS} more matches not shown; narrow the pattern or path]"
        )
    return "\n".join([*lines, *scan.notes()])


def _compile_search(pattern: str, literal: bool, case_sensitive: bool) -> Matcher:
    if not pattern:
        raise InvalidToolInput("pattern is empty; give the text or regular expression to find")
    try:
        return compile_linear(pattern, case_sensitive=case_sensitive, literal=literal)
    except PatternError as error:
        raise InvalidToolInput(
            f"invalid regular expression {pattern!r}: {error} (patterns run on RE2: no "
            "back-references or look-around). Fix it, or set literal to true to search for "
            "the text exactly as written"
        ) from None


def _matching_lines(text: str, regex: Matcher) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.split("\n"), start=1):
        if regex.search(line):
            line = line.rstrip("\r")
            if len(line) > GREP_MAX_LINE_CHARS:
                line = line[:GREP_MAX_LINE_CHARS] + "..."
            yield number, line


class _Matches:
    """Collects ``path:line: text`` lines up to :data:`GREP_MAX_MATCHES`."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.truncated = False  # a match was left out

    def add(self, virtual: str, text: str, regex: Matcher) -> None:
        for number, line in _matching_lines(text, regex):
            if len(self.lines) == GREP_MAX_MATCHES:
                self.truncated = True
                return
            self.lines.append(f"{virtual}:{number}: {line}")


def _text_of(data: bytes | None) -> str | None:
    """Decoded text, or None for content grep skips (unreadable, too large, binary)."""
    if data is None or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def search_text(
    policy: PathPolicy,
    pattern: str,
    path: str,
    file_glob: str | None,
    literal: bool,
    case_sensitive: bool,
) -> str:
    """Lines matching ``pattern`` in the file ``path``, or in the files below it."""
    regex = _compile_search(pattern, literal, case_sensitive)
    name_filter = compile_glob(file_glob) if file_glob else None
    by_name = file_glob is not None and "/" not in file_glob
    target = resolve(policy, path)
    matches = _Matches()
    try:
        scan = _Scan(target, policy, keep=frozenset((file_glob or "").split("/")))
    except WrongFileType:
        # ``path`` is a file: search it alone (an error if it cannot be searched).
        data = read_bytes(target, policy, limit=MAX_TEXT_FILE_BYTES)
        matches.add(target.virtual, decode_text(data, target.virtual), regex)
        return _grep_result(matches, pattern, target, [])
    base = target.virtual.rstrip("/")
    with scan, contextlib.closing(scan.entries()) as entries:
        for entry in entries:
            if matches.truncated:
                break
            subject = entry.name if by_name else entry.relative
            if name_filter is not None and not name_filter.fullmatch(subject):
                continue
            text = _text_of(read_entry(entry, limit=GREP_MAX_FILE_BYTES))
            if text is not None:
                matches.add(f"{base}/{entry.relative}", text, regex)
    return _grep_result(matches, pattern, target, scan.notes())


def _grep_result(matches: _Matches, pattern: str, target: Target, notes: list[str]) -> str:
    if not matches.lines:
        return "\n".join([f"No matches for {pattern!r} under {target.virtual}", *notes])
    if matches.truncated:
        notes.insert(
            0, f"[stopped at {GREP_MAX_MATCHES} matches; narrow the pattern, path or glob]"
        )
    return "\n".join([*matches.lines, *notes])


def search_tools(provider: SandboxProvider) -> list[BaseTool]:
    """``glob`` and ``grep`` for the run's thread."""

    @tool(GLOB, parse_docstring=True)
    async def glob(description: str, pattern: str, path: str, runtime: RunToolRuntime) -> str:
        """Find files whose path matches a glob pattern under a root directory. Returns matching absolute paths, sorted.

        Args:
            description: Explain why you are searching, in a few words. ALWAYS PROVIDE THIS PARAMETER FIRST.
            pattern: The glob pattern, relative to the root path, e.g. `**/*.py` (any depth) or `*.md` (directly in the root).
            path: The **absolute** root directory to search under.
        """
        policy = (await thread_sandbox(provider, runtime)).policy
        return policy.mask(await asyncio.to_thread(find_paths, policy, pattern, path))

    @tool(GREP, parse_docstring=True)
    async def grep(
        description: str,
        pattern: str,
        path: str,
        runtime: RunToolRuntime,
        glob: str | None = None,
        literal: bool = False,
        case_sensitive: bool = False,
    ) -> str:
        """Search for lines matching a pattern in a text file, or in the files under a directory. Returns `path:line: text` lines.

        Args:
            description: Explain why you are searching, in a few words. ALWAYS PROVIDE THIS PARAMETER FIRST.
            pattern: The regular expression (RE2 syntax: no back-references or look-around; or, with literal, the plain text) to search for.
            path: The **absolute** file or root directory to search.
            glob: Optional filter on the files searched, e.g. `*.py` (matched against file names) or `src/**/*.ts` (matched against paths relative to the root).
            literal: Whether to treat the pattern as plain text instead of a regular expression. Defaults to false.
            case_sensitive: Whether matching is case-sensitive. Defaults to false.
        """
        policy = (await thread_sandbox(provider, runtime)).policy
        text = await asyncio.to_thread(
            search_text, policy, pattern, path, glob, literal, case_sensitive
        )
        return policy.mask(text)

    return [glob, grep]
