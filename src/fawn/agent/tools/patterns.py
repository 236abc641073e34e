"""Glob patterns (``*``, ``?``, ``[...]``, ``**``) matched against '/'-separated paths.

``fnmatch`` lets ``*`` cross directories and ``pathlib`` globbing walks the disk itself
(following symlinks on Python 3.11), so the search tools compile patterns here and match
them against the paths of their own, link-safe walk.
"""

from __future__ import annotations

import re

from fawn.agent.tools.errors import InvalidToolInput


def compile_glob(pattern: str) -> re.Pattern[str]:
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
    regex: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            regex.append(".*" if last else "(?:[^/]+/)*")
        else:
            regex.append(_component(part) + ("" if last else "/"))
    try:
        return re.compile("".join(regex))
    except re.error as error:
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
