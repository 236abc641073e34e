"""Scripts registered by key, and the request bodies each key has received.

Thread-safe: `tests.support.openai_stub.StubServerThread` serves from its own thread while the
test thread registers scripts. Matching reads an immutable snapshot, so the hot path takes no
lock.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fawn.testing.script import ScriptError, Turn, TurnSpec, as_turn

DEFAULT_MAX_REQUESTS_PER_KEY = 200


@dataclass(frozen=True, kw_only=True, slots=True)
class Script:
    """A registered script: matched by ``key``, answered by ``turns``, titled by ``title``."""

    key: str
    turns: tuple[Turn, ...]
    title: str | None = None


class ScriptRegistry:
    """Scripts by key plus a bounded log of the request bodies matched to each key.

    Requests that match no script are logged under the key ``None``.
    """

    def __init__(self, *, max_requests_per_key: int = DEFAULT_MAX_REQUESTS_PER_KEY) -> None:
        self._lock = threading.Lock()
        self._scripts: dict[str, Script] = {}
        # Longest key first, so a key that contains another key wins over it.
        self._by_length: tuple[Script, ...] = ()
        self._requests: dict[str | None, deque[dict[str, Any]]] = {}
        self._max_requests = max_requests_per_key

    def add(
        self, key: str, turns: Sequence[Turn | TurnSpec | str], title: str | None = None
    ) -> Script:
        """Register (or replace) the script for ``key``; its request log starts empty."""
        if not key:
            raise ScriptError("key", "must be a non-empty string")
        if not turns:
            raise ScriptError("turns", "must be a non-empty list")
        script = Script(
            key=key,
            turns=tuple(as_turn(t, where=f"turns[{i}]") for i, t in enumerate(turns)),
            title=title,
        )
        with self._lock:
            self._scripts[key] = script
            self._requests.pop(key, None)
            self._reindex()
        return script

    def remove(self, key: str) -> bool:
        """Forget the script for ``key`` and its request log; False if there was none."""
        with self._lock:
            existed = self._scripts.pop(key, None) is not None
            self._requests.pop(key, None)
            self._reindex()
        return existed

    def match(self, text: str) -> Script | None:
        """The script whose key occurs in ``text`` (the longest such key), if any."""
        for script in self._by_length:
            if script.key in text:
                return script
        return None

    def record(self, key: str | None, body: dict[str, Any]) -> None:
        """Remember a request body received for ``key`` (``None``: matched nothing)."""
        with self._lock:
            log = self._requests.get(key)
            if log is None:
                log = self._requests[key] = deque(maxlen=self._max_requests)
            log.append(body)

    def requests_for(self, key: str | None) -> list[dict[str, Any]]:
        """The request bodies recorded for ``key``, oldest first."""
        with self._lock:
            return list(self._requests.get(key, ()))

    def _reindex(self) -> None:
        self._by_length = tuple(sorted(self._scripts.values(), key=lambda s: -len(s.key)))
