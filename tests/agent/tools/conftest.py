"""A real sandbox provider on a per-test data directory, and the real tools over it."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fawn.config.settings import SandboxSettings
from fawn.sandbox import LocalSandboxProvider
from tests.agent.tools.helpers import ToolBench

requires_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    skills = tmp_path / "skills"
    (skills / "public" / "demo").mkdir(parents=True)
    (skills / "public" / "demo" / "SKILL.md").write_text("# Demo skill\n")
    return skills


@pytest.fixture
async def provider(data_dir: Path, skills_dir: Path) -> AsyncIterator[LocalSandboxProvider]:
    provider = LocalSandboxProvider(data_dir, SandboxSettings(skills_dir=skills_dir))
    yield provider
    await provider.aclose()


@pytest.fixture
async def bench(provider: LocalSandboxProvider, data_dir: Path) -> ToolBench:
    bench = ToolBench(provider, data_dir)
    await provider.acquire("thread-a")
    await provider.acquire("thread-b")
    return bench
