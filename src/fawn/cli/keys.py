"""``fawn keys``: API keys for programs and the SDKs (``Authorization: Bearer <key>`` or
``x-api-key: <key>``). A key is shown once, when created; only its hash is kept."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from fawn.cli.admin import Admin, CommandError, open_admin
from fawn.config.settings import AppConfig
from fawn.gateway.auth.apikeys import new_key, secret_hash
from fawn.gateway.auth.errors import AuthError
from fawn.store.api_keys import ApiKeyRecord
from fawn.store.errors import StoreError
from fawn.store.types import utcnow

Common = Callable[[argparse.ArgumentParser], None]


def add_parser(sub: Any, common: Common) -> None:
    keys = sub.add_parser("keys", help="manage API keys")
    cmds = keys.add_subparsers(dest="keys_command", required=True)

    create = cmds.add_parser("create", help="create a key for an account (printed once)")
    common(create)
    create.add_argument("--user", required=True, help="the account's email")
    create.add_argument("--name", default="api key", help="what the key is for")
    create.add_argument("--expires-days", type=float, help="expire after this many days")

    listing = cmds.add_parser("list", help="list keys (never their secrets)")
    common(listing)
    listing.add_argument("--user", help="only this account's keys")

    revoke = cmds.add_parser("revoke", help="revoke a key by id")
    common(revoke)
    revoke.add_argument("key_id")


def main(args: argparse.Namespace, config: AppConfig) -> int:
    return asyncio.run(_run(args, config))


async def _run(args: argparse.Namespace, config: AppConfig) -> int:
    async with open_admin(config) as admin:
        try:
            await _COMMANDS[args.keys_command](admin, args)
        except (AuthError, StoreError, CommandError) as exc:
            print(f"fawn: {exc}")
            return 1
    return 0


async def _create(admin: Admin, args: argparse.Namespace) -> None:
    user = await admin.accounts.users.require(args.user)
    if args.expires_days is not None and args.expires_days <= 0:
        raise CommandError("--expires-days must be positive")
    expires = utcnow() + timedelta(days=args.expires_days) if args.expires_days else None
    key = new_key()
    await admin.keys.create(
        key_id=key.key_id,
        user_id=user.user_id,
        name=args.name[:128],
        secret_hash=secret_hash(key.secret),
        expires_at=expires,
    )
    print(key.token)
    print(
        f"(key id {key.key_id} for {user.email}; shown once: it cannot be displayed again)",
    )


async def _list(admin: Admin, args: argparse.Namespace) -> None:
    owner = await admin.accounts.users.require(args.user) if args.user else None
    keys = await admin.keys.list(owner.user_id if owner else None)
    emails = {u.user_id: u.email for u in await admin.accounts.users.list()}
    rows: list[tuple[str, ...]] = [("KEY ID", "USER", "NAME", "STATUS", "CREATED")]
    rows += [_row(k, emails.get(k.user_id, k.user_id)) for k in keys]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def _row(key: ApiKeyRecord, email: str) -> tuple[str, ...]:
    now = utcnow()
    if key.revoked_at is not None:
        status = "revoked"
    elif key.expires_at is not None and key.expires_at <= now:
        status = "expired"
    elif key.expires_at is not None:
        status = f"expires {key.expires_at:%Y-%m-%d}"
    else:
        status = "active"
    return (key.key_id, email, key.name, status, f"{key.created_at:%Y-%m-%d %H:%M}")


async def _revoke(admin: Admin, args: argparse.Namespace) -> None:
    key = await admin.keys.revoke(args.key_id)
    if key is None:
        raise CommandError(f"no key {args.key_id}")
    print(
        f"revoked {key.key_id}; it stops working within {admin.config.auth.revocation_seconds:g} s"
    )


_COMMANDS = {"create": _create, "list": _list, "revoke": _revoke}
