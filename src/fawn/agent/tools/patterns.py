"""Patterns the model writes, compiled for a linear-time engine (RE2).

Glob patterns (``*``, ``?``, ``[...]``, ``**``) are matched against '/'-separated paths:
``fnmatch`` lets ``*`` cross directories and ``pathlib`` globbing walks the disk itself
(following symlinks on Python 3.11), so the search tools compile patterns here and match
them against the paths of their own, link-safe walk.

Every pattern — a glob translated to a regular expression, or ``grep``'s own — runs on RE2
(``google-re2``), whose matching time grows linearly with the text whatever the pattern:
Python's backtracking ``re`` would take exponential time on ``(a+)+$`` or on ten ``**/``
against a deep path, holding the interpreter meanwhile. RE2 refuses what it cannot do in
linear time (back-references, look-around), which the tool reports as invalid.
"""

from __future__ import annotations

import re
from typing import Protocol

import re2  # type: ignore[import-untyped]

from fawn.agent.tools.errors import InvalidToolInput

# RE2's memory budget for one compiled pattern (its default is 8 MiB).
_MAX_MEM = 32 * 1024 * 1024


class Matcher(Protocol):
    """A compiled pattern (the part of RE2's ``_Regexp`` the tools use)."""

    def search(self, text: str) -> object | None: ...

    def fullmatch(self, text: str) -> object | None: ...


class PatternError(Exception):
    """RE2 refused the pattern; the message says why."""


def compile_linear(pattern: str, *, case_sensitive: bool = True, literal: bool = False) -> Matcher:
    """``pattern`` (RE2 syntax, or plain text with ``literal``) compiled by RE2; raises
    :class:`PatternError`."""
    options = re2.Options()
    options.log_errors = False
    options.literal = literal
    options.case_sensitive = case_sensitive
    options.max_mem = _MAX_MEM
    try:
        compiled: Matcher = re2.compile(pattern, options=options)
    except re2.error as error:
        reason = error.args[0] if error.args else "invalid pattern"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PatternError(str(reason)) from None
    return compiled


def compile_glob(pattern: str) -> Matcher:
    """A regex matching the relative paths ``pattern`` selects.

    ``*`` and ``?`` stay within one path component; ``**`` as a whole component spans any
    number of directories (``**/*.py`` also matches ``a.py``). Leading dots are not special.
    """
    if not pattern or pattern.startswith("/"):
        raise InvalidToolInput(
            f"glob pattern {pattern!r} must be relative to the search path, e.g. '**/*.py'"
        )
    parts = pattern.split("/")
    if ".." in parts:
        raise InvalidToolInput(f"glob pattern {pattern!r} must not contain '..'")
    # ``**/**`` selects what ``**`` does: keep one.
    parts = [
        part for i, part in enumerate(parts) if not (part == "**" and parts[i - 1 : i] == ["**"])
    ]
    regex: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            regex.append(".*" if last else "(?:[^/]+/)*")
        else:
            regex.append(_component(part) + ("" if last else "/"))
    try:
        return compile_linear("".join(regex))
    except PatternError as error:
        raise InvalidToolInput(f"invalid glob pattern {pattern!r}: {error}") from None


def _component(part: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(part):
        char = part[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := _class_end(part, i)) is not None:
            body = part[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^/" if negate else "") + _class_body(body) + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _class_body(body: str) -> str:
    """The members of a class, escaped one by one (ranges ``a-z`` kept) so that no
    character means anything more to ``re`` than it does to a glob."""
    out: list[str] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            out.append(f"{re.escape(body[i])}-{re.escape(body[i + 2])}")
            i += 3
        else:
            out.append(re.escape(body[i]))
            i += 1
    return "".join(out)


def _class_end(part: str, start: int) -> int | None:
    """Index of the ``]`` closing the class opened at ``start`` (a leading ``]`` or
    ``!]`` is a member), or None when it is not closed."""
    i = start + 1
    if i < len(part) and part[i] in "!^":
        i += 1
    if i < len(part) and part[i] == "]":
        i += 1
    end = part.find("]", i)
    return end if end != -1 else None
