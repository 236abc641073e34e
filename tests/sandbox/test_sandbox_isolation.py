"""Commands under real bubblewrap: what they can see, write, reach and leave behind."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fawn.config.settings import SandboxSettings
from fawn.sandbox import (
    TIMEOUT_EXIT_CODE,
    CommandResult,
    LocalSandbox,
    LocalSandboxProvider,
    SandboxUnavailable,
)
from fawn.sandbox.bwrap import ETC_ALLOWLIST, host_system_layout
from fawn.sandbox.capture import truncation_marker
from tests.sandbox.sandbox_helpers import (
    ProviderFactory,
    processes_running,
    unique_sleep,
    wait_until,
)

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]


def ok(output: str) -> CommandResult:
    return CommandResult(exit_code=0, output=output, timed_out=False, truncated=False)


def failed(exit_code: int, output: str) -> CommandResult:
    return CommandResult(exit_code=exit_code, output=output, timed_out=False, truncated=False)


@pytest.fixture
async def sandbox(make_provider: ProviderFactory) -> LocalSandbox:
    return await make_provider().acquire("thread-a")


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A TCP port listening on the host's loopback for the duration of the test."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def connect_command(port: int) -> str:
    script = (
        "import errno, socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "except OSError as e:\n"
        "    print('failed', errno.errorcode[e.errno])\n"
        "    raise SystemExit(1)\n"
        "print('connected')\n"
    )
    return f'python3 -c "{script}"'


# -- what the command sees -------------------------------------------------------------------


async def test_runs_in_the_workspace_as_an_unprivileged_user(sandbox: LocalSandbox) -> None:
    result = await sandbox.execute("pwd; id; hostname; grep CapEff /proc/self/status")
    assert result == ok(
        "/mnt/user-data/workspace\n"
        "uid=1000(sandbox) gid=1000(sandbox) groups=1000(sandbox)\n"
        "sandbox\n"
        "CapEff:\t0000000000000000\n"
    )


async def test_file_written_inside_appears_in_the_host_workspace(sandbox: LocalSandbox) -> None:
    result = await sandbox.execute(
        "echo hello > note.txt && echo out > /mnt/user-data/outputs/r.md && cat note.txt"
    )
    assert result == ok("hello\n")
    assert (sandbox.paths.workspace / "note.txt").read_text() == "hello\n"
    assert (sandbox.paths.outputs / "r.md").read_text() == "out\n"


async def test_host_file_is_visible_inside(sandbox: LocalSandbox) -> None:
    (sandbox.paths.uploads / "in.csv").write_text("a,b\n")
    assert await sandbox.execute("cat ../uploads/in.csv") == ok("a,b\n")


async def test_root_holds_only_system_dirs_and_the_mounts(sandbox: LocalSandbox) -> None:
    system = {entry.args()[-1].lstrip("/") for entry in host_system_layout()}
    expected = sorted(system | {"dev", "etc", "mnt", "proc", "tmp"})
    assert await sandbox.execute("ls /; ls /mnt /mnt/user-data") == ok(
        "\n".join(expected) + "\n/mnt:\nuser-data\n\n/mnt/user-data:\noutputs\nuploads\nworkspace\n"
    )


async def test_etc_holds_only_the_allowlist(sandbox: LocalSandbox) -> None:
    result = await sandbox.execute("ls /etc")
    allowed = {Path(p).relative_to("/etc").parts[0] for p in ETC_ALLOWLIST}
    listed = set(result.output.split())
    assert result.exit_code == 0
    assert (
        {"passwd", "group", "hosts", "ld.so.cache"}
        <= listed
        <= allowed
        | {
            "passwd",
            "group",
            "hosts",
        }
    )


async def test_host_secrets_are_not_visible(sandbox: LocalSandbox) -> None:
    result = await sandbox.execute("cat /etc/shadow; ls /root; ls /home; cat /etc/passwd")
    assert result == ok(
        "cat: /etc/shadow: No such file or directory\n"
        "ls: cannot access '/root': No such file or directory\n"
        "ls: cannot access '/home': No such file or directory\n"
        "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
        "sandbox:x:1000:1000:sandbox:/mnt/user-data/workspace:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    )


async def test_server_environment_does_not_leak(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAWN_TEST_SECRET", "hunter2")
    assert await sandbox.execute("env | sort") == ok(
        "HOME=/mnt/user-data/workspace\n"
        "LANG=C.UTF-8\n"
        "PATH=/usr/local/bin:/usr/bin:/bin\n"
        "PWD=/mnt/user-data/workspace\n"
        "TERM=dumb\n"
    )


async def test_host_paths_are_masked_in_output(sandbox: LocalSandbox, tmp_path: Path) -> None:
    # mountinfo names the host source of every bind mount.
    result = await sandbox.execute("cat /proc/self/mountinfo")
    assert result.exit_code == 0
    assert str(tmp_path) not in result.output
    assert " /mnt/user-data/workspace /mnt/user-data/workspace rw," in result.output


# -- what the command can change -------------------------------------------------------------


@pytest.mark.parametrize(
    "target", ["/usr/x", "/x", "/etc/passwd", "/mnt/user-data/x", "/mnt/skills/x"]
)
async def test_writes_outside_user_data_fail(
    make_provider: ProviderFactory, tmp_path: Path, target: str
) -> None:
    (tmp_path / "skills").mkdir()
    sandbox = await make_provider(skills_dir=tmp_path / "skills").acquire("t")
    assert await sandbox.execute(f"touch {target}") == failed(
        1, f"touch: cannot touch '{target}': Read-only file system\n"
    )


async def test_skills_are_mounted_read_only(make_provider: ProviderFactory, tmp_path: Path) -> None:
    (tmp_path / "skills" / "pdf").mkdir(parents=True)
    (tmp_path / "skills" / "pdf" / "SKILL.md").write_text("# pdf\n")
    sandbox = await make_provider(skills_dir=tmp_path / "skills").acquire("t")
    assert await sandbox.execute("cat /mnt/skills/pdf/SKILL.md; rm /mnt/skills/pdf/SKILL.md") == (
        failed(1, "# pdf\nrm: cannot remove '/mnt/skills/pdf/SKILL.md': Read-only file system\n")
    )


async def test_missing_skills_dir_is_skipped(
    make_provider: ProviderFactory, tmp_path: Path
) -> None:
    sandbox = await make_provider(skills_dir=tmp_path / "absent").acquire("t")
    assert await sandbox.execute("ls /mnt") == ok("user-data\n")


async def test_threads_cannot_see_each_other(make_provider: ProviderFactory) -> None:
    provider = make_provider()
    a = await provider.acquire("thread-a")
    b = await provider.acquire("thread-b")
    assert await b.execute("echo b-secret > secret.txt") == ok("")
    (a.paths.workspace / "link").symlink_to(b.paths.workspace)
    result = await a.execute(f"ls; cat link/secret.txt; cat {b.paths.workspace}/secret.txt")
    assert result == failed(
        1,
        "link\n"
        "cat: link/secret.txt: No such file or directory\n"
        f"cat: {b.paths.workspace}/secret.txt: No such file or directory\n",
    )


# -- network ---------------------------------------------------------------------------------


async def test_network_is_isolated_by_default(sandbox: LocalSandbox, listening_port: int) -> None:
    assert await sandbox.execute(connect_command(listening_port)) == failed(
        1, "failed ECONNREFUSED\n"
    )
    assert await sandbox.execute("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '") == ok("lo\n")


async def test_network_is_shared_when_allowed(
    make_provider: ProviderFactory, listening_port: int
) -> None:
    sandbox = await make_provider(allow_network=True).acquire("t")
    assert await sandbox.execute(connect_command(listening_port)) == ok("connected\n")


# -- results ---------------------------------------------------------------------------------


async def test_exit_code_and_interleaved_streams(sandbox: LocalSandbox) -> None:
    assert await sandbox.execute("echo out; echo err >&2; echo out2; exit 3") == failed(
        3, "out\nerr\nout2\n"
    )


async def test_utf8_split_across_reads_and_invalid_bytes(sandbox: LocalSandbox) -> None:
    command = (
        "python3 -c 'import sys, time; o = sys.stdout.buffer; "
        'o.write(b"caf\\xc3"); o.flush(); time.sleep(0.1); o.write(b"\\xa9 \\xff\\n")\''
    )
    assert await sandbox.execute(command) == ok("café \ufffd\n")


async def test_output_is_capped_keeping_head_and_tail(make_provider: ProviderFactory) -> None:
    sandbox = await make_provider(max_output_chars=200).acquire("t")
    full = "".join(f"{i}\n" for i in range(1, 100_001))
    assert await sandbox.execute("seq 1 100000") == CommandResult(
        exit_code=0,
        output=full[:68] + truncation_marker(len(full) - 136) + full[-68:],
        timed_out=False,
        truncated=True,
    )


async def test_huge_output_is_streamed_not_buffered(make_provider: ProviderFactory) -> None:
    sandbox = await make_provider(max_output_chars=200).acquire("t")
    size = 50_000_000
    started = time.monotonic()
    result = await sandbox.execute(f"head -c {size} /dev/zero | tr '\\0' x")
    assert result == CommandResult(
        exit_code=0,
        output="x" * 68 + truncation_marker(size - 136) + "x" * 68,
        timed_out=False,
        truncated=True,
    )
    assert time.monotonic() - started < 10


# -- time limits and cancellation ------------------------------------------------------------


async def test_timeout_kills_the_whole_process_tree(sandbox: LocalSandbox) -> None:
    sleep = unique_sleep()
    started = time.monotonic()
    result = await sandbox.execute(
        f"echo started; (sleep 0.8; touch late) & {sleep} & {sleep}; echo never", timeout=0.3
    )
    assert result == CommandResult(
        exit_code=TIMEOUT_EXIT_CODE,
        output="started\n[command timed out after 0.3 s and was killed]\n",
        timed_out=True,
        truncated=False,
    )
    assert time.monotonic() - started < 1.5
    assert processes_running(sleep) == []
    await asyncio.sleep(1.0)
    assert not (sandbox.paths.workspace / "late").exists()


async def test_default_timeout_comes_from_settings(make_provider: ProviderFactory) -> None:
    sandbox = await make_provider(timeout_seconds=0.2).acquire("t")
    result = await sandbox.execute("sleep 5")
    assert result == CommandResult(
        exit_code=TIMEOUT_EXIT_CODE,
        output="[command timed out after 0.2 s and was killed]\n",
        timed_out=True,
        truncated=False,
    )


async def test_cancellation_kills_the_command(sandbox: LocalSandbox) -> None:
    sleep = unique_sleep()
    task = asyncio.create_task(sandbox.execute(f"(sleep 0.8; touch late) & {sleep}"))
    await wait_until(lambda: processes_running(sleep))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert processes_running(sleep) == []
    await asyncio.sleep(1.0)
    assert not (sandbox.paths.workspace / "late").exists()


async def test_background_processes_end_with_the_command(sandbox: LocalSandbox) -> None:
    sleep = unique_sleep()
    started = time.monotonic()
    assert await sandbox.execute(f"{sleep} & echo done") == ok("done\n")
    assert time.monotonic() - started < 2
    assert processes_running(sleep) == []


async def test_commands_run_concurrently(sandbox: LocalSandbox) -> None:
    started = time.monotonic()
    results = await asyncio.gather(*(sandbox.execute(f"sleep 0.5; echo {i}") for i in range(4)))
    assert results == [ok(f"{i}\n") for i in range(4)]
    assert time.monotonic() - started < 1.5


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid switch happens only for a root server")
async def test_a_data_dir_the_sandbox_uid_cannot_reach_is_refused_clearly(
    tmp_path: Path,
) -> None:
    """Commands run as ``sandbox.run_as_uid``; bubblewrap reaches the thread's directories
    by path as that uid. Above a private (0700) directory it cannot: ``bash`` refuses,
    naming no host path, rather than running anything."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    provider = LocalSandboxProvider(private / "data", SandboxSettings())
    sandbox = await provider.acquire("t")
    with pytest.raises(SandboxUnavailable) as caught:
        await sandbox.execute("true")
    assert str(caught.value) == (
        "the sandbox's uid (64000) cannot reach the thread's files: a directory above the "
        "server's data or skills directory is not searchable by other users (the server's "
        "log names it); the operator must make it searchable or move the data directory"
    )
