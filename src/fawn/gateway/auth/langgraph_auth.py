"""A LangGraph ``langgraph_sdk.Auth`` object, run the way the LangGraph server runs it.

Loaded from ``auth.custom.path`` like ``langgraph.json``'s ``auth.path`` (``./auth.py:auth`` or
``package.module:auth``). ``@auth.authenticate`` runs on every request outside the public
paths and receives, by parameter name, ``request``, ``body``, ``path``, ``method``,
``path_params``, ``query_params``, ``headers`` (``dict[bytes, bytes]``; str keys work too) and
``authorization``. Its result becomes ``ctx.user``.

Authorization calls the most specific ``@auth.on`` handler for the resource and action
(``threads.create`` before ``threads`` before the global one; none means allowed). ``None``
or ``True`` allows, ``False`` is a 403, ``Auth.exceptions.HTTPException`` answers its status
and detail, and a dict is a filter on the resource's metadata (``{"k": v}``, ``{"k":
{"$eq": v}}``, ``{"k": {"$contains": v}}``, several keys meaning AND), applied in the
database query itself. Handlers may change ``value`` (``value["metadata"]["owner"] = ...``);
what they write is what is stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from langgraph.errors import GraphBubbleUp
from langgraph_sdk import Auth
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.routing import Match
from starlette.types import Message, Receive, Scope

from fawn.config.settings import CustomAuthSettings
from fawn.gateway.auth.errors import AuthHandlerError, HandlerRejected, NotAuthenticated
from fawn.gateway.auth.langgraph_user import AuthUser
from fawn.gateway.auth.principal import Principal

log = logging.getLogger(__name__)

AUTHENTICATE_PARAMS = frozenset(
    {"request", "body", "path", "method", "path_params", "query_params", "headers", "authorization"}
)

Filters = tuple[Mapping[str, Any], ...]


class ConfigError(Exception):
    """The ``Auth`` object could not be loaded (raised at start)."""


def load_auth(path: str) -> Auth:
    """The ``Auth`` object at ``file.py:name`` or ``package.module:name``."""
    target, _, name = path.rpartition(":")
    if target.endswith(".py") or "/" in target:
        module = _load_file(Path(target))
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise ConfigError(f"auth.custom.path: cannot import {target!r}: {exc}") from exc
    auth = getattr(module, name, None)
    if not isinstance(auth, Auth):
        raise ConfigError(
            f"auth.custom.path: {path!r} is {type(auth).__name__}, not a langgraph_sdk.Auth"
        )
    if auth._authenticate_handler is None:
        raise ConfigError(f"auth.custom.path: {path!r} has no @auth.authenticate handler")
    unknown = _unknown_params(auth._authenticate_handler)
    if unknown:
        raise ConfigError(
            f"auth.custom.path: the authenticate handler asks for {', '.join(unknown)}; "
            f"it may take {', '.join(sorted(AUTHENTICATE_PARAMS))}"
        )
    return auth


def _load_file(file: Path) -> Any:
    if not file.is_file():
        raise ConfigError(f"auth.custom.path: no file {file}")
    name = "fawn_custom_auth_" + hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"auth.custom.path: cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    # like langgraph.json's dependencies: the handler's own directory is importable
    folder = str(file.resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ConfigError(f"auth.custom.path: {file} failed to load: {exc!r}") from exc
    return module


def _unknown_params(fn: Callable[..., Any]) -> list[str]:
    params = inspect.signature(fn).parameters.values()
    return sorted(
        p.name
        for p in params
        if p.name not in AUTHENTICATE_PARAMS
        and p.default is inspect.Parameter.empty
        and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    )


class _Headers(dict[bytes, bytes]):
    """Request headers as the LangGraph server passes them (bytes), also readable by str."""

    @staticmethod
    def _key(key: object) -> bytes:
        if isinstance(key, str):
            return key.lower().encode("latin-1")
        return key if isinstance(key, bytes) else b""

    def __getitem__(self, key: object) -> bytes:
        return super().__getitem__(self._key(key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(self._key(key))

    def get(self, key: object, default: Any = None) -> Any:
        return super().get(self._key(key), default)


class BodyTee:
    """Lets the handler read the request body and the route read it again: each reader has
    its own cursor over the messages received so far (nothing is kept unless the handler
    reads the body)."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._messages: list[Message] = []
        self._complete = False

    def reader(self) -> Receive:
        cursor = 0

        async def receive() -> Message:
            nonlocal cursor
            if cursor < len(self._messages):
                cursor += 1
                return self._messages[cursor - 1]
            message = await self._receive()
            if message["type"] == "http.request" and not self._complete:
                self._messages.append(message)
                self._complete = not message.get("more_body", False)
                cursor += 1
            return message

        return receive


