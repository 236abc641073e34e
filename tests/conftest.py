"""Shared fixtures: the scripted OpenAI stub, PostgreSQL databases, live fawn servers.

Expensive things (the stub, one server per backend) are session-scoped and shared; tests
isolate themselves with their own threads and unique script keys.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.tmpdir import TempPathFactory
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread, run_in_thread
from tests.support.pg import create_database, drop_database

BACKENDS = ["sqlite", "postgres"]
MODES = ["full", "delta"]


# Run as root, the server runs sandboxed commands as an unprivileged uid, and bubblewrap
# resolves the thread's directories by path as that uid: every directory above a data
# directory must be searchable by others. pytest makes its temporary directories 0700 (and
# resets /tmp/pytest-of-root to 0700 whenever a session starts, so shared by concurrent
# sessions it cannot be relied on): under root the tests get a private base directory, and
# the directories pytest makes there get the search bit (never the read bit).
_PRIVATE_BASETEMP = "fawn_private_basetemp"


def _searchable(path: Path) -> Path:
    mode = path.stat().st_mode
    if not mode & stat.S_IXOTH:
        path.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    return path


def pytest_configure(config: pytest.Config) -> None:
    if os.geteuid() != 0:
        return
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        base = Path(tempfile.mkdtemp(prefix="fawn-tests-"))
        _searchable(base)
        config.option.basetemp = str(base / "run")
        setattr(config, _PRIVATE_BASETEMP, base)
    get_base, make_temp = TempPathFactory.getbasetemp, TempPathFactory.mktemp

    def getbasetemp(self: TempPathFactory) -> Path:
        base = get_base(self)
        _searchable(base)
        if base.name.startswith("popen-gw"):  # an xdist worker's, below the run's
            _searchable(base.parent)
        return base

    def mktemp(self: TempPathFactory, basename: str, numbered: bool = True) -> Path:
        return _searchable(make_temp(self, basename, numbered))

    TempPathFactory.getbasetemp = getbasetemp  # type: ignore[method-assign]
    TempPathFactory.mktemp = mktemp  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    base = getattr(config, _PRIVATE_BASETEMP, None)
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def stub() -> Iterator[StubServerThread]:
    server = run_in_thread()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    name, url = create_database()
    try:
        yield url
    finally:
        drop_database(name)


def base_config(stub: StubServerThread, data_dir: Path, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "data_dir": str(data_dir),
        "models": [
            {
                "name": "stub",
                "display_name": "Stub model",
                "use": "langchain_openai:ChatOpenAI",
                "model": "stub-model",
                "api_key": "sk-test-secret",
                "base_url": stub.base_url,
                "max_retries": 0,
            },
            {
                "name": "stub-vision",
                "use": "langchain_openai:ChatOpenAI",
                "model": "stub-vision",
                "api_key": "sk-test-secret",
                "base_url": stub.base_url,
                "max_retries": 0,
                "supports_vision": True,
                "supports_thinking": True,
                "when_thinking_enabled": {"temperature": 1.0},
            },
        ],
        "streams": {"heartbeat_seconds": 15.0},
        # stopping a test server drains it: keep that short
        "runs": {"drain_seconds": 3.0},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    return config


@pytest.fixture(scope="session")
def shared_servers(
    request: pytest.FixtureRequest,
    stub: StubServerThread,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[str, str], LiveServer]]:
    """The session's shared live servers, one per (backend, checkpoint mode), started on
    first use. Servers of the two modes never share a database (as in a real deployment,
    where a thread's mode is a deployment's choice)."""
    started: dict[tuple[str, str], LiveServer] = {}
    dropped: list[str] = []

    def get(backend: str, mode: str) -> LiveServer:
        if (backend, mode) not in started:
            workdir = tmp_path_factory.mktemp(f"server-{backend}-{mode}")
            extra: dict[str, Any] = {}
            if backend == "postgres":
                if mode == "full":
                    url = request.getfixturevalue("pg_url")
                else:
                    name, url = create_database()
                    dropped.append(name)
                extra["database"] = {"url": url}
            if mode != "full":
                extra["checkpoints"] = {"mode": mode}
            live = LiveServer(base_config(stub, workdir / "data", **extra), workdir)
            started[(backend, mode)] = live.start()
        return started[(backend, mode)]

    try:
        yield get
    finally:
        for live in started.values():
            live.stop()
        for name in dropped:
            drop_database(name)


@pytest.fixture(scope="session", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, shared_servers: Callable[[str, str], LiveServer]
) -> LiveServer:
    """One shared live server per backend; tests parametrized over it run on both."""
    return shared_servers(request.param, "full")


@pytest.fixture(
    scope="session",
    params=[(b, m) for m in MODES for b in BACKENDS],
    ids=[f"{b}-{m}" for m in MODES for b in BACKENDS],
)
def mode_server(
    request: pytest.FixtureRequest, shared_servers: Callable[[str, str], LiveServer]
) -> LiveServer:
    """A shared live server per backend and checkpoint mode (``full`` ones are ``server``'s):
    for the tests of what both modes must do alike (state, history, time travel, copy,
    rollback)."""
    backend, mode = request.param
    return shared_servers(backend, mode)


@pytest.fixture
async def mode_client(mode_server: LiveServer) -> AsyncIterator[LangGraphClient]:
    lg = get_client(url=mode_server.url, timeout=60)
    try:
        yield lg
    finally:
        await lg.aclose()


@pytest.fixture(scope="session")
def sqlite_server(
    stub: StubServerThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("server-sqlite-only")
    live = LiveServer(base_config(stub, workdir / "data"), workdir).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def make_server(stub: StubServerThread, tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """Start a dedicated server with config overrides (restart tests, tiny windows...)."""
    started: list[LiveServer] = []

    def make(workdir: Path | None = None, **overrides: Any) -> LiveServer:
        wd = workdir or tmp_path / f"srv{len(started)}"
        data_dir = Path(overrides.pop("data_dir", wd / "data"))
        live = LiveServer(base_config(stub, data_dir, **overrides), wd).start()
        started.append(live)
        return live

    try:
        yield make
    finally:
        for live in started:
            live.stop()


@pytest.fixture
async def client(server: LiveServer) -> AsyncIterator[LangGraphClient]:
    lg = get_client(url=server.url, timeout=60)
    try:
        yield lg
    finally:
        await lg.aclose()


@pytest.fixture
def key() -> str:
    """A unique script key (and prompt prefix) for this test."""
    return f"k-{uuid.uuid4().hex[:10]}"
