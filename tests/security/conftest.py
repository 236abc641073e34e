"""The sandbox corpus's server: one per module, with the small limits of
``tests.security.sandbox_helpers.SANDBOX``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.conftest import base_config
from tests.security.sandbox_helpers import SANDBOX
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread


@pytest.fixture(scope="module")
def limited_server(
    stub: StubServerThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("server-limited")
    live = LiveServer(base_config(stub, workdir / "data", sandbox=SANDBOX), workdir).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
async def lg(limited_server: LiveServer) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=limited_server.url, timeout=120)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def http(limited_server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    # /ok must answer well within this; a stalled server fails the test.
    async with httpx.AsyncClient(base_url=limited_server.url, timeout=5.0) as client:
        yield client