class LangGraphAuth:
    def __init__(self, auth: Auth, settings: CustomAuthSettings) -> None:
        if auth._authenticate_handler is None:
            raise ConfigError("the Auth object has no @auth.authenticate handler")
        self._auth = auth
        self._settings = settings
        self._authenticate = auth._authenticate_handler
        self._params = set(inspect.signature(self._authenticate).parameters) & AUTHENTICATE_PARAMS

    @classmethod
    def from_settings(cls, settings: CustomAuthSettings) -> LangGraphAuth:
        return cls(load_auth(settings.path), settings)

    async def authenticate(self, scope: Scope, tee: BodyTee) -> Principal:
        kwargs = await self._arguments(scope, tee)
        try:
            result = await self._authenticate(**kwargs)
        except Auth.exceptions.HTTPException as exc:
            raise HandlerRejected(exc.status_code, str(exc.detail), exc.headers) from None
        except AssertionError as exc:
            raise HandlerRejected(401, str(exc) or "Unauthorized") from None
        except (asyncio.CancelledError, GraphBubbleUp):
            raise
        except Exception as exc:
            log.exception("the auth.authenticate handler failed")
            raise AuthHandlerError(f"the authenticate handler failed: {exc!r}") from exc
        user = AuthUser(result)
        if not user.is_authenticated:
            raise NotAuthenticated("the authenticate handler did not authenticate the request")
        permissions = tuple(user.permissions)
        admin = self._settings.admin_permission
        return Principal(
            user_id=user.identity,
            role="admin" if admin is not None and admin in permissions else "user",
            method="custom",
            display_name=user.display_name,
            permissions=permissions,
            every_owner=True,
            custom_user=user,
        )

    async def _arguments(self, scope: Scope, tee: BodyTee) -> dict[str, Any]:
        wanted = self._params
        headers = _Headers((k.lower(), v) for k, v in scope.get("headers", []))
        args: dict[str, Any] = {}
        if "request" in wanted:
            args["request"] = Request(scope, tee.reader())
        if "body" in wanted:
            args["body"] = await _json_body(tee.reader())
        if "path" in wanted:
            args["path"] = scope["path"]
        if "method" in wanted:
            args["method"] = scope["method"]
        if "path_params" in wanted:
            args["path_params"] = _path_params(scope)
        if "query_params" in wanted:
            args["query_params"] = dict(QueryParams(scope.get("query_string", b"")))
        if "headers" in wanted:
            args["headers"] = headers
        if "authorization" in wanted:
            value = headers.get(b"authorization")
            args["authorization"] = value.decode("latin-1") if value else None
        return args

    def handler(self, resource: str, action: str) -> Callable[..., Awaitable[Any]] | None:
        """The most specific handler: resource and action, the resource, the action, global."""
        handlers = self._auth._handlers
        for key in ((resource, action), (resource, "*"), ("*", action)):
            if key in handlers:
                return handlers[key][-1]
        return self._auth._global_handlers[-1] if self._auth._global_handlers else None

    async def authorize(
        self, principal: Principal, resource: str, action: str, value: dict[str, Any]
    ) -> Filters:
        handler = self.handler(resource, action)
        if handler is None:
            return ()
        ctx = Auth.types.AuthContext(
            permissions=list(principal.permissions),
            user=principal.custom_user,
            resource=resource,  # type: ignore[arg-type]
            action=action,  # type: ignore[arg-type]
        )
        try:
            result = await handler(ctx=ctx, value=value)
        except Auth.exceptions.HTTPException as exc:
            raise HandlerRejected(exc.status_code, str(exc.detail), exc.headers) from None
        except AssertionError as exc:
            raise HandlerRejected(403, str(exc) or "Forbidden") from None
        except (asyncio.CancelledError, GraphBubbleUp):
            raise
        except Exception as exc:
            log.exception("the auth handler for %s.%s failed", resource, action)
            raise AuthHandlerError(f"the {resource}.{action} handler failed: {exc!r}") from exc
        if result is None or result is True:
            return ()
        if result is False:
            raise HandlerRejected(403, "Forbidden")
        if isinstance(result, Mapping):
            return compile_filters(result)
        raise AuthHandlerError(
            f"the {resource}.{action} handler returned {type(result).__name__}; "
            "expected None, a bool or a filter dict"
        )


async def _json_body(receive: Receive) -> Any:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    raw = b"".join(chunks)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _path_params(scope: Scope) -> dict[str, Any]:
    app = scope.get("app")
    for route in getattr(getattr(app, "router", None), "routes", ()):
        match, child = route.matches(scope)
        if match is Match.FULL:
            return dict(child.get("path_params", {}))
    return {}


def compile_filters(result: Mapping[str, Any]) -> Filters:
    """LangGraph filter dicts as JSON documents a row's metadata must contain."""
    documents: list[Mapping[str, Any]] = []
    for key, condition in result.items():
        if not isinstance(key, str) or key.startswith("$"):
            raise AuthHandlerError(f"unsupported filter key {key!r} (use metadata keys)")
        if isinstance(condition, Mapping):
            documents.append({key: _operand(key, condition)})
        else:
            documents.append({key: condition})
    return tuple(documents)


def _operand(key: str, condition: Mapping[str, Any]) -> Any:
    if set(condition) == {"$eq"}:
        return condition["$eq"]
    if set(condition) == {"$contains"}:
        wanted = condition["$contains"]
        return list(wanted) if isinstance(wanted, list | tuple) else [wanted]
    raise AuthHandlerError(
        f"unsupported filter on {key!r}: {sorted(condition)}; supported: $eq, $contains"
    )
