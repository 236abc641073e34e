"""``fawn`` command line: serve the gateway, upgrade the database."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fawn.cli import chat as chat_cli
from fawn.cli import keys as keys_cli
from fawn.cli import run as run_cli
from fawn.cli import users as users_cli
from fawn.cli.connect import page_url
from fawn.config import AppConfig, ConfigError, find_config_path, load_config


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fawn",
        description="fawn: a self-hosted agent runtime speaking the LangGraph Agent Server API.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--config",
            type=Path,
            help="config file (default: $FAWN_CONFIG, then ./config.yaml, then built-in defaults)",
        )
        p.add_argument(
            "--data-dir",
            type=Path,
            help="where SQLite files and thread workspaces live (default: ./.fawn or $FAWN_DATA_DIR)",
        )

    serve = sub.add_parser("serve", help="run the HTTP gateway")
    common(serve)
    serve.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind (default 2026)")
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error", "critical"],
        help="server log level (default info)",
    )

    run_cli.add_parser(sub, common)
    chat_cli.add_parser(sub, common)
    users_cli.add_parser(sub, common)
    keys_cli.add_parser(sub, common)

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply pending migrations and exit")
    common(upgrade)
    return parser


def _config(args: argparse.Namespace) -> AppConfig:
    overrides: dict[str, Any] = {}
    data_dir = args.data_dir or os.environ.get("FAWN_DATA_DIR")
    if data_dir:
        overrides["data_dir"] = str(data_dir)
    path = find_config_path(args.config, os.environ, Path.cwd())
    config = load_config(path, os.environ, overrides or None)
    server: dict[str, Any] = {}
    if getattr(args, "host", None):
        server["host"] = args.host
    if getattr(args, "port", None) is not None:
        server["port"] = args.port
    if server:
        config = config.model_copy(update={"server": config.server.model_copy(update=server)})
    return config


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise SystemExit(
                f"fawn: port {port} on {host} is already in use; choose another with --port"
            ) from None
        raise SystemExit(f"fawn: cannot bind {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    return sock


#: after the drain, how long the HTTP server waits for connections still open (idle
#: keep-alives, released streams) before closing them
_CLOSE_SECONDS = 5


def serve(config: AppConfig, log_level: str) -> None:
    """Serve until SIGTERM/SIGINT. The first signal drains (see ``fawn.runs.lifecycle``):
    no new runs, running ones finish (up to ``runs.drain_seconds``), queued ones are left
    to the other workers, streams end properly; then the HTTP server stops. A second
    signal stops at once."""
    import uvicorn

    from fawn.gateway.app import create_app
    from fawn.gateway.auth.exposure import exposure_problem
    from fawn.gateway.auth.langgraph_auth import ConfigError as AuthConfigError
    from fawn.gateway.auth.langgraph_auth import load_auth

    problem = exposure_problem(config)
    if problem is not None:
        raise SystemExit(f"fawn: {problem}")
    if config.auth.mode == "custom" and config.auth.custom is not None:
        try:
            load_auth(config.auth.custom.path)
        except AuthConfigError as exc:
            raise SystemExit(f"fawn: {exc}") from None
    sock = _bind(config.server.host, config.server.port)
    host, port = sock.getsockname()[:2]
    print(f"fawn: serving on http://{host}:{port} (data: {config.data_dir})", flush=True)
    print(f"fawn: open {page_url(host, port)} in a browser to chat", flush=True)
    app = create_app(config)
    uv_config = uvicorn.Config(
        app, log_level=log_level, access_log=False, timeout_graceful_shutdown=_CLOSE_SECONDS
    )

    class DrainingServer(uvicorn.Server):
        """uvicorn, whose first exit signal drains fawn before the HTTP server stops."""

        drain_requested = False
        drain: asyncio.Task[None] | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.drain_requested or not self.started:
                super().handle_exit(sig, frame)
                return
            self.drain_requested = True
            self._captured_signals.append(sig)  # re-raised at exit, as uvicorn does

        async def on_tick(self, counter: int) -> bool:
            if self.drain_requested and self.drain is None:
                self.drain = asyncio.create_task(_drain(app), name="fawn-drain")
            if self.drain is not None and self.drain.done():
                return True
            return await super().on_tick(counter)

    DrainingServer(uv_config).run(sockets=[sock])


async def _drain(app: Any) -> None:
    services = getattr(app.state, "services", None)
    if services is None:
        return
    try:
        await services.lifecycle.drain()
    except Exception:
        logging.getLogger(__name__).exception("drain failed; stopping anyway")


def db_upgrade(config: AppConfig) -> None:
    from fawn.store.database import Database

    async def run() -> None:
        db = Database.from_settings(config.database, config.data_dir.resolve())
        try:
            await db.migrate()
        finally:
            await db.dispose()

    asyncio.run(run())
    print("fawn: database is up to date")


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    # these print their own output; the library's INFO logs would interleave with it
    quiet = args.command in ("run", "chat", "users", "keys")
    logging.basicConfig(
        level=logging.WARNING if quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = _config(args)
    except ConfigError as exc:
        print(f"fawn: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if args.command == "serve":
        serve(config, args.log_level)
    elif args.command == "db":
        db_upgrade(config)
    elif args.command == "run":
        raise SystemExit(run_cli.main(args, config))
    elif args.command == "chat":
        raise SystemExit(chat_cli.main(args, config))
    elif args.command == "users":
        raise SystemExit(users_cli.main(args, config))
    elif args.command == "keys":
        raise SystemExit(keys_cli.main(args, config))


if __name__ == "__main__":
    main()
