"""ls, read_file, write_file and str_replace, called as a ToolNode calls them."""

from __future__ import annotations

import asyncio
from typing import Any

from fawn.agent.tools import (
    EditMismatch,
    FileMissing,
    FileTooLarge,
    InvalidToolInput,
    WrongFileType,
)
from fawn.agent.tools.files import LS_MAX_ENTRIES, MAX_READ_CHARS, MAX_TEXT_FILE_BYTES
from tests.agent.tools.helpers import ToolBench

WS = "/mnt/user-data/workspace"


async def test_write_then_read_round_trip(bench: ToolBench) -> None:
    wrote = await bench.text(
        "write_file", description="d", path=f"{WS}/notes/a.txt", content="alpha\nbeta\n"
    )
    assert wrote == f"Wrote 11 characters to {WS}/notes/a.txt"
    assert (bench.workspace() / "notes" / "a.txt").read_text() == "alpha\nbeta\n"
    assert await bench.text("read_file", description="d", path=f"{WS}/notes/a.txt") == (
        "alpha\nbeta\n"
    )


async def test_write_append_and_relative_paths(bench: ToolBench) -> None:
    await bench.text("write_file", description="d", path="log.txt", content="one\n")
    appended = await bench.text(
        "write_file", description="d", path="log.txt", content="two\n", append=True
    )
    assert appended == f"Appended 4 characters to {WS}/log.txt"
    assert await bench.text("read_file", description="d", path=f"{WS}/log.txt") == "one\ntwo\n"
    await bench.text("write_file", description="d", path="log.txt", content="new")
    assert (bench.workspace() / "log.txt").read_text() == "new"


