"""How ``fawn run`` and ``fawn chat`` reach fawn: a server (``--url``, default the configured
address) or in-process (``--embedded``), with an API key when the server has auth on."""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from fawn.client.auth import auth_headers
from fawn.config import AppConfig
from fawn.store.lock import DataDirInUse, owner_pid


class CliError(Exception):
    """Stops the command with this message (and exit status 2)."""


def add_connection_args(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--url", help="the fawn server to use (default: the configured server.host:server.port)"
    )
    where.add_argument(
        "--embedded",
        action="store_true",
        help="run fawn in this process on the configured data directory (no server needed)",
    )
    parser.add_argument(
        "--api-key",
        default=os.environ.get("FAWN_API_KEY"),
        help="API key for a server with auth on, sent as 'Authorization: Bearer' "
        "(default: $FAWN_API_KEY)",
    )


def server_url(config: AppConfig) -> str:
    """The URL of the server this configuration describes."""
    return page_url(config.server.host, config.server.port).rstrip("/")


def page_url(host: str, port: int) -> str:
    """Where a browser on this machine finds the page of a server bound to ``host:port``."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


@asynccontextmanager
async def open_client(
    args: argparse.Namespace, config: AppConfig
) -> AsyncIterator[LangGraphClient]:
    """The SDK client the command uses, remote or embedded; closed when the block ends."""
    if args.embedded:
        async with _embedded(config, args.api_key) as client:
            yield client
        return
    url = (args.url or server_url(config)).rstrip("/")
    client = get_client(
        url=url,
        api_key=None,
        headers=auth_headers(args.api_key),
        timeout=(5.0, None, 60.0, 5.0),  # no read timeout: a run may think for long
    )
    try:
        await _check_reachable(client, url)
        yield client
    finally:
        await client.aclose()


@asynccontextmanager
async def _embedded(config: AppConfig, api_key: str | None) -> AsyncIterator[LangGraphClient]:
    data_dir = config.data_dir.resolve()
    if config.database.url is None and owner_pid(data_dir) is not None:
        raise CliError(_in_use(DataDirInUse(data_dir, owner_pid(data_dir)), config))
    from fawn.client.embedded import embedded  # the whole application: only when asked for

    try:
        async with embedded(config, api_key=api_key) as client:
            yield client
    except DataDirInUse as exc:
        raise CliError(_in_use(exc, config)) from None


def _in_use(exc: DataDirInUse, config: AppConfig) -> str:
    who = f"a fawn server (pid {exc.pid})" if exc.pid else "a fawn server"
    return (
        f"--embedded refused: {who} already owns the data directory {exc.data_dir}, and two "
        f"processes must never share a SQLite data directory. Use that server instead "
        f"(--url {server_url(config)}, the default without --embedded) or stop it first."
    )


async def _check_reachable(client: LangGraphClient, url: str) -> None:
    try:
        response = await client.http.client.get("/ok")
    except httpx.TransportError as exc:
        raise CliError(
            f"cannot reach a fawn server at {url} ({exc.__class__.__name__}): start one with "
            "`fawn serve` (or `make run`), pass --url, or use --embedded"
        ) from None
    if response.status_code == 401:
        raise CliError(f"{url} wants an API key: pass --api-key or set FAWN_API_KEY")
    if response.status_code != 200:
        raise CliError(
            f"{url} does not answer like a fawn server (GET /ok: {response.status_code})"
        )
