"""A private deployment to break: a PostgreSQL cluster and a Redis server of its own (spare
ports, a temporary directory; the shared ones are never touched) and two fawn workers on them.

Used by the fault-injection suite (``tests/faults``) and by ``bench/lifecycle_bench.py``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from tests.support.live import LiveServer, free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")

#: short lifecycle times: a PostgreSQL outage of 15 s is within the tolerance; one of
#: ``LONG_OUTAGE`` seconds is longer than the lease
RUNS = {
    "renew_seconds": 0.5,
    "sweep_seconds": 1.0,
    "outage_tolerance_seconds": 20.0,
    "lease_seconds": 24.0,
    "poll_seconds": 2.0,
    "drain_seconds": 3.0,
    "stop_wait_seconds": 3.0,
}
LONG_OUTAGE = 27.0


def _as_postgres() -> list[str]:
    """initdb and postgres refuse to run as root: run them as the ``postgres`` user then."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", "postgres", "--"]


class PrivatePostgres:
    """A cluster in its own directory under the system temporary directory (the ``postgres``
    user must reach it, which pytest's private temporary directories do not allow)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="fawn-faults-pg-"))
        self.root.chmod(0o755)
        self.data = self.root / "pgdata"
        self.sockets = self.root / "sock"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self.running = False

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def init(self) -> PrivatePostgres:
        self.root.mkdir(parents=True, exist_ok=True)
        self.sockets.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            for path in (self.root, self.sockets):
                os.chown(path, user.pw_uid, user.pw_gid)
        subprocess.run(
            [
                *_as_postgres(),
                str(PG_BIN / "initdb"),
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
        )
        return self.start()

    def start(self) -> PrivatePostgres:
        options = (
            f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c max_connections=200"
        )
        subprocess.run(
            [
                *_as_postgres(),
                str(PG_BIN / "pg_ctl"),
                "-D",
                str(self.data),
                "-o",
                options,
                "-l",
                str(self.log),
                "-w",
                "start",
            ],
            check=True,
            capture_output=True,
        )
        self.running = True
        return self

    def stop(self, mode: str = "fast") -> None:
        subprocess.run(
            [
                *_as_postgres(),
                str(PG_BIN / "pg_ctl"),
                "-D",
                str(self.data),
                "-m",
                mode,
                "-w",
                "stop",
            ],
            check=True,
            capture_output=True,
        )
        self.running = False

    def destroy(self) -> None:
        if self.running:
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self) -> str:
        name = f"fawn_f_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"


class PrivateRedis:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        self.root.mkdir(parents=True, exist_ok=True)
        self._proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.root),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            probe = subprocess.run(
                ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True
            )
            if probe.stdout.strip() == "PONG":
                return self
            time.sleep(0.05)
        raise RuntimeError("the private redis-server did not start")

    def kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


class Deployment:
    """Two fawn workers on one private PostgreSQL database and one private Redis."""

    def __init__(
        self, root: Path, postgres: PrivatePostgres, redis: PrivateRedis, base: dict[str, Any]
    ) -> None:
        self.postgres = postgres
        self.redis = redis
        self.db_url = postgres.create_database()
        shared = {
            **base,
            "data_dir": str(root / "shared-data"),
            "database": {"url": self.db_url},
            "streams": {
                **base.get("streams", {}),
                "backend": "redis",
                "redis_url": redis.url,
                "redis_prefix": f"fawn-fault-{uuid.uuid4().hex[:8]}",
            },
            "runs": {**base.get("runs", {}), **RUNS},
        }
        self.workers = [LiveServer(dict(shared), root / name) for name in ("a", "b")]

    def start(self) -> Deployment:
        for worker in self.workers:
            worker.start()
        return self

    def stop(self) -> None:
        for worker in self.workers:
            worker.kill()

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            return list(conn.execute(sql, params).fetchall())  # type: ignore[arg-type]


@contextmanager
def private_services(root: Path) -> Iterator[tuple[PrivatePostgres, PrivateRedis]]:
    postgres = PrivatePostgres().init()
    redis = PrivateRedis(root / "redis").start()
    try:
        yield postgres, redis
    finally:
        redis.kill()
        postgres.destroy()
