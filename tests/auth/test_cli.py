"""``fawn users`` and ``fawn keys`` against a real data directory: the first admin adopts the
single-user server's threads (records and files), keys are shown once and revocable, and an
operator's changes reach a running server within a second."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml

from tests.auth.parties import CHEAP_PASSWORDS, PASSWORD, accounts_auth, browser
from tests.support.live import LiveServer


def fawn(config: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fawn.cli.main", *args, "--config", str(config)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def until_status(url: str, headers: dict[str, str], status: int) -> httpx.Response:
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient(base_url=url, headers=headers) as client:
        while True:
            response = await client.get("/api/v1/auth/me")
            if response.status_code == status or time.monotonic() > deadline:
                return response
            await asyncio.sleep(0.1)


@pytest.mark.timeout(600)
async def test_first_admin_adopts_the_single_user_threads(
    make_server: Callable[..., LiveServer],
    make_auth_server: Callable[..., LiveServer],
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    single = make_server(data_dir=data)
    async with httpx.AsyncClient(base_url=single.url) as client:
        tid = (await client.post("/threads", json={"metadata": {"user_id": "u1"}})).json()[
            "thread_id"
        ]
        await client.post(f"/api/threads/{tid}/uploads", files={"files": ("a.txt", b"kept")})
    single.stop()
    assert (data / "threads" / tid / "user-data" / "uploads" / "a.txt").exists()

    config = tmp_path / "accounts.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str(data), "auth": accounts_auth()}))
    created = fawn(
        config,
        "users",
        "create",
        "--email",
        "boss@example.com",
        "--role",
        "admin",
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )
    assert created.returncode == 0, created.stdout + created.stderr
    admin_id = created.stdout.split("(id ")[1].rstrip(")\n")
    assert created.stdout == f"created admin boss@example.com (id {admin_id})\n"
    moved = data / "users" / admin_id / "threads" / tid / "user-data" / "uploads" / "a.txt"
    assert moved.read_bytes() == b"kept"
    assert not (data / "threads" / tid).exists()

    live = make_auth_server(data_dir=data)
    async with browser(live.url) as boss, browser(live.url) as stranger:
        await boss.post(
            "/api/v1/auth/login/local",
            data={"username": "boss@example.com", "password": PASSWORD},
        )
        thread = (await boss.get(f"/threads/{tid}")).json()
        assert thread["metadata"] == {"user_id": admin_id}
        artifact = await boss.get(f"/api/threads/{tid}/artifacts/mnt/user-data/uploads/a.txt")
        assert artifact.content == b"kept"
        await stranger.post(
            "/api/v1/auth/register", json={"email": "new@example.com", "password": PASSWORD}
        )
        assert (await stranger.get(f"/threads/{tid}")).status_code == 404


@pytest.mark.timeout(600)
async def test_users_and_keys_commands(
    make_auth_server: Callable[..., LiveServer], tmp_path: Path
) -> None:
    live = make_auth_server(accounts_auth(revocation_seconds=0.5))
    config = tmp_path / "cli.yaml"
    config.write_text(
        yaml.safe_dump(
            {"data_dir": str(live.data_dir), "auth": {"mode": "local", "password": CHEAP_PASSWORDS}}
        )
    )
    for email, role in (("ops@example.com", "admin"), ("dev@example.com", "user")):
        made = fawn(
            config,
            "users",
            "create",
            "--email",
            email,
            "--role",
            role,
            "--password-stdin",
            stdin=PASSWORD + "\n",
        )
        assert made.returncode == 0, made.stdout
    duplicate = fawn(
        config,
        "users",
        "create",
        "--email",
        "dev@example.com",
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )
    assert (duplicate.returncode, duplicate.stdout) == (
        1,
        "fawn: an account with the email dev@example.com already exists\n",
    )
    weak = fawn(
        config, "users", "create", "--email", "w@example.com", "--password-stdin", stdin="short\n"
    )
    assert (weak.returncode, weak.stdout) == (
        1,
        "fawn: the password must have at least 8 characters\n",
    )
    listing = fawn(config, "users", "list").stdout.splitlines()
    assert listing[0].split() == ["ID", "EMAIL", "ROLE", "STATUS", "SIGN-IN", "CREATED"]
    assert [line.split()[1:5] for line in listing[1:]] == [
        ["ops@example.com", "admin", "active", "password"],
        ["dev@example.com", "user", "active", "password"],
    ]

    # a key is printed once; it works at once on the running server
    made = fawn(config, "keys", "create", "--user", "dev@example.com", "--name", "ci")
    token, note = made.stdout.splitlines()
    key_id = token.split("_")[1]
    assert (
        note == f"(key id {key_id} for dev@example.com; shown once: it cannot be displayed again)"
    )
    key = {"x-api-key": token}
    me = await until_status(live.url, key, 200)
    assert me.json()["email"] == "dev@example.com" and me.json()["system_role"] == "user"
    keys = fawn(config, "keys", "list", "--user", "dev@example.com").stdout.splitlines()
    assert keys[1].split()[:4] == [key_id, "dev@example.com", "ci", "active"]
    assert token not in "".join(keys)

    # role changes, disabling and enabling reach the running server within a second
    assert fawn(config, "users", "set-role", "dev@example.com", "admin").returncode == 0
    assert await _role_becomes(live.url, key, "admin")
    assert fawn(config, "users", "disable", "dev@example.com").returncode == 0
    assert (await until_status(live.url, key, 401)).status_code == 401
    assert fawn(config, "users", "enable", "dev@example.com").returncode == 0
    assert (await until_status(live.url, key, 200)).status_code == 200

    # a new password ends the sessions opened before it
    async with browser(live.url) as web:
        await web.post(
            "/api/v1/auth/login/local", data={"username": "dev@example.com", "password": PASSWORD}
        )
        session = {"Cookie": f"access_token={web.cookies['access_token']}"}
    changed = fawn(
        config,
        "users",
        "set-password",
        "dev@example.com",
        "--password-stdin",
        stdin="a different passphrase\n",
    )
    assert changed.stdout == "password of dev@example.com changed; its sessions ended\n"
    assert (await until_status(live.url, session, 401)).status_code == 401
    assert (await until_status(live.url, key, 200)).status_code == 200  # keys are not sessions

    revoked = fawn(config, "keys", "revoke", key_id)
    assert revoked.stdout == f"revoked {key_id}; it stops working within 1 s\n"
    assert (await until_status(live.url, key, 401)).json()["code"] == "token_invalid"
    assert "revoked" in fawn(config, "keys", "list").stdout
    unknown = fawn(config, "keys", "revoke", "nope")
    assert (unknown.returncode, unknown.stdout) == (1, "fawn: no key nope\n")


async def _role_becomes(url: str, headers: dict[str, str], role: str) -> bool:
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient(base_url=url, headers=headers) as client:
        while time.monotonic() < deadline:
            if (await client.get("/api/v1/auth/me")).json()["system_role"] == role:
                return True
            await asyncio.sleep(0.1)
    return False
