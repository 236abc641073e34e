"""Providers built on a per-test data directory; closed after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fawn.config.settings import SandboxSettings
from fawn.sandbox import LocalSandboxProvider
from tests.sandbox.sandbox_helpers import ProviderFactory


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def make_provider(data_dir: Path) -> AsyncIterator[ProviderFactory]:
    """``make_provider(**sandbox_settings)`` -> a provider on ``data_dir``."""
    providers: list[LocalSandboxProvider] = []

    def make(**settings: Any) -> LocalSandboxProvider:
        provider = LocalSandboxProvider(data_dir, SandboxSettings(**settings))
        providers.append(provider)
        return provider

    yield make
    for provider in providers:
        await provider.aclose()
