"""What the account commands (``fawn users``, ``fawn keys``) share: the database of the
configured server, opened and migrated, and the accounts on it."""

from __future__ import annotations

import getpass
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fawn.config.settings import AppConfig
from fawn.gateway.auth.accounts import Accounts
from fawn.gateway.auth.service import accounts_for
from fawn.gateway.auth.tokens import TokenCodec, load_or_create_secret
from fawn.store.api_keys import ApiKeyRepository
from fawn.store.database import Database
from fawn.store.threads import ThreadRepository


class CommandError(Exception):
    """Printed as ``fawn: <message>``; the command exits with status 1."""


@dataclass(frozen=True, kw_only=True)
class Admin:
    config: AppConfig
    accounts: Accounts
    keys: ApiKeyRepository


@asynccontextmanager
async def open_admin(config: AppConfig) -> AsyncIterator[Admin]:
    data_dir = config.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    db = Database.from_settings(config.database, data_dir)
    try:
        await db.migrate()
        codec = TokenCodec(load_or_create_secret(config.auth.secret, data_dir))
        accounts = accounts_for(config, db, data_dir, ThreadRepository(db), codec)
        yield Admin(config=config, accounts=accounts, keys=ApiKeyRepository(db))
    finally:
        await db.dispose()


def read_password(from_stdin: bool) -> str:
    """One line from standard input, or typed twice at a prompt (never echoed)."""
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("password: ")
    if getpass.getpass("again: ") != first:
        raise CommandError("the two passwords differ")
    return first
