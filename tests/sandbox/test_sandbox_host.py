"""Without bubblewrap: refused by default, unisolated host execution only when allowed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from fawn.sandbox import TIMEOUT_EXIT_CODE, CommandResult, SandboxError, SandboxUnavailable
from tests.sandbox.sandbox_helpers import ProviderFactory, processes_running, unique_sleep

NO_BWRAP = "/nonexistent/bwrap"


async def test_missing_bwrap_refuses_to_run(make_provider: ProviderFactory, tmp_path: Path) -> None:
    provider = make_provider(bwrap_path=NO_BWRAP)
    sandbox = await provider.acquire("t")
    assert (provider.isolated, sandbox.isolated) == (False, False)
    with pytest.raises(SandboxUnavailable) as caught:
        await sandbox.execute("touch ran")
    error = caught.value
    assert isinstance(error, SandboxError)
    assert (error.code, error.retryable) == ("sandbox_unavailable", False)
    assert str(error) == (
        "bubblewrap (bwrap) is not installed on this server, so commands cannot run isolated. "
        "Install bubblewrap, or set `sandbox.allow_host_bash: true` in the configuration to "
        "run commands directly on the host WITHOUT isolation."
    )
    assert not (sandbox.paths.workspace / "ran").exists()


async def test_host_bash_runs_in_the_workspace_with_a_minimal_env(
    make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAWN_TEST_SECRET", "hunter2")
    sandbox = await make_provider(bwrap_path=NO_BWRAP, allow_host_bash=True).acquire("t")
    result = await sandbox.execute('echo hi > note.txt; pwd; echo "$HOME"; env | sort')
    # Host paths in the output come back as virtual paths.
    assert result == CommandResult(
        exit_code=0,
        output=(
            "/mnt/user-data/workspace\n"
            "/mnt/user-data/workspace\n"
            "HOME=/mnt/user-data/workspace\n"
            "LANG=C.UTF-8\n"
            "PATH=/usr/local/bin:/usr/bin:/bin\n"
            "PWD=/mnt/user-data/workspace\n"
            "TERM=dumb\n"
        ),
        timed_out=False,
        truncated=False,
    )
    assert (sandbox.paths.workspace / "note.txt").read_text() == "hi\n"


async def test_host_bash_timeout_kills_the_process_group(make_provider: ProviderFactory) -> None:
    sandbox = await make_provider(bwrap_path=NO_BWRAP, allow_host_bash=True).acquire("t")
    sleep = unique_sleep()
    started = time.monotonic()
    result = await sandbox.execute(f"(sleep 0.8; touch late) & {sleep} & {sleep}", timeout=0.3)
    assert result == CommandResult(
        exit_code=TIMEOUT_EXIT_CODE,
        output="[command timed out after 0.3 s and was killed]\n",
        timed_out=True,
        truncated=False,
    )
    assert time.monotonic() - started < 1.5
    assert processes_running(sleep) == []
    await asyncio.sleep(1.0)
    assert not (sandbox.paths.workspace / "late").exists()


async def test_host_bash_ends_leftover_background_processes(
    make_provider: ProviderFactory,
) -> None:
    sandbox = await make_provider(bwrap_path=NO_BWRAP, allow_host_bash=True).acquire("t")
    sleep = unique_sleep()
    started = time.monotonic()
    result = await sandbox.execute(f"{sleep} & echo done")
    assert result == CommandResult(exit_code=0, output="done\n", timed_out=False, truncated=False)
    assert time.monotonic() - started < 2
    assert processes_running(sleep) == []


async def test_unstartable_bwrap_is_reported_without_host_paths(
    make_provider: ProviderFactory, tmp_path: Path
) -> None:
    broken = tmp_path / "broken-bwrap"
    broken.write_bytes(b"\x00not an executable\n")
    broken.chmod(0o755)
    sandbox = await make_provider(bwrap_path=str(broken)).acquire("t")
    with pytest.raises(SandboxUnavailable) as caught:
        await sandbox.execute("true")
    assert str(caught.value) == "the command could not be started: Exec format error"
    assert caught.value.retryable is False
