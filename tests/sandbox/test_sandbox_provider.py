"""Provider lifecycle and the error tree."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from fawn.config.settings import SandboxSettings
from fawn.sandbox import (
    InvalidThreadId,
    LocalSandboxProvider,
    PathNotFound,
    PathOutsideSandbox,
    ReadOnlyPath,
    SandboxError,
    SandboxProvider,
    SandboxUnavailable,
    ThreadPaths,
)
from tests.sandbox.sandbox_helpers import ProviderFactory


async def test_acquire_is_idempotent_per_thread(
    make_provider: ProviderFactory, data_dir: Path
) -> None:
    provider = make_provider()
    first = await provider.acquire("thread-a")
    again = await provider.acquire("thread-a")
    other = await provider.acquire("thread-b")
    assert again is first
    assert (first.id, other.id) == ("local:thread-a", "local:thread-b")
    assert first.paths == ThreadPaths.for_thread(data_dir, "thread-a")
    assert first.policy.paths == first.paths
    assert sorted(p.name for p in first.paths.root.iterdir()) == ["outputs", "uploads", "workspace"]
    assert provider.get("local:thread-a") is first
    assert provider.get("local:nope") is None


async def test_acquire_recreates_missing_dirs(make_provider: ProviderFactory) -> None:
    provider = make_provider()
    sandbox = await provider.acquire("t")
    sandbox.paths.outputs.rmdir()
    assert await provider.acquire("t") is sandbox
    assert sandbox.paths.outputs.is_dir()


async def test_release_and_close(make_provider: ProviderFactory) -> None:
    provider = make_provider()
    first = await provider.acquire("t")
    (first.paths.workspace / "kept.txt").write_text("x")
    await provider.release(first.id)
    await provider.release(first.id)
    assert provider.get(first.id) is None
    second = await provider.acquire("t")
    assert second is not first
    assert second.id == first.id
    assert (second.paths.workspace / "kept.txt").read_text() == "x"
    await provider.aclose()
    assert provider.get(second.id) is None


async def test_uuid_thread_ids(make_provider: ProviderFactory) -> None:
    thread_id = str(uuid.uuid4())
    sandbox = await make_provider().acquire(thread_id)
    assert sandbox.id == f"local:{thread_id}"


@pytest.mark.parametrize("thread_id", ["../x", "", "a/b", "x" * 65])
async def test_acquire_refuses_unsafe_thread_ids(
    make_provider: ProviderFactory, data_dir: Path, thread_id: str
) -> None:
    with pytest.raises(InvalidThreadId):
        await make_provider().acquire(thread_id)
    assert not await asyncio.to_thread(data_dir.exists)


def test_local_provider_satisfies_the_protocol(tmp_path: Path) -> None:
    provider: SandboxProvider = LocalSandboxProvider(tmp_path, SandboxSettings())
    assert isinstance(provider, LocalSandboxProvider)


def test_error_tree() -> None:
    errors = [PathOutsideSandbox, PathNotFound, ReadOnlyPath, SandboxUnavailable, InvalidThreadId]
    assert [(e.code, issubclass(e, SandboxError)) for e in errors] == [
        ("path_outside_sandbox", True),
        ("path_not_found", True),
        ("read_only_path", True),
        ("sandbox_unavailable", True),
        ("invalid_thread_id", True),
    ]
    error = SandboxUnavailable("busy", retryable=True)
    assert (error.code, error.retryable, error.message, str(error)) == (
        "sandbox_unavailable",
        True,
        "busy",
        "busy",
    )
    assert SandboxUnavailable("x").retryable is False
