"""Running the real ``fawn`` command line in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import base_config
from tests.support.openai_stub import StubServerThread

FAWN = [sys.executable, "-m", "fawn.cli.main"]


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAWN_")}
    env.update(extra or {})
    return env


def fawn(
    args: Sequence[str],
    *,
    cwd: Path,
    timeout: float = 90,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FAWN, *args],
        cwd=cwd,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def write_config(stub: StubServerThread, folder: Path, **overrides: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(base_config(stub, folder / "data", **overrides)))
    return path


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}
