"""A real fawn server in a subprocess (``fawn serve``), for tests that go through HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class LiveServer:
    """``fawn serve`` on a free port with a config file written for it."""

    def __init__(self, config: dict[str, Any], workdir: Path) -> None:
        self.config = config
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = workdir / "config.yaml"
        self.log_path = workdir / "server.log"
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self._proc is not None, "the server is not running"
        return self._proc.pid

    @property
    def data_dir(self) -> Path:
        return Path(self.config["data_dir"])

    def start(self, timeout: float = 240.0) -> LiveServer:
        self.config_path.write_text(yaml.safe_dump(self.config), encoding="utf-8")
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("FAWN_")}
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "fawn.cli.main",
                    "serve",
                    "--config",
                    str(self.config_path),
                    "--port",
                    str(self.port),
                    "--log-level",
                    "warning",
                ],
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"fawn exited early:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/ok", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"fawn did not become ready in {timeout}s:\n{self.log()}")

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, as in a crash."""
        if self._proc is None:
            return
        self._proc.kill()
        self._proc.wait()
        self._proc = None

    def restart(self) -> LiveServer:
        self.stop()
        return self.start()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
