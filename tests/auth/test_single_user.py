"""``auth.mode: none`` (the default): one user, today's behaviour, and only on loopback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from fawn.config import parse_config
from fawn.gateway.app import UnsafeExposure, create_app
from fawn.gateway.auth.exposure import exposure_problem
from tests.support.live import LiveServer, free_port


async def test_the_single_user_is_admin_and_needs_no_credential(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        me = await client.get("/api/v1/auth/me")
        status = await client.get("/api/v1/auth/setup-status")
        login = await client.post(
            "/api/v1/auth/login/local", data={"username": "a@example.com", "password": "x"}
        )
        keys = await client.get("/api/v1/auth/keys")
        thread = await client.post("/threads", json={"metadata": {"user_id": "u1"}})
    assert me.json() == {
        "id": "default",
        "email": "default@fawn.local",
        "system_role": "admin",
        "needs_setup": False,
        "oauth_provider": None,
    }
    assert status.json() == {"needs_setup": False, "registration_enabled": False}
    assert (login.status_code, login.json()["code"]) == (404, "auth_mode_mismatch")
    assert (keys.status_code, keys.json()["code"]) == (404, "auth_mode_mismatch")
    # metadata is stored as given, as before owners existed
    assert thread.json()["metadata"] == {"user_id": "u1"}
    assert (server.data_dir / "users").exists() is False


@pytest.mark.parametrize(
    ("host", "auth", "refused"),
    [
        ("127.0.0.1", {}, False),
        ("127.0.0.2", {}, False),
        ("::1", {}, False),
        ("localhost", {}, False),
        ("0.0.0.0", {}, True),
        ("::", {}, True),
        ("192.0.2.10", {}, True),
        ("fawn.example.com", {}, True),
        ("0.0.0.0", {"allow_remote_without_auth": True}, False),
        ("0.0.0.0", {"mode": "local"}, False),
    ],
)
def test_no_auth_serves_only_loopback(host: str, auth: dict[str, object], refused: bool) -> None:
    config = parse_config({"server": {"host": host}, "auth": auth}, {})
    problem = exposure_problem(config)
    assert (problem is not None) == refused
    if refused:
        assert problem is not None and host in problem
        with pytest.raises(UnsafeExposure):
            create_app(config)


def test_serve_on_every_interface_without_auth_refuses_to_start(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"data_dir": str(tmp_path / "d")}))
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "fawn.cli.main", "serve", "--host", "0.0.0.0", "--port", str(port)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("fawn: refusing to listen on 0.0.0.0 without authentication")
    assert "auth: {mode: local}" in done.stderr
    assert "allow_remote_without_auth: true" in done.stderr
    assert not (tmp_path / "d").exists()
