"""Rewriting host paths in text into the virtual paths the agent knows.

Command output can name host paths even inside bubblewrap (``/proc/self/mountinfo`` lists
the source of every bind mount), and on the unisolated host path everything does. Tool
results must not reveal the server's layout, so all output goes through a :class:`HostPathMasker`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


class HostPathMasker:
    """Replaces each host root with its virtual root, longest root first, in one pass.

    One pass matters: a replacement is never re-scanned, so a virtual root that happens to
    contain a host root (``skills_dir=/mnt/skills``) is not rewritten twice.
    """

    def __init__(self, roots: Iterable[tuple[str, str]]) -> None:
        table: dict[str, str] = {}
        for host, virtual in roots:
            # An empty or "/" root would rewrite every slash; such a mount maps nothing useful.
            if host.rstrip("/"):
                table.setdefault(host.rstrip("/"), virtual)
        self._table = table
        alternatives = sorted(table, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, alternatives))) if table else None
        self._longest = max(map(len, table), default=0)

    def mask(self, text: str) -> str:
        """``text`` with every occurrence of a host root replaced by its virtual root."""
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: self._table[m.group()], text)

    def stream(self) -> MaskStream:
        """A masker for text arriving in pieces (a root may be split across two pieces)."""
        return MaskStream(self)

    def _mask_prefix(self, text: str, safe_end: int) -> tuple[str, int]:
        """Mask ``text`` up to about ``safe_end``; return the result and where it stopped.

        A match starting before ``safe_end`` is complete (at least a root's length of text
        follows it), and one that runs past ``safe_end`` moves the stop to its end.
        """
        if self._pattern is None:
            return text[:safe_end], safe_end
        pieces: list[str] = []
        pos = 0
        for match in self._pattern.finditer(text):
            if match.start() >= safe_end:
                break
            pieces.append(text[pos : match.start()])
            pieces.append(self._table[match.group()])
            pos = match.end()
        stop = max(pos, safe_end)
        pieces.append(text[pos:stop])
        return "".join(pieces), stop


class MaskStream:
    """Incremental masking: holds back just enough text to see a root split across pieces."""

    def __init__(self, masker: HostPathMasker) -> None:
        self._masker = masker
        self._hold = max(masker._longest - 1, 0)
        self._pending = ""

    def feed(self, text: str) -> str:
        """Masked text that is final now; the rest waits for the next piece or :meth:`finish`."""
        buffer = self._pending + text
        masked, stop = self._masker._mask_prefix(buffer, max(len(buffer) - self._hold, 0))
        self._pending = buffer[stop:]
        return masked

    def finish(self) -> str:
        """Everything still held back, masked."""
        rest, self._pending = self._pending, ""
        return self._masker.mask(rest)