async def test_read_file_line_ranges(bench: ToolBench) -> None:
    (bench.workspace() / "lines.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    path = f"{WS}/lines.txt"

    async def read(**lines: Any) -> str:
        return await bench.text("read_file", description="d", path=path, **lines)

    assert await read(start_line=2, end_line=4) == "line 2\nline 3\nline 4\n"
    assert await read(start_line=9) == "line 9\nline 10\n"
    assert await read(end_line=2) == "line 1\nline 2\n"
    assert await read(start_line=10, end_line=99) == "line 10\n"
    assert await read(start_line=3, end_line=3) == "line 3\n"

    past_end = await bench.error("read_file", description="d", path=path, start_line=11)
    assert isinstance(past_end, InvalidToolInput)
    assert str(past_end) == f"start_line 11 is past the end of {path}, which has 10 lines"
    backwards = await bench.error("read_file", description="d", path=path, start_line=5, end_line=2)
    assert str(backwards) == "end_line (2) is before start_line (5)"
    zero = await bench.error("read_file", description="d", path=path, start_line=0)
    assert isinstance(zero, InvalidToolInput)


async def test_read_file_caps_long_text_with_a_marker(bench: ToolBench) -> None:
    line = "x" * 99 + "\n"
    (bench.workspace() / "big.txt").write_text(line * 1000)  # 100,000 characters
    text = await bench.text("read_file", description="d", path=f"{WS}/big.txt")
    shown = line * (MAX_READ_CHARS // 100)
    assert text == (
        f"{shown}[truncated: 100000 characters, the first {len(shown)} shown; "
        f"continue with start_line={MAX_READ_CHARS // 100 + 1}]"
    )


async def test_read_file_refuses_binary_large_missing_and_directories(bench: ToolBench) -> None:
    (bench.workspace() / "blob.bin").write_bytes(b"\x00\x01\x02\xff")
    binary = await bench.error("read_file", description="d", path=f"{WS}/blob.bin")
    assert isinstance(binary, WrongFileType)
    assert str(binary).startswith(f"{WS}/blob.bin is not UTF-8 text (it looks like a binary file)")

    with (bench.workspace() / "huge.txt").open("wb") as handle:
        handle.truncate(MAX_TEXT_FILE_BYTES + 1)
    huge = await bench.error("read_file", description="d", path=f"{WS}/huge.txt")
    assert isinstance(huge, FileTooLarge)

    missing = await bench.error("read_file", description="d", path=f"{WS}/nope.txt")
    assert isinstance(missing, FileMissing)
    assert str(missing) == f"{WS}/nope.txt does not exist"

    directory = await bench.error("read_file", description="d", path=WS)
    assert isinstance(directory, WrongFileType)
    assert str(directory) == f"{WS} is a directory, not a file"

    (bench.workspace() / "empty.txt").write_text("")
    empty = await bench.text("read_file", description="d", path=f"{WS}/empty.txt")
    assert empty == f"(empty file: {WS}/empty.txt)"


async def test_str_replace_round_trip_and_errors(bench: ToolBench) -> None:
    path = f"{WS}/app.py"
    await bench.text(
        "write_file", description="d", path=path, content="x = 1\ny = 1\nprint(x + y)\n"
    )

    once = await bench.text(
        "str_replace", description="d", path=path, old_str="print(x + y)", new_str="print(x * y)"
    )
    assert once == f"Replaced 1 occurrence in {path}"

    missing = await bench.error(
        "str_replace", description="d", path=path, old_str="z = 3", new_str="z = 4"
    )
    assert isinstance(missing, EditMismatch)
    assert str(missing).startswith(f"old_str was not found in {path}.")

    ambiguous = await bench.error(
        "str_replace", description="d", path=path, old_str=" = 1", new_str=" = 2"
    )
    assert isinstance(ambiguous, EditMismatch)
    assert str(ambiguous).startswith(f"old_str appears 2 times in {path};")
    # A refused edit leaves the file as it was.
    assert (bench.workspace() / "app.py").read_text() == "x = 1\ny = 1\nprint(x * y)\n"

    every = await bench.text(
        "str_replace", description="d", path=path, old_str=" = 1", new_str=" = 2", replace_all=True
    )
    assert every == f"Replaced 2 occurrences in {path}"
    assert await bench.text("read_file", description="d", path=path) == (
        "x = 2\ny = 2\nprint(x * y)\n"
    )

    empty = await bench.error("str_replace", description="d", path=path, old_str="", new_str="a")
    assert isinstance(empty, InvalidToolInput)
    absent = await bench.error(
        "str_replace", description="d", path=f"{WS}/absent.py", old_str="a", new_str="b"
    )
    assert isinstance(absent, FileMissing)


async def test_write_file_refuses_directories_and_files_as_parents(bench: ToolBench) -> None:
    (bench.workspace() / "dir").mkdir()
    (bench.workspace() / "file").write_text("f")
    on_directory = await bench.error("write_file", description="d", path=f"{WS}/dir", content="x")
    assert str(on_directory) == f"{WS}/dir is a directory, not a file"
    under_file = await bench.error(
        "write_file", description="d", path=f"{WS}/file/child.txt", content="x"
    )
    assert isinstance(under_file, WrongFileType)
    assert (bench.workspace() / "file").read_text() == "f"


async def test_ls_lists_two_levels_with_kinds(bench: ToolBench) -> None:
    workspace = bench.workspace()
    (workspace / "src" / "pkg" / "deep").mkdir(parents=True)
    (workspace / "src" / "main.py").write_text("")
    (workspace / "src" / "pkg" / "mod.py").write_text("")
    (workspace / "README.md").write_text("")
    (workspace / ".git" / "objects").mkdir(parents=True)
    (workspace / "link").symlink_to("README.md")

    listing = await bench.text("ls", description="d", path=WS)
    assert listing.splitlines() == [
        f"{WS}/.git/",  # listed, not descended into
        f"{WS}/README.md",
        f"{WS}/link@",
        f"{WS}/src/",
        f"{WS}/src/main.py",
        f"{WS}/src/pkg/",
    ]
    assert await bench.text("ls", description="d", path=f"{WS}/src/pkg") == (
        f"{WS}/src/pkg/deep/\n{WS}/src/pkg/mod.py"
    )


async def test_ls_of_the_user_data_root_and_of_empty_and_missing_directories(
    bench: ToolBench,
) -> None:
    (bench.workspace() / "a.txt").write_text("")
    assert (await bench.text("ls", description="d", path="/mnt/user-data")).splitlines() == [
        "/mnt/user-data/outputs/",
        "/mnt/user-data/uploads/",
        "/mnt/user-data/workspace/",
        "/mnt/user-data/workspace/a.txt",
    ]
    assert await bench.text("ls", description="d", path="/mnt/user-data/outputs") == (
        "(empty directory: /mnt/user-data/outputs)"
    )
    missing = await bench.error("ls", description="d", path=f"{WS}/nowhere")
    assert isinstance(missing, FileMissing)
    not_dir = await bench.error("ls", description="d", path=f"{WS}/a.txt")
    assert str(not_dir) == f"{WS}/a.txt is not a directory"


async def test_ls_caps_entries(bench: ToolBench) -> None:
    many = bench.workspace() / "many"
    many.mkdir()
    for n in range(LS_MAX_ENTRIES + 20):
        (many / f"f{n:04d}").write_text("")
    lines = (await bench.text("ls", description="d", path=f"{WS}/many")).splitlines()
    assert len(lines) == LS_MAX_ENTRIES + 1
    assert lines[-1].startswith(f"[listing stopped after {LS_MAX_ENTRIES} entries;")


async def test_skills_are_readable_not_writable(bench: ToolBench) -> None:
    assert await bench.text(
        "read_file", description="d", path="/mnt/skills/public/demo/SKILL.md"
    ) == ("# Demo skill\n")
    assert await bench.text("ls", description="d", path="/mnt/skills") == (
        "/mnt/skills/public/\n/mnt/skills/public/demo/"
    )


async def test_host_paths_inside_files_are_masked(bench: ToolBench) -> None:
    leaked = f"{bench.workspace()}/data.csv and {bench.outputs()}/r.md\n"
    (bench.workspace() / "paths.txt").write_text(leaked)
    expected = f"{WS}/data.csv and /mnt/user-data/outputs/r.md\n"
    assert await bench.text("read_file", description="d", path=f"{WS}/paths.txt") == expected
    assert await bench.text("grep", description="d", pattern="data.csv", path=WS) == (
        f"{WS}/paths.txt:1: {expected.rstrip()}"
    )


async def test_concurrent_edits_of_one_file_are_serialised(bench: ToolBench) -> None:
    path = f"{WS}/counter.txt"
    await bench.text("write_file", description="d", path=path, content="".join(
        f"slot {n}: empty\n" for n in range(20)
    ))  # fmt: skip
    await asyncio.gather(
        *(
            bench.text(
                "str_replace",
                description="d",
                path=path,
                old_str=f"slot {n}: empty",
                new_str=f"slot {n}: filled",
            )
            for n in range(20)
        )
    )
    assert (bench.workspace() / "counter.txt").read_text() == "".join(
        f"slot {n}: filled\n" for n in range(20)
    )
