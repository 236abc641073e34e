"""Bounded capture of command output: keep the head and the tail, count what was dropped.

A command may print gigabytes; memory stays at about ``max_chars`` whatever it prints.
"""

from __future__ import annotations

# Room kept for the truncation marker so that the captured text stays within ``max_chars``.
_MARKER_ROOM = 64


def truncation_marker(dropped: int) -> str:
    return f"\n... [{dropped} characters truncated] ...\n"


class OutputCapture:
    """Accumulates text; :meth:`text` is all of it, or head + marker + tail if too long."""

    def __init__(self, max_chars: int) -> None:
        if max_chars < 2 * _MARKER_ROOM:
            raise ValueError(f"max_chars must be at least {2 * _MARKER_ROOM}")
        self._max = max_chars
        self._head_size = (max_chars - _MARKER_ROOM) // 2
        self._tail_size = max_chars - _MARKER_ROOM - self._head_size
        # Until we know the output is too long, everything after the head must be kept.
        self._window = max_chars - self._head_size
        self._head = ""
        self._tail = ""
        self._total = 0

    def feed(self, text: str) -> None:
        self._total += len(text)
        room = self._head_size - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        if text:
            self._tail = (self._tail + text)[-self._window :]

    @property
    def truncated(self) -> bool:
        return self._total > self._max

    def text(self) -> str:
        if not self.truncated:
            return self._head + self._tail
        tail = self._tail[-self._tail_size :]
        return self._head + truncation_marker(self._total - len(self._head) - len(tail)) + tail

    def feed_line(self, line: str) -> None:
        """Append ``line`` as a line of its own (after a newline if the output lacks one)."""
        last = (self._tail or self._head)[-1:]
        self.feed(("\n" if last not in ("", "\n") else "") + line + "\n")
