"""Upload names, streamed atomic saves, listing and deletion (filesystem only, no HTTP)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fawn.sandbox.errors import (
    InvalidFilename,
    NoSuchFile,
    SandboxError,
    UnsafeUploadTarget,
    UploadTooLarge,
)
from fawn.sandbox.paths import ThreadPaths
from fawn.sandbox.uploads import (
    MAX_FILENAME_BYTES,
    commit_uploads,
    delete_upload,
    discard_uploads,
    list_uploads,
    safe_filename,
    save_upload,
    stage_upload,
)


@pytest.fixture
def paths(tmp_path: Path) -> ThreadPaths:
    return ThreadPaths.for_thread(tmp_path / "data", "thread-u").ensure()


async def chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def entries(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


# -- safe_filename --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("résumé final (v2).docx", "résumé final (v2).docx"),
        ("../../etc/passwd", "passwd"),
        ("/etc/passwd", "passwd"),
        ("a\\b.txt", "b.txt"),
        ("C:\\Users\\me\\doc.txt", "doc.txt"),
        ("dir/sub/", "sub"),
        ("na\x00me.txt", "name.txt"),
        ("line\nbreak\r.txt", "linebreak.txt"),
        ("evil\u202etxt.exe", "eviltxt.exe"),
        ("zero\u200bwidth.md", "zerowidth.md"),
        (".bashrc", "bashrc"),
        ("  . .hidden  ", "hidden"),
        ("..secret", "secret"),
        ("cafe\u0301.txt", "caf\u00e9.txt"),
        ("a/..", "a"),
    ],
)
def test_safe_filename_reduces_to_a_base_name(name: str, expected: str) -> None:
    assert safe_filename(name) == expected


@pytest.mark.parametrize(
    "name", ["", ".", "..", "...", "/", "\\", "../..", "..\\..", "\x00", "   ", "/ /.", "\u202e"]
)
def test_safe_filename_refuses_names_that_reduce_to_nothing(name: str) -> None:
    with pytest.raises(InvalidFilename) as caught:
        safe_filename(name)
    assert caught.value.code == "invalid_filename"
    assert isinstance(caught.value, SandboxError)


def test_safe_filename_caps_length_keeping_the_extension() -> None:
    ascii_name = safe_filename("a" * 300 + ".txt")
    assert (len(ascii_name), ascii_name[-5:]) == (MAX_FILENAME_BYTES, "a.txt")
    wide = safe_filename("é" * 200 + ".md")
    assert len(wide.encode()) <= MAX_FILENAME_BYTES
    assert wide.endswith("é.md")
    # An "extension" that is most of the name is not kept whole.
    long_ext = safe_filename("x." + "b" * 400)
    assert (len(long_ext), long_ext[:3]) == (MAX_FILENAME_BYTES, "x.b")


@given(st.text(max_size=400) | st.text(alphabet="./\\\x00 \t\n.ab\u202e", max_size=40))
def test_safe_filename_results_are_always_safe(name: str) -> None:
    try:
        result = safe_filename(name)
    except InvalidFilename:
        return
    assert result
    assert result not in (".", "..")
    assert not result.startswith(".")
    assert not any(ch in result for ch in "/\\\x00")
    assert len(result.encode("utf-8")) <= MAX_FILENAME_BYTES
    assert safe_filename(result) == result


# -- save_upload ----------------------------------------------------------------------------


async def test_save_upload_streams_into_place(paths: ThreadPaths) -> None:
    info = await save_upload(paths, "../notes.txt", chunks(b"hello ", b"world"), max_bytes=100)
    assert info == {
        "filename": "notes.txt",
        "size": 11,
        "path": "/mnt/user-data/uploads/notes.txt",
        "extension": ".txt",
    }
    assert (paths.uploads / "notes.txt").read_bytes() == b"hello world"
    assert entries(paths.uploads) == ["notes.txt"]


async def test_save_upload_creates_the_uploads_directory(tmp_path: Path) -> None:
    paths = ThreadPaths.for_thread(tmp_path / "data", "fresh")
    info = await save_upload(paths, "a", chunks(b"x"), max_bytes=1)
    assert info == {"filename": "a", "size": 1, "path": "/mnt/user-data/uploads/a", "extension": ""}


async def test_save_upload_replaces_a_regular_file(paths: ThreadPaths) -> None:
    (paths.uploads / "data.csv").write_bytes(b"old contents, longer than the new")
    info = await save_upload(paths, "data.csv", chunks(b"new"), max_bytes=100)
    assert info["size"] == 3
    assert (paths.uploads / "data.csv").read_bytes() == b"new"
    assert entries(paths.uploads) == ["data.csv"]


async def test_save_upload_accepts_exactly_the_limit_and_empty_files(paths: ThreadPaths) -> None:
    assert (await save_upload(paths, "full", chunks(b"12", b"345"), max_bytes=5))["size"] == 5
    assert (await save_upload(paths, "empty", chunks(), max_bytes=5))["size"] == 0
    assert entries(paths.uploads) == ["empty", "full"]


async def test_too_large_stops_reading_and_leaves_nothing(paths: ThreadPaths) -> None:
    pulled: list[int] = []

    async def endless() -> AsyncIterator[bytes]:
        for index in range(1000):
            pulled.append(index)
            yield b"x" * 400

    with pytest.raises(UploadTooLarge) as caught:
        await save_upload(paths, "big.bin", endless(), max_bytes=1000)
    assert str(caught.value) == (
        "big.bin is larger than the limit of 1000 bytes per file (uploads.max_file_bytes)"
    )
    assert caught.value.code == "upload_too_large"
    assert pulled == [0, 1, 2]
    assert entries(paths.uploads) == []


async def test_large_upload_is_written_in_pieces(paths: ThreadPaths) -> None:
    piece = bytes(range(256)) * 1024
    info = await save_upload(paths, "blob.bin", chunks(*[piece] * 5), max_bytes=10 * len(piece))
    assert info["size"] == 5 * len(piece)
    assert (paths.uploads / "blob.bin").read_bytes() == piece * 5


async def test_cancelled_upload_leaves_nothing(paths: ThreadPaths) -> None:
    started = asyncio.Event()

    async def stalls() -> AsyncIterator[bytes]:
        yield b"partial data"
        started.set()
        await asyncio.Event().wait()
        yield b"never"

    task = asyncio.create_task(save_upload(paths, "slow.txt", stalls(), max_bytes=100))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert entries(paths.uploads) == []


async def test_save_upload_refuses_to_write_through_a_symlink(
    paths: ThreadPaths, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (paths.uploads / "link.txt").symlink_to(victim)
    with pytest.raises(UnsafeUploadTarget) as caught:
        await save_upload(paths, "link.txt", chunks(b"pwned"), max_bytes=100)
    assert str(caught.value) == (
        "/mnt/user-data/uploads/link.txt exists as a symbolic link; "
        "refusing to replace it with an upload"
    )
    assert victim.read_text() == "untouched"
    assert os.readlink(paths.uploads / "link.txt") == str(victim)
    assert entries(paths.uploads) == ["link.txt"]


async def test_save_upload_refuses_to_replace_a_directory(paths: ThreadPaths) -> None:
    (paths.uploads / "folder").mkdir()
    with pytest.raises(UnsafeUploadTarget, match="exists as a directory"):
        await save_upload(paths, "folder", chunks(b"x"), max_bytes=100)
    assert entries(paths.uploads) == ["folder"]


async def test_invalid_name_creates_nothing(tmp_path: Path) -> None:
    paths = ThreadPaths.for_thread(tmp_path / "data", "t")
    with pytest.raises(InvalidFilename):
        await save_upload(paths, "../..", chunks(b"x"), max_bytes=100)
    assert not paths.root.exists()


async def test_a_batch_is_committed_together_or_not_at_all(paths: ThreadPaths) -> None:
    (paths.uploads / "taken").symlink_to("/etc/hostname")
    staged = [
        await stage_upload(paths, "one.txt", chunks(b"1"), max_bytes=10),
        await stage_upload(paths, "taken", chunks(b"2"), max_bytes=10),
    ]
    assert len(entries(paths.uploads)) == 3  # the symlink and two hidden temp files
    with pytest.raises(UnsafeUploadTarget):
        commit_uploads(paths, staged)
    discard_uploads(paths, staged)
    assert entries(paths.uploads) == ["taken"]


async def test_commit_reports_each_name_once_with_the_last_size(paths: ThreadPaths) -> None:
    staged = [
        await stage_upload(paths, "a.txt", chunks(b"first"), max_bytes=10),
        await stage_upload(paths, "b.txt", chunks(b"b"), max_bytes=10),
        await stage_upload(paths, "dir/a.txt", chunks(b"2nd"), max_bytes=10),
    ]
    files = commit_uploads(paths, staged)
    assert [(f["filename"], f["size"]) for f in files] == [("a.txt", 3), ("b.txt", 1)]
    assert (paths.uploads / "a.txt").read_bytes() == b"2nd"
    assert entries(paths.uploads) == ["a.txt", "b.txt"]


# -- list_uploads / delete_upload -----------------------------------------------------------


def write(directory: Path, files: Iterable[tuple[str, bytes]]) -> None:
    for name, data in files:
        (directory / name).write_bytes(data)


def test_list_uploads_shows_regular_files_with_safe_names_sorted(
    paths: ThreadPaths, tmp_path: Path
) -> None:
    write(paths.uploads, [("b.csv", b"1,2\n"), ("a.md", b"# a"), ("noext", b""), ("C.PDF", b"%")])
    write(paths.uploads, [(".upload-1234.part", b"partial"), (".hidden", b"h"), ("odd\nname", b"")])
    (tmp_path / "outside.txt").write_text("secret")
    (paths.uploads / "link.txt").symlink_to(tmp_path / "outside.txt")
    (paths.uploads / "subdir").mkdir()
    assert list_uploads(paths) == [
        {
            "filename": "C.PDF",
            "size": 1,
            "path": "/mnt/user-data/uploads/C.PDF",
            "extension": ".pdf",
        },
        {"filename": "a.md", "size": 3, "path": "/mnt/user-data/uploads/a.md", "extension": ".md"},
        {
            "filename": "b.csv",
            "size": 4,
            "path": "/mnt/user-data/uploads/b.csv",
            "extension": ".csv",
        },
        {"filename": "noext", "size": 0, "path": "/mnt/user-data/uploads/noext", "extension": ""},
    ]


def test_list_uploads_of_a_thread_without_files_is_empty(tmp_path: Path) -> None:
    paths = ThreadPaths.for_thread(tmp_path / "data", "none")
    assert list_uploads(paths) == []
    assert not paths.root.exists()


def test_delete_upload(paths: ThreadPaths, tmp_path: Path) -> None:
    write(paths.uploads, [("keep.txt", b"k"), ("gone.txt", b"g")])
    delete_upload(paths, "gone.txt")
    assert entries(paths.uploads) == ["keep.txt"]


@pytest.mark.parametrize(
    "name", ["missing.txt", "../keep.txt", ".hidden", "link.txt", "subdir", ""]
)
def test_delete_upload_only_sees_what_listing_shows(
    paths: ThreadPaths, tmp_path: Path, name: str
) -> None:
    write(paths.uploads, [("keep.txt", b"k"), (".hidden", b"h")])
    (tmp_path / "target.txt").write_text("target")
    (paths.uploads / "link.txt").symlink_to(tmp_path / "target.txt")
    (paths.uploads / "subdir").mkdir()
    before = entries(paths.uploads)
    with pytest.raises(NoSuchFile) as caught:
        delete_upload(paths, name)
    assert str(caught.value) == f"no upload named {name!r} in /mnt/user-data/uploads"
    assert caught.value.code == "file_not_found"
    assert entries(paths.uploads) == before
    assert (tmp_path / "target.txt").read_text() == "target"
