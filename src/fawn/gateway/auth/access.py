"""What a route asks about its caller: which rows the request reaches (a Scope, handed to the
repositories) and which metadata keys only the server may write."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fawn.gateway.auth.errors import ServerOwnedField
from fawn.gateway.auth.langgraph_auth import LangGraphAuth
from fawn.gateway.auth.principal import Principal
from fawn.store.scope import Scope

#: Metadata keys that name an owner: set by the server, never by a client.
OWNER_FIELDS = ("user_id", "owner_id")

Resource = str
Action = str


@dataclass(frozen=True, kw_only=True)
class Caller:
    """The request's principal, with the deployment's authorization rules."""

    principal: Principal
    custom: LangGraphAuth | None = None

    async def scope(
        self, resource: Resource, action: Action, value: dict[str, Any] | None = None
    ) -> Scope:
        """The rows reached for ``action`` on ``resource``: the owner rule of the accounts
        modes, or the filters of the LangGraph ``Auth`` handler (which may also change
        ``value``, e.g. stamp the metadata of a thread being created)."""
        filters: tuple[Mapping[str, Any], ...] = ()
        if self.custom is not None and self.principal.method == "custom":
            filters = await self.custom.authorize(
                self.principal, resource, action, value if value is not None else {}
            )
        return self.principal.scope(filters)

    def client_metadata(self, metadata: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
        """A copy of metadata sent by the client; :class:`ServerOwnedField` when it names an
        owner (with identities on, the owner is the authenticated caller, not a claim)."""
        given = dict(metadata or {})
        if self.principal.owner_fields_guarded:
            for key in OWNER_FIELDS:
                if key in given:
                    raise ServerOwnedField(
                        f"{where}.{key} is set by the server from the authenticated user; "
                        "a client cannot write it"
                    )
        return given

    def stamped(self, metadata: Mapping[str, Any], owner: str | None = None) -> dict[str, Any]:
        """Metadata as stored: in the accounts modes ``user_id`` names the owner (``owner``,
        default the caller), so clients see whose thread it is."""
        stored = dict(metadata)
        if self.principal.method in ("session", "api_key"):
            stored["user_id"] = owner or self.principal.user_id
        return stored
