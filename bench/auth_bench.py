"""What authentication costs per request, side by side.

    python bench/auth_bench.py            # -n requests per variant (default 2000)

Two measurements, both after a warm-up:

* **in process**: the identity middleware alone, around an app that answers at once, called
  directly through ASGI (no sockets): no credential (``auth.mode: none``), an API key, a
  session cookie (and its CSRF check on a POST), each with the verified credential remembered
  (the default ``revocation_seconds: 1``) and without (``0``: a database query per request);
* **over HTTP**: ``GET /threads/{id}`` against real servers, one per mode, through one
  keep-alive client: ``none`` next to ``local`` with an API key and with a session cookie.

Results go to bench/results/auth-<timestamp>.json. A benchmark, not a test: nothing asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx

from fawn.config import parse_config
from fawn.gateway.auth.middleware import IdentityMiddleware
from fawn.gateway.auth.service import open_auth
from fawn.store.database import Database
from fawn.store.threads import ThreadRepository

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.live import LiveServer

PASSWORD = "a long enough passphrase"
CHEAP = {"argon2_memory_kib": 8192, "argon2_time_cost": 1}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(samples: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples]
    return {
        "p50_ms": round(statistics.median(ms), 4),
        "p90_ms": round(percentile(ms, 0.9), 4),
        "mean_ms": round(statistics.fmean(ms), 4),
    }


# -- in process ------------------------------------------------------------------------------


class _State:
    def __init__(self, services: Any) -> None:
        self.services = services


class _App:
    """What the middleware sees of the app: ``state.services.auth``."""

    def __init__(self, auth: Any) -> None:
        self.state = _State(type("S", (), {"auth": auth})())


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def _call(middleware: IdentityMiddleware, app: _App, method: str, headers: list) -> int:
    status = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {
        "type": "http",
        "method": method,
        "path": "/threads/search",
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "scheme": "http",
        "app": app,
    }
    await middleware(scope, receive, send)
    return status


async def _timed(n: int, call: Callable[[], Awaitable[int]]) -> dict[str, float]:
    for _ in range(min(200, n)):
        assert await call() == 200
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        status = await call()
        samples.append(time.perf_counter() - start)
        assert status == 200
    return summary(samples)


async def in_process(n: int, workdir: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    middleware = IdentityMiddleware(_answer)
    none_config = parse_config({"data_dir": str(workdir / "none")}, {})
    async with _opened(none_config) as auth:
        app = _App(auth)
        results["none"] = await _timed(n, lambda: _call(middleware, app, "GET", []))
    for seconds in (1.0, 0.0):
        raw = {
            "data_dir": str(workdir / f"local-{seconds}"),
            "auth": {"mode": "local", "password": CHEAP, "revocation_seconds": seconds},
        }
        async with _opened(parse_config(raw, {})) as auth:
            app = _App(auth)
            user = await auth.accounts.create("bench@example.com", PASSWORD, role="user")
            session = await auth.accounts.open_session(user, remember=True)
            key = await _key(auth, user.user_id)
            cookie = [(b"cookie", f"access_token={session.token}; csrf_token=t".encode())]
            variants = {
                "api_key": ("GET", [(b"x-api-key", key.encode())]),
                "session_cookie": ("GET", cookie),
                "session_cookie_post_csrf": ("POST", [*cookie, (b"x-csrf-token", b"t")]),
            }
            for name, (method, headers) in variants.items():
                label = f"{name} ({'remembered' if seconds else 'query per request'})"
                results[label] = await _timed(
                    n, lambda m=method, h=headers, a=app: _call(middleware, a, m, h)
                )
    return results


async def _key(auth: Any, user_id: str) -> str:
    from fawn.gateway.auth.apikeys import new_key, secret_hash

    secret = new_key()
    await auth.keys.create(
        key_id=secret.key_id,
        user_id=user_id,
        name="bench",
        secret_hash=secret_hash(secret.secret),
        expires_at=None,
    )
    return secret.token


class _opened:
    """The AuthService of a configuration, on a migrated database of its own."""

    def __init__(self, config: Any) -> None:
        self._config = config
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Any:
        data_dir = self._config.data_dir.resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        db = Database.from_settings(self._config.database, data_dir)
        self._stack.push_async_callback(db.dispose)
        await db.migrate()
        return await self._stack.enter_async_context(
            open_auth(self._config, db, data_dir, ThreadRepository(db))
        )

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


# -- over HTTP -------------------------------------------------------------------------------


async def over_http(n: int, workdir: Path) -> dict[str, Any]:
    """The three variants interleaved request by request, so the machine's load (which moves
    by milliseconds here) weighs on each the same."""
    none = LiveServer({"data_dir": str(workdir / "h-none")}, workdir / "h-none").start(240)
    local = LiveServer(
        {"data_dir": str(workdir / "h-local"), "auth": {"mode": "local", "password": CHEAP}},
        workdir / "h-local",
    ).start(240)
    try:
        async with AsyncExitStack() as stack:
            plain = await stack.enter_async_context(httpx.AsyncClient(base_url=none.url))
            web = await stack.enter_async_context(httpx.AsyncClient(base_url=local.url))
            await web.post(
                "/api/v1/auth/initialize", json={"email": "b@example.com", "password": PASSWORD}
            )
            csrf = {"X-CSRF-Token": web.cookies["csrf_token"]}
            token = (await web.post("/api/v1/auth/keys", json={}, headers=csrf)).json()["key"]
            keyed = await stack.enter_async_context(
                httpx.AsyncClient(base_url=local.url, headers={"x-api-key": token})
            )
            variants = {
                "none": (plain, await _thread(plain, {})),
                "local, API key": (keyed, await _thread(keyed, {})),
                "local, session cookie": (web, await _thread(web, csrf)),
            }
            return await _interleaved(n, variants)
    finally:
        none.stop()
        local.stop()


async def _thread(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    tid: str = (await client.post("/threads", json={}, headers=headers)).json()["thread_id"]
    return tid


async def _interleaved(
    n: int, variants: dict[str, tuple[httpx.AsyncClient, str]]
) -> dict[str, Any]:
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for round_ in range(n + 200):
        for name, (client, tid) in variants.items():
            start = time.perf_counter()
            response = await client.get(f"/threads/{tid}")
            elapsed = time.perf_counter() - start
            assert response.status_code == 200, response.text
            if round_ >= 200:  # warm-up rounds are not counted
                samples[name].append(elapsed)
    return {name: summary(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="requests per variant")
    parser.add_argument("--skip-http", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        report: dict[str, Any] = {
            "n": args.n,
            "in_process": asyncio.run(in_process(args.n, workdir)),
        }
        if not args.skip_http:
            report["over_http"] = asyncio.run(over_http(args.n, workdir))
    for section in ("in_process", "over_http"):
        rows = report.get(section, {})
        base = rows.get("none", {}).get("p50_ms", 0.0)
        print(f"\n{section.replace('_', ' ')} (p50 / p90 ms, and p50 added to 'none')")
        for name, stats in rows.items():
            added = stats["p50_ms"] - base
            print(f"  {name:48s} {stats['p50_ms']:8.3f} {stats['p90_ms']:8.3f}   +{added:.3f}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    path = out / f"auth-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2))
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
