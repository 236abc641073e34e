"""The small pure parts of identity: redirect targets, filters, origins, client addresses,
session tokens, password hashing and owner directory names."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime, timedelta

import pytest

from fawn.config.settings import PasswordSettings
from fawn.gateway.auth.apikeys import new_key, parse_key
from fawn.gateway.auth.csrf import check_origin
from fawn.gateway.auth.errors import (
    AuthHandlerError,
    CsrfFailed,
    InvalidToken,
    TokenExpired,
    WeakPassword,
)
from fawn.gateway.auth.langgraph_auth import compile_filters
from fawn.gateway.auth.oidc_state import safe_next
from fawn.gateway.auth.passwords import Passwords
from fawn.gateway.auth.ratelimit import client_address
from fawn.gateway.auth.tokens import SessionClaims, TokenCodec
from fawn.sandbox.paths import ThreadPaths, owner_dir_name
from fawn.store.scope import DEFAULT_USER

SECRET = "s" * 48


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        ("/workspace/chats/1?x=1", "/workspace/chats/1?x=1"),
        (None, "/"),
        ("", "/"),
        ("//evil.example", "/"),
        ("https://evil.example", "/"),
        ("/\\evil.example", "/"),
        ("javascript:alert(1)", "/"),
        ("/a:b", "/"),
        ("/ok\r\nSet-Cookie: x", "/"),
    ],
)
def test_safe_next(candidate: str | None, expected: str) -> None:
    assert safe_next(candidate) == expected


def test_compile_filters() -> None:
    assert compile_filters(
        {
            "owner": "a",
            "org": {"$eq": "acme"},
            "tags": {"$contains": "x"},
            "all": {"$contains": ["y", "z"]},
        }
    ) == ({"owner": "a"}, {"org": "acme"}, {"tags": ["x"]}, {"all": ["y", "z"]})
    for bad in ({"$or": [{"a": 1}]}, {"k": {"$ne": 1}}, {"k": {"$eq": 1, "$contains": 2}}):
        with pytest.raises(AuthHandlerError):
            compile_filters(bad)


@pytest.mark.parametrize(
    ("origin", "ok"),
    [
        (None, True),
        ("http://127.0.0.1:2026", True),
        ("http://127.0.0.1:2026/", False),
        ("HTTP://127.0.0.1:2026", True),
        ("http://localhost:3000", True),
        ("http://localhost:3001", False),
        ("https://127.0.0.1:2026", False),
        ("null", False),
        ("http://user@127.0.0.1:2026", False),
    ],
)
def test_check_origin(origin: str | None, ok: bool) -> None:
    if ok:
        check_origin(origin, ["http://127.0.0.1:2026"], ["http://localhost:3000"])
    else:
        with pytest.raises(CsrfFailed):
            check_origin(origin, ["http://127.0.0.1:2026"], ["http://localhost:3000"])


def test_client_address_trusts_only_listed_proxies() -> None:
    proxies = [ipaddress.ip_network("10.0.0.0/8")]
    assert client_address("10.1.2.3", "203.0.113.5", proxies) == "203.0.113.5"
    assert client_address("192.0.2.1", "203.0.113.5", proxies) == "192.0.2.1"
    assert client_address("10.1.2.3", None, proxies) == "10.1.2.3"
    assert client_address("192.0.2.1", "203.0.113.5", []) == "192.0.2.1"
    assert client_address(None, None, proxies) == "unknown"


def test_session_tokens() -> None:
    codec = TokenCodec(SECRET)
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    claims = SessionClaims(user_id="u", session_id="s", token_version=3, expires_at=expires)
    assert codec.decode(codec.encode(claims)) == claims
    expired = SessionClaims(
        user_id="u", session_id="s", token_version=3, expires_at=expires - timedelta(days=1)
    )
    with pytest.raises(TokenExpired):
        codec.decode(codec.encode(expired))
    with pytest.raises(InvalidToken):
        TokenCodec("t" * 48).decode(codec.encode(claims))
    token = codec.encode(claims)
    with pytest.raises(InvalidToken):
        codec.decode(token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1])


def test_api_key_format() -> None:
    key = new_key()
    assert parse_key(key.token) == key
    assert parse_key(key.token + "x") is None
    assert parse_key("fk_short_secret") is None
    assert len(key.secret) == 43


async def test_passwords_hash_verify_and_rehash() -> None:
    cheap = Passwords(PasswordSettings(argon2_memory_kib=8192, argon2_time_cost=1))
    stored = await cheap.hash("correct horse battery")
    assert stored.startswith("$argon2id$")
    assert await cheap.verify(stored, "correct horse battery")
    assert not await cheap.verify(stored, "Correct horse battery")
    assert not await cheap.verify(None, "anything at all")
    assert not await cheap.verify("not a hash", "anything at all")
    assert not cheap.needs_rehash(stored)
    dearer = Passwords(PasswordSettings(argon2_memory_kib=16384, argon2_time_cost=2))
    assert dearer.needs_rehash(stored)
    assert await dearer.verify(stored, "correct horse battery")  # old hashes still verify
    with pytest.raises(WeakPassword):
        cheap.check_new("1234567", "a@example.com")


def test_owner_directories() -> None:
    assert owner_dir_name("4b0c-11aa") == "4b0c-11aa"
    hashed = owner_dir_name("alice@example.com")
    assert hashed.startswith("=") and len(hashed) == 65
    assert owner_dir_name("../../etc") != "../../etc" and "/" not in owner_dir_name("../../etc")
    data = ThreadPaths.for_thread(__import__("pathlib").Path("/d"), "t", DEFAULT_USER)
    assert str(data.thread_dir) == "/d/threads/t"
    owned = ThreadPaths.for_thread(__import__("pathlib").Path("/d"), "t", "u1")
    assert str(owned.thread_dir) == "/d/users/u1/threads/t"
