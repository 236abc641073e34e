"""The user a LangGraph ``Auth.authenticate`` handler returns, as its ``@auth.on`` handlers
see it in ``ctx.user``: LangGraph's ``BaseUser`` protocol over whatever was returned (a
string, a dict with ``identity``, or an object with an ``identity`` attribute)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fawn.gateway.auth.errors import AuthHandlerError


class AuthUser:
    """``identity``, ``display_name``, ``is_authenticated`` and ``permissions`` as properties;
    any other field the handler returned by attribute or by key (``ctx.user["org_id"]``)."""

    __slots__ = ("_fields", "_source")

    def __init__(self, source: Any) -> None:
        self._source = source
        self._fields = _fields_of(source)

    @property
    def identity(self) -> str:
        identity: str = self._fields["identity"]
        return identity

    @property
    def display_name(self) -> str:
        return str(self._fields.get("display_name") or self.identity)

    @property
    def is_authenticated(self) -> bool:
        return bool(self._fields.get("is_authenticated", True))

    @property
    def permissions(self) -> Sequence[str]:
        return tuple(self._fields.get("permissions") or ())

    def __getitem__(self, key: str) -> Any:
        if key in ("identity", "display_name", "is_authenticated", "permissions"):
            return getattr(self, key)
        return self._fields[key]

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __getattr__(self, name: str) -> Any:
        fields = object.__getattribute__(self, "_fields")
        if name in fields:
            return fields[name]
        return getattr(object.__getattribute__(self, "_source"), name)

    def __repr__(self) -> str:
        return f"AuthUser(identity={self.identity!r})"


def _fields_of(source: Any) -> dict[str, Any]:
    if isinstance(source, str):
        fields: dict[str, Any] = {"identity": source}
    elif isinstance(source, Mapping):
        fields = dict(source)
    elif hasattr(source, "identity"):
        fields = {
            name: getattr(source, name)
            for name in ("identity", "display_name", "is_authenticated", "permissions")
            if hasattr(source, name)
        }
    else:
        raise AuthHandlerError(
            "the authenticate handler must return a user id (str), a dict with 'identity', "
            f"or an object with an 'identity' attribute; it returned {type(source).__name__}"
        )
    identity = fields.get("identity")
    if not isinstance(identity, str) or not identity:
        raise AuthHandlerError("the authenticate handler returned a user without an identity")
    permissions = fields.get("permissions") or ()
    if isinstance(permissions, str) or not all(isinstance(p, str) for p in permissions):
        raise AuthHandlerError("the authenticate handler's permissions must be a list of str")
    return fields
