"""Decoding a JSON request body under the rules every stored value must satisfy.

A value that JSON can carry is not necessarily one fawn can keep: PostgreSQL's JSONB refuses
NUL characters, the response encoder refuses lone UTF-16 surrogates, integers beyond 64 bits
(JSONB writes a large fractional number such as 1e19 back as an integer) and very deep
nesting, and Python's parser lets ``NaN``/``Infinity`` (not JSON at all) through. Numbers are
held to ±(2^53 - 1), what JavaScript clients read exactly. A request carrying any of them was
stored and then broke every later read of the record. So the edge decodes each body once,
before routing, and refuses such values with the place they were found (``metadata.k``,
``input.messages[0].content``): no route can forget the check, and a refused request has
touched nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Numbers must lie within ±(2^53 - 1): the integers every JSON client (JavaScript's included)
#: reads exactly, well inside what the encoder, SQLite and PostgreSQL keep.
MAX_SAFE_INTEGER = 2**53 - 1
_LIMIT_DIGITS = len(str(MAX_SAFE_INTEGER))
_RANGE = f"±{MAX_SAFE_INTEGER}"

#: NUL (PostgreSQL refuses it in text and JSONB) and lone surrogates (not Unicode text: no
#: encoder can write them as UTF-8).
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")

#: How much of a location is shown in a message.
_MAX_WHERE_CHARS = 200


class JsonBodyError(ValueError):
    """The body cannot be accepted; ``where`` is the field (``body`` for the whole of it)."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")
        self.where = where
        self.why = why


@dataclass(frozen=True)
class _Refused:
    """A number the parser hooks refused; reported once the walk knows where it sits."""

    why: str


def _parse_int(text: str) -> int | _Refused:
    digits = text.lstrip("-")
    # Checked before int(): Python refuses to convert more than 4300 digits at all.
    if len(digits) > _LIMIT_DIGITS or abs(int(text)) > MAX_SAFE_INTEGER:
        shown = text if len(text) <= 40 else f"{text[:12]}…({len(digits)} digits)"
        return _Refused(f"integer {shown} is outside {_RANGE}")
    return int(text)


def _parse_float(text: str) -> float | _Refused:
    value = float(text)
    # PostgreSQL's JSONB writes 1e19 back as 10000000000000000000, an integer no 64-bit
    # encoder takes: fractional numbers are held to the integers' range too.
    if not abs(value) <= MAX_SAFE_INTEGER:  # NaN included
        shown = text if len(text) <= 40 else f"{text[:12]}…"
        return _Refused(f"number {shown} is outside {_RANGE}")
    return value


def _parse_constant(text: str) -> _Refused:
    return _Refused(f"{text} is not a JSON number")


def decode_json_body(body: bytes, *, max_depth: int) -> Any:
    """The value of ``body``, or :class:`JsonBodyError` naming the first offending field."""
    try:
        value = json.loads(
            body,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except RecursionError:
        raise JsonBodyError("body", f"nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise JsonBodyError(
            "body", f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except ValueError as exc:  # undecodable bytes: not UTF-8 (nor UTF-16/32)
        raise JsonBodyError("body", f"invalid JSON: {exc}") from None
    check_json_value(value, max_depth=max_depth)
    return value


def check_json_value(value: Any, *, max_depth: int) -> None:
    """Raise :class:`JsonBodyError` for the first value that could not be stored as sent."""
    for item, path, depth in _walk(value):
        why = _problem(item, depth, max_depth)
        if why is not None:
            raise JsonBodyError(_where(path), why)


def _walk(value: Any) -> Iterator[tuple[Any, tuple[str | int, ...], int]]:
    """Every value (and object key, as a string) with its path and depth, depth first.

    Iterative: a hostile body is as deep as the parser allowed, deeper than the interpreter's
    recursion limit.
    """
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(value, (), 1)]
    while stack:
        item, path, depth = stack.pop()
        yield item, path, depth
        if depth > 0 and isinstance(item, dict | list):
            if isinstance(item, dict):
                children = [(v, (*path, k), depth + 1) for k, v in item.items()]
                keys = [(k, (*path, k), -1) for k in item]  # depth -1: a key, not a value
                stack.extend(reversed(children))
                stack.extend(reversed(keys))
            else:
                stack.extend(reversed([(v, (*path, i), depth + 1) for i, v in enumerate(item)]))


def _problem(item: Any, depth: int, max_depth: int) -> str | None:
    if isinstance(item, str):
        return _text_problem(item, key=depth < 0)
    if isinstance(item, _Refused):
        return item.why
    if depth > max_depth and isinstance(item, dict | list):
        return f"nested deeper than {max_depth} levels"
    return None


def _text_problem(text: str, *, key: bool) -> str | None:
    found = _BAD_TEXT.search(text)
    if found is None:
        return None
    what = "a key" if key else "text"
    char = found.group()
    if char == "\x00":
        return f"{what} may not contain NUL (\\u0000)"
    return f"{what} may not contain a lone surrogate (\\u{ord(char):04x}): it is not valid Unicode"


def _where(path: tuple[str | int, ...]) -> str:
    """``metadata.k``, ``input.messages[0].content``; ``body`` for the top level."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            shown = (
                part if _BAD_TEXT.search(part) is None else part.encode("unicode_escape").decode()
            )
            text += f".{shown}" if text else shown
    if not text:
        return "body"
    return text if len(text) <= _MAX_WHERE_CHARS else text[:_MAX_WHERE_CHARS] + "…"
