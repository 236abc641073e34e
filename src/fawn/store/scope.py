"""Scope: whose rows a query may read or write, decided at the gateway and passed down.

Every repository method that reads or writes rows on behalf of a caller takes a ``Scope`` and
turns it into SQL conditions; a row outside the scope is indistinguishable from a missing one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The one user of a server without authentication (``auth.mode: none``), and the owner of
#: every row written before owners existed.
DEFAULT_USER = "default"


@dataclass(frozen=True, kw_only=True)
class Scope:
    """The acting user, and which rows they reach.

    ``user_id`` owns what the caller creates. ``every_owner`` lifts the owner condition (an
    admin, the single user of a server without authentication, a LangGraph ``Auth`` handler,
    whose filters decide instead). ``metadata`` holds JSON documents that a row's metadata
    must each contain (LangGraph's authorization filters, compiled).
    """

    user_id: str
    every_owner: bool = False
    metadata: tuple[Mapping[str, Any], ...] = ()

    def owns(self, owner: str) -> bool:
        """Whether a row owned by ``owner`` passes the owner condition."""
        return self.every_owner or owner == self.user_id


#: What the server itself uses for its own bookkeeping (recovery, a run's thread updates):
#: never derived from a request.
SYSTEM = Scope(user_id=DEFAULT_USER, every_owner=True)


def single_user() -> Scope:
    """The scope of every request when authentication is off: one user sees everything."""
    return Scope(user_id=DEFAULT_USER, every_owner=True)
