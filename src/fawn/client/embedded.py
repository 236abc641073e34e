"""``fawn.embedded(...)``: the LangGraph SDK client, served by fawn inside this process.

No server and no port: the gateway app is built from the configuration, its lifespan opens
the services, and `langgraph_sdk.client.LangGraphClient` talks to it through
`InProcessTransport`. Everything the SDK does against a remote fawn (threads, runs,
assistants, streaming and joining streams, waiting) works the same, so code moves between the
two by changing the line that makes the client::

    async with fawn.embedded(config="config.yaml") as client:      # in-process
    client = get_client(url="http://127.0.0.1:2026")               # a server

The application routes (uploads, artifacts, models) are reachable through the same httpx
client: ``client.http.client.post(f"/api/threads/{tid}/uploads", files=...)``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

from fawn.client.auth import auth_headers
from fawn.client.transport import InProcessTransport, asgi_lifespan
from fawn.config import AppConfig, find_config_path, load_config
from fawn.gateway.app import create_app

#: The base URL requests carry in-process (nothing listens there).
EMBEDDED_URL = "http://localhost"


def load_app_config(
    config: str | os.PathLike[str] | AppConfig | None, data_dir: str | os.PathLike[str] | None
) -> AppConfig:
    """The configuration as ``fawn serve`` would read it (``None``: $FAWN_CONFIG, ./config.yaml)."""
    if isinstance(config, AppConfig):
        if data_dir is None:
            return config
        return config.model_copy(update={"data_dir": Path(data_dir)})
    overrides: dict[str, Any] = {}
    chosen_dir = data_dir if data_dir is not None else os.environ.get("FAWN_DATA_DIR")
    if chosen_dir:
        overrides["data_dir"] = str(chosen_dir)
    path = find_config_path(Path(config) if config is not None else None, os.environ, Path.cwd())
    return load_config(path, os.environ, overrides or None)


@asynccontextmanager
async def embedded(
    config: str | os.PathLike[str] | AppConfig | None = None,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    api_key: str | None = None,
) -> AsyncIterator[LangGraphClient]:
    """A `LangGraphClient` served in-process; the services close when the block ends.

    ``config`` is a path to a config file (or an `AppConfig`); ``data_dir`` overrides its
    ``data_dir``. With SQLite the data directory has one owner at a time: this raises
    `fawn.store.lock.DataDirInUse` when a server (or another embedded client) holds it.
    """
    app = create_app(load_app_config(config, data_dir))
    transport = InProcessTransport(app)
    async with asgi_lifespan(app):
        http = httpx.AsyncClient(
            transport=transport,
            base_url=EMBEDDED_URL,
            headers=auth_headers(api_key),
            timeout=None,
        )
        client = LangGraphClient(http)
        try:
            yield client
        finally:
            await client.aclose()
            await transport.aclose()
