"""``/api/v1/auth/keys``: a signed-in user's own API keys (the ``fawn keys`` commands do the
same for an operator). A new key's secret is in the creation response only."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from fawn.gateway.auth.apikeys import new_key, secret_hash
from fawn.gateway.auth.deps import AuthDep, PrincipalDep
from fawn.gateway.auth.principal import Principal
from fawn.gateway.auth.routes import require_accounts
from fawn.gateway.auth.service import AuthService
from fawn.gateway.responses import JSON
from fawn.runs.errors import NotFound
from fawn.store.api_keys import ApiKeyRecord
from fawn.store.types import utcnow

router = APIRouter(prefix="/api/v1/auth/keys", tags=["auth"])


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="api key", min_length=1, max_length=128)
    expires_days: float | None = Field(default=None, gt=0, le=3650)


def key_json(key: ApiKeyRecord) -> dict[str, Any]:
    return {
        "key_id": key.key_id,
        "name": key.name,
        "created_at": key.created_at,
        "expires_at": key.expires_at,
        "revoked_at": key.revoked_at,
    }


def _owner(auth: AuthService, principal: Principal) -> str:
    require_accounts(auth)
    return principal.user_id


@router.post("", status_code=201)
async def create_key(body: KeyCreate, auth: AuthDep, principal: PrincipalDep) -> Response:
    owner = _owner(auth, principal)
    expires = utcnow() + timedelta(days=body.expires_days) if body.expires_days else None
    secret = new_key()
    record = await auth.keys.create(
        key_id=secret.key_id,
        user_id=owner,
        name=body.name,
        secret_hash=secret_hash(secret.secret),
        expires_at=expires,
    )
    return JSON({**key_json(record), "key": secret.token}, status_code=201)


@router.get("")
async def list_keys(auth: AuthDep, principal: PrincipalDep) -> Response:
    keys = await auth.keys.list(_owner(auth, principal))
    return JSON([key_json(k) for k in keys])


@router.delete("/{key_id}", status_code=204)
async def revoke_key(key_id: str, auth: AuthDep, principal: PrincipalDep) -> Response:
    owner = _owner(auth, principal)
    owned = {k.key_id for k in await auth.keys.list(owner)}
    if key_id not in owned or await auth.keys.revoke(key_id) is None:
        raise NotFound(f"no key {key_id}")
    if auth.identity is not None:
        auth.identity.cache.forget_user(owner)
    return Response(status_code=204)
