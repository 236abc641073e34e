"""Every way out of the sandbox that a tool could offer, tried through the tools."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from fawn.agent.tools import ToolError
from fawn.agent.tools.hostfs import read_bytes, resolve, write_bytes
from fawn.sandbox import PathNotFound, PathOutsideSandbox, ReadOnlyPath, SandboxError
from tests.agent.tools.conftest import requires_bwrap
from tests.agent.tools.helpers import ToolBench

WS = "/mnt/user-data/workspace"


@pytest.fixture
def secret_of_b(bench: ToolBench) -> Path:
    secret = bench.workspace("thread-b") / "secret.txt"
    secret.write_text("b's secret\n")
    return secret


@pytest.mark.parametrize(
    "path",
    [
        "../../../etc/passwd",
        f"{WS}/../../../etc/passwd",
        "/etc/passwd",
        "/mnt/user-data/../../etc/passwd",
        "/mnt/user-data/other",
        "/root",
        "/proc/self/environ",
    ],
)
async def test_paths_outside_the_mounts_are_refused(bench: ToolBench, path: str) -> None:
    for name, args in [
        ("read_file", {"path": path}),
        ("ls", {"path": path}),
        ("write_file", {"path": path, "content": "x"}),
        ("str_replace", {"path": path, "old_str": "a", "new_str": "b"}),
        ("glob", {"pattern": "*", "path": path}),
        ("grep", {"pattern": "root", "path": path}),
    ]:
        error = await bench.error(name, description="d", **args)
        assert isinstance(error, PathOutsideSandbox | ReadOnlyPath), (name, error)
    presented = await bench.error("present_files", filepaths=[path])
    assert isinstance(presented, ToolError)
    viewed = await bench.error("view_image", image_path=path)
    assert isinstance(viewed, SandboxError)


async def test_outside_error_names_the_allowed_roots(bench: ToolBench) -> None:
    error = await bench.error("read_file", description="d", path="/etc/passwd")
    assert str(error) == (
        "/etc/passwd is outside the sandbox; use paths under /mnt/user-data/workspace, "
        "/mnt/user-data/uploads, /mnt/user-data/outputs or /mnt/skills"
    )


async def test_host_path_of_the_thread_itself_is_refused_without_echoing_it(
    bench: ToolBench,
) -> None:
    (bench.workspace() / "mine.txt").write_text("mine\n")
    error = await bench.error(
        "read_file", description="d", path=str(bench.workspace() / "mine.txt")
    )
    assert isinstance(error, PathOutsideSandbox)
    assert str(error).startswith("a host path is outside the sandbox")


@requires_bwrap
async def test_symlink_planted_in_the_workspace_is_not_followed(bench: ToolBench) -> None:
    planted = await bench.text(
        "bash", description="d", command="ln -s /etc etc-link && ln -s /etc/passwd pw && echo ok"
    )
    assert planted == "ok\n"
    for name, args in [
        ("read_file", {"path": f"{WS}/etc-link/passwd"}),
        ("read_file", {"path": f"{WS}/pw"}),
        ("ls", {"path": f"{WS}/etc-link"}),
        ("write_file", {"path": f"{WS}/etc-link/evil", "content": "x"}),
        ("write_file", {"path": f"{WS}/pw", "content": "x"}),
        ("str_replace", {"path": f"{WS}/pw", "old_str": "root", "new_str": "x"}),
        ("grep", {"pattern": "root", "path": f"{WS}/etc-link"}),
        ("glob", {"pattern": "*", "path": f"{WS}/etc-link"}),
    ]:
        error = await bench.error(name, description="d", **args)
        assert isinstance(error, PathOutsideSandbox), (name, error)
    # Walking the workspace lists the links but never enters them.
    assert await bench.text("ls", description="d", path=WS) == f"{WS}/etc-link@\n{WS}/pw@"
    assert await bench.text("grep", description="d", pattern="root", path=WS) == (
        f"No matches for 'root' under {WS}"
    )
    assert await bench.text("glob", description="d", pattern="**/passwd", path=WS) == (
        f"No files match '**/passwd' under {WS}"
    )


async def test_symlink_to_another_thread_is_refused(bench: ToolBench, secret_of_b: Path) -> None:
    (bench.workspace() / "b-link").symlink_to(secret_of_b.parent)
    (bench.workspace() / "b-secret").symlink_to(secret_of_b)
    for path in (f"{WS}/b-link/secret.txt", f"{WS}/b-secret"):
        error = await bench.error("read_file", description="d", path=path)
        assert isinstance(error, PathOutsideSandbox)
    assert await bench.text("grep", description="d", pattern="secret", path=WS) == (
        f"No matches for 'secret' under {WS}"
    )


async def test_thread_a_cannot_reach_thread_b(bench: ToolBench, secret_of_b: Path) -> None:
    assert await bench.text(
        "read_file", description="d", path=f"{WS}/secret.txt", thread="thread-b"
    ) == ("b's secret\n")
    missing = await bench.error("read_file", description="d", path=f"{WS}/secret.txt")
    assert str(missing) == f"{WS}/secret.txt does not exist"
    for path in ("../../../thread-b/user-data/workspace/secret.txt", str(secret_of_b)):
        try:
            await bench.call("read_file", description="d", path=path)
        except PathOutsideSandbox:
            continue
        raise AssertionError(f"{path} was readable from thread A")
    assert await bench.text("grep", description="d", pattern="secret", path="/mnt/user-data") == (
        "No matches for 'secret' under /mnt/user-data"
    )


@requires_bwrap
async def test_bash_cannot_see_other_threads_or_the_host(
    bench: ToolBench, secret_of_b: Path
) -> None:
    # The command names the host path itself, so its echo in the error is no leak.
    result = await bench.call("bash", description="d", command=f"cat {secret_of_b}")
    assert result.content == f"cat: {secret_of_b}: No such file or directory\n[exit code 1]"
    listing = await bench.text("bash", description="d", command="ls /mnt/user-data/..; ls /mnt")
    assert "thread-b" not in listing


@requires_bwrap
@pytest.mark.parametrize(
    ("command", "expected_end"),
    [
        ("cat /etc/shadow", "/etc/shadow: No such file or directory\n[exit code 1]"),
        ("ls /root", "No such file or directory\n[exit code 2]"),
        ("echo x > /usr/evil", "Read-only file system\n[exit code 2]"),
        ("echo x > /mnt/skills/evil", "Read-only file system\n[exit code 2]"),
    ],
)
async def test_bash_is_contained(bench: ToolBench, command: str, expected_end: str) -> None:
    out = await bench.text("bash", description="d", command=command)
    assert out.endswith(expected_end), out


@pytest.fixture
def listening_port() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


@requires_bwrap
async def test_bash_has_no_network(bench: ToolBench, listening_port: int) -> None:
    script = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {listening_port}), timeout=2)\n"
        "except OSError as e:\n"
        "    print('failed:', type(e).__name__)\n"
        "    raise SystemExit(1)\n"
        "print('connected')\n"
    )
    out = await bench.text("bash", description="d", command=f'python3 -c "{script}"')
    assert out == "failed: ConnectionRefusedError\n[exit code 1]"


async def test_writes_outside_user_data_are_refused(bench: ToolBench, skills_dir: Path) -> None:
    skill = await bench.error(
        "write_file", description="d", path="/mnt/skills/public/demo/SKILL.md", content="x"
    )
    assert isinstance(skill, ReadOnlyPath)
    assert str(skill) == "/mnt/skills/public/demo/SKILL.md is read-only"
    edit = await bench.error(
        "str_replace",
        description="d",
        path="/mnt/skills/public/demo/SKILL.md",
        old_str="Demo",
        new_str="Evil",
    )
    assert isinstance(edit, ReadOnlyPath)
    assert (skills_dir / "public" / "demo" / "SKILL.md").read_text() == "# Demo skill\n"
    root = await bench.error("write_file", description="d", path="/mnt/user-data/x", content="x")
    assert isinstance(root, PathOutsideSandbox)
    mount_root = await bench.error(
        "write_file", description="d", path="/mnt/user-data", content="x"
    )
    assert isinstance(mount_root, ReadOnlyPath)


async def test_skills_without_a_skills_dir(data_dir: Path) -> None:
    from fawn.config.settings import SandboxSettings
    from fawn.sandbox import LocalSandboxProvider

    bench = ToolBench(LocalSandboxProvider(data_dir, SandboxSettings()), data_dir)
    error = await bench.error("ls", description="d", path="/mnt/skills")
    assert isinstance(error, PathNotFound)


async def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_followed(
    bench: ToolBench, tmp_path: Path
) -> None:
    """The race a command in the sandbox could run against a file tool: the path is
    checked, then a directory on it is replaced by a link to somewhere else."""
    sandbox = await bench.provider.acquire("thread-a")
    policy = sandbox.policy
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside\n")
    (bench.workspace() / "d").mkdir()
    (bench.workspace() / "d" / "f.txt").write_text("inside\n")

    read_target = resolve(policy, f"{WS}/d/f.txt")
    write_target = resolve(policy, f"{WS}/d/new.txt", write=True)
    os.rename(bench.workspace() / "d", bench.workspace() / "d-moved")
    (bench.workspace() / "d").symlink_to(outside)

    with pytest.raises(ToolError):
        read_bytes(read_target, policy, limit=1024)
    with pytest.raises(ToolError):
        write_bytes(write_target, policy, b"evil")
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]
    assert (outside / "f.txt").read_text() == "outside\n"
