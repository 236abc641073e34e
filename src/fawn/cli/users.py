"""``fawn users``: create accounts, list them, change roles and passwords, disable them.

They act on the configured database directly, so they work with the server stopped or
running; a change that revokes (password, disable) reaches every worker within
``auth.revocation_seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any

from fawn.cli.admin import Admin, CommandError, open_admin, read_password
from fawn.config.settings import AppConfig
from fawn.gateway.auth.errors import AuthError
from fawn.store.errors import AlreadyInitialized, StoreError
from fawn.store.users import ROLES, UserRecord

Common = Callable[[argparse.ArgumentParser], None]


def add_parser(sub: Any, common: Common) -> None:
    users = sub.add_parser("users", help="manage accounts (auth.mode local or oidc)")
    cmds = users.add_subparsers(dest="users_command", required=True)

    create = cmds.add_parser("create", help="create an account (the first admin included)")
    common(create)
    create.add_argument("--email", required=True)
    create.add_argument("--role", choices=ROLES, default="user")
    create.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )

    common(cmds.add_parser("list", help="list accounts"))

    role = cmds.add_parser("set-role", help="make an account admin or user")
    common(role)
    role.add_argument("email")
    role.add_argument("role", choices=ROLES)

    password = cmds.add_parser(
        "set-password", help="set a new password (ends the account's sessions)"
    )
    common(password)
    password.add_argument("email")
    password.add_argument("--password-stdin", action="store_true")

    for name, text in (
        ("disable", "refuse the account's sign-ins, sessions and keys"),
        ("enable", "allow a disabled account again"),
    ):
        toggle = cmds.add_parser(name, help=text)
        common(toggle)
        toggle.add_argument("email")

    adopt = cmds.add_parser(
        "adopt", help="give the threads of the server without authentication to an account"
    )
    common(adopt)
    adopt.add_argument("email")


def main(args: argparse.Namespace, config: AppConfig) -> int:
    return asyncio.run(_run(args, config))


async def _run(args: argparse.Namespace, config: AppConfig) -> int:
    async with open_admin(config) as admin:
        try:
            await _COMMANDS[args.users_command](admin, args)
        except (AuthError, StoreError, CommandError) as exc:
            print(f"fawn: {exc}")
            return 1
    return 0


async def _create(admin: Admin, args: argparse.Namespace) -> None:
    password = read_password(args.password_stdin)
    accounts = admin.accounts
    if args.role == "admin" and await accounts.users.count_admins() == 0:
        # The first admin adopts the threads of the server without authentication, unless
        # that server may be running right now (its threads could be in use).
        adopt = admin.config.auth.mode != "none"
        try:
            user = await accounts.initialize(args.email, password, adopt=adopt)
        except AlreadyInitialized:
            user = await accounts.create(args.email, password, role="admin")
        else:
            if not adopt:
                print(
                    "note: auth.mode is none, so the existing threads stay with the single user;"
                    " after enabling auth, stop the server and run "
                    f"`fawn users adopt {user.email}`"
                )
    else:
        user = await accounts.create(args.email, password, role=args.role)
    print(f"created {user.role} {user.email} (id {user.user_id})")


async def _list(admin: Admin, args: argparse.Namespace) -> None:
    users = await admin.accounts.users.list()
    rows: list[tuple[str, ...]] = [("ID", "EMAIL", "ROLE", "STATUS", "SIGN-IN", "CREATED")]
    rows += [_row(u) for u in users]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def _row(user: UserRecord) -> tuple[str, ...]:
    sign_in = user.oauth_provider or "password"
    status = "disabled" if user.disabled else "active"
    created = user.created_at.strftime("%Y-%m-%d %H:%M")
    return (user.user_id, user.email, user.role, status, sign_in, created)


async def _set_role(admin: Admin, args: argparse.Namespace) -> None:
    user = await admin.accounts.users.require(args.email)
    await admin.accounts.users.set_role(user.user_id, args.role)
    print(f"{user.email} is now {args.role}")


async def _set_password(admin: Admin, args: argparse.Namespace) -> None:
    user = await admin.accounts.users.require(args.email)
    await admin.accounts.set_password(user, read_password(args.password_stdin))
    print(f"password of {user.email} changed; its sessions ended")


async def _disable(admin: Admin, args: argparse.Namespace) -> None:
    await _toggle(admin, args.email, disabled=True)


async def _enable(admin: Admin, args: argparse.Namespace) -> None:
    await _toggle(admin, args.email, disabled=False)


async def _toggle(admin: Admin, email: str, *, disabled: bool) -> None:
    user = await admin.accounts.users.require(email)
    await admin.accounts.users.set_disabled(user.user_id, disabled)
    print(
        f"{user.email} is {'disabled: its sessions and keys stop working' if disabled else 'enabled'}"
    )


async def _adopt(admin: Admin, args: argparse.Namespace) -> None:
    user = await admin.accounts.users.require(args.email)
    count = await admin.accounts.adopt(user.user_id)
    print(f"{user.email} adopted {count} thread(s)")


_COMMANDS = {
    "create": _create,
    "list": _list,
    "set-role": _set_role,
    "set-password": _set_password,
    "disable": _disable,
    "enable": _enable,
    "adopt": _adopt,
}
