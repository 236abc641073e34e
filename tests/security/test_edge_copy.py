"""``POST /threads/{id}/copy`` over a workspace the agent filled with traps: special files are
left out (a FIFO used to make the copy fail half-way and leave a half-copied thread behind),
holes stay holes (a sparse 2 GiB file used to become 2 GiB of real disk), hard links stay
links, symlinks are never followed, and a copy that fails leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.security.edge_helpers import new_thread
from tests.support.live import LiveServer
from tests.support.problems import problem


def user_data(server: LiveServer, thread_id: str) -> Path:
    root = server.data_dir / "threads" / thread_id / "user-data"
    for mount in ("workspace", "uploads", "outputs"):
        (root / mount).mkdir(parents=True, exist_ok=True)
    return root


def tree(root: Path) -> dict[str, str]:
    """Each entry below ``root``: its kind, and the content of files and links."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        name = str(path.relative_to(root))
        if stat.S_ISLNK(info.st_mode):
            found[name] = f"link -> {os.readlink(path)}"
        elif stat.S_ISDIR(info.st_mode):
            found[name] = "dir"
        elif stat.S_ISREG(info.st_mode):
            found[name] = f"file {path.read_bytes()[:32]!r}"
        else:
            found[name] = "special"
    return found


async def _thread_ids(http: httpx.AsyncClient) -> set[str]:
    found = await http.post("/threads/search", json={"limit": 1000})
    return {t["thread_id"] for t in found.json()}


async def test_special_files_are_left_out_and_the_copy_is_whole(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        source = await new_thread(http, kind="trap")
        root = user_data(server, source["thread_id"])
        workspace = root / "workspace"
        (workspace / "notes.txt").write_text("kept")
        (workspace / "sub").mkdir()
        (workspace / "sub" / "deep.txt").write_text("deep")
        os.mkfifo(workspace / "pipe")
        os.mknod(workspace / "sock", stat.S_IFSOCK | 0o600)
        if os.geteuid() == 0:
            os.mknod(workspace / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        os.symlink("/etc/passwd", workspace / "host-link")
        os.symlink("notes.txt", workspace / "local-link")
        response = await http.post(f"/threads/{source['thread_id']}/copy")
        assert response.status_code == 200, response.text
        copy = response.json()
        assert copy["metadata"] == {"kind": "trap"}
        copied = server.data_dir / "threads" / copy["thread_id"] / "user-data"
        assert tree(copied) == {
            "outputs": "dir",
            "uploads": "dir",
            "workspace": "dir",
            "workspace/host-link": "link -> /etc/passwd",
            "workspace/local-link": "link -> notes.txt",
            "workspace/notes.txt": "file b'kept'",
            "workspace/sub": "dir",
            "workspace/sub/deep.txt": "file b'deep'",
        }
        assert not list(copied.parent.parent.glob(".copy-*"))  # no staging left behind


async def test_holes_stay_holes_and_links_stay_links(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        source = await new_thread(http)
        workspace = user_data(server, source["thread_id"]) / "workspace"
        sparse = workspace / "sparse.bin"
        with sparse.open("wb") as handle:
            handle.write(b"head")
            handle.seek(2 * 1024**3)
            handle.write(b"tail")
        big = workspace / "big.bin"
        big.write_bytes(os.urandom(1024 * 1024))
        for index in range(50):
            os.link(big, workspace / f"alias-{index}.bin")
        response = await http.post(f"/threads/{source['thread_id']}/copy")
        assert response.status_code == 200, response.text
        target = server.data_dir / "threads" / response.json()["thread_id"] / "user-data"
    copied = target / "workspace" / "sparse.bin"
    assert copied.stat().st_size == sparse.stat().st_size == 2 * 1024**3 + 4
    assert copied.stat().st_blocks * 512 <= max(sparse.stat().st_blocks * 512, 64 * 1024)
    with copied.open("rb") as handle:
        assert handle.read(4) == b"head"
        handle.seek(2 * 1024**3)
        assert handle.read() == b"tail"
    aliases = {(target / "workspace" / f"alias-{i}.bin").stat().st_ino for i in range(50)}
    assert aliases == {(target / "workspace" / "big.bin").stat().st_ino}
    assert (target / "workspace" / "big.bin").read_bytes() == big.read_bytes()


async def test_a_copy_that_fails_leaves_nothing(server: LiveServer) -> None:
    """The threads directory made immutable (root ignores permissions, not this flag): the
    copy cannot write its files, and leaves no thread, no checkpoint and no directory."""
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("needs root and chattr to make a directory unwritable for root")
    async with httpx.AsyncClient(base_url=server.url) as http:
        source = await new_thread(http, kind="fails")
        (user_data(server, source["thread_id"]) / "workspace" / "a.txt").write_text("a")
        before = await _thread_ids(http)
        threads_dir = server.data_dir / "threads"
        entries = sorted(p.name for p in threads_dir.iterdir())
        _chattr("+i", threads_dir)
        try:
            response = await http.post(f"/threads/{source['thread_id']}/copy")
        finally:
            _chattr("-i", threads_dir)
        assert (response.status_code, response.json()) == (
            500,
            problem(
                f"thread {source['thread_id']} could not be copied: Operation not permitted",
                "service_error",
            ),
        )
        assert await _thread_ids(http) == before
        assert sorted(p.name for p in threads_dir.iterdir()) == entries


def _chattr(flag: str, path: Path) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True)
