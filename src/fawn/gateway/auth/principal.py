"""Principal: the caller of one request, resolved at the edge and passed down as a value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fawn.store.scope import DEFAULT_USER, Scope
from fawn.store.users import Role, UserRecord

#: How the caller proved who they are.
Method = Literal["none", "session", "api_key", "custom", "anonymous"]


@dataclass(frozen=True, kw_only=True)
class Principal:
    user_id: str
    role: Role
    method: Method
    email: str | None = None
    display_name: str | None = None
    needs_setup: bool = False
    oauth_provider: str | None = None
    session_id: str | None = None
    token_version: int = 0
    permissions: tuple[str, ...] = ()
    #: reaches every owner's rows (the admin, the single user without auth, or a LangGraph
    #: ``Auth`` deployment, where the handlers' filters decide instead)
    every_owner: bool = False
    #: the user object a LangGraph ``Auth.authenticate`` handler returned (``ctx.user``)
    custom_user: Any = None

    @property
    def authenticated(self) -> bool:
        return self.method != "anonymous"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def owner_fields_guarded(self) -> bool:
        """Whether ``user_id``/``owner_id`` in client metadata must be refused (every mode
        with identities; a server without authentication stores metadata as given)."""
        return self.method != "none"

    def scope(self, metadata: tuple[Mapping[str, Any], ...] = ()) -> Scope:
        """The rows this caller reaches, narrowed by authorization filters (``metadata``)."""
        return Scope(user_id=self.user_id, every_owner=self.every_owner, metadata=metadata)


#: Every request of a server without authentication.
SINGLE_USER = Principal(
    user_id=DEFAULT_USER,
    role="admin",
    method="none",
    email="default@fawn.local",
    display_name="default",
    every_owner=True,
)

#: A request on a public path (sign-in, setup) that carried no valid credential.
ANONYMOUS = Principal(user_id="", role="user", method="anonymous")


def user_principal(user: UserRecord, method: Method, *, session_id: str | None = None) -> Principal:
    return Principal(
        user_id=user.user_id,
        role=user.role,
        method=method,
        email=user.email,
        display_name=user.display_name,
        needs_setup=user.needs_setup,
        oauth_provider=user.oauth_provider,
        session_id=session_id,
        token_version=user.token_version,
        every_owner=user.role == "admin",
    )
