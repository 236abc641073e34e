"""glob and grep over real files."""

from __future__ import annotations

import pytest

from fawn.agent.tools import InvalidToolInput, WrongFileType
from fawn.agent.tools.patterns import compile_glob
from fawn.agent.tools.search import GLOB_MAX_RESULTS, GREP_MAX_MATCHES
from tests.agent.tools.helpers import ToolBench

WS = "/mnt/user-data/workspace"


@pytest.fixture
def tree(bench: ToolBench) -> ToolBench:
    workspace = bench.workspace()
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "main.py").write_text("import pkg\nprint('Hello World')\n")
    (workspace / "src" / "pkg" / "util.py").write_text("def hello():\n    return 'hello (1+1)'\n")
    (workspace / "notes.md").write_text("HELLO from notes\nnothing here\n")
    (workspace / "data.bin").write_bytes(b"hello\x00binary")
    (workspace / "node_modules" / "dep").mkdir(parents=True)
    (workspace / "node_modules" / "dep" / "index.js").write_text("hello from a dependency\n")
    return bench


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("a.py", "a.py", True),
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/pkg/a.py", True),
        ("src/**", "src/pkg/a.py", True),
        ("src/*/a.py", "src/pkg/a.py", True),
        ("src/**/a.py", "src/a.py", True),
        ("?.md", "a.md", True),
        ("?.md", "ab.md", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("[a-c]x", "cx", True),
        ("a+b(1).txt", "a+b(1).txt", True),
        ("[", "[", True),
    ],
)
def test_glob_patterns(pattern: str, path: str, matches: bool) -> None:
    assert bool(compile_glob(pattern).fullmatch(path)) is matches


@pytest.mark.parametrize("pattern", ["", "/etc/*", "../*", "a/../../b", "[z-a]"])
def test_glob_patterns_refused(pattern: str) -> None:
    with pytest.raises(InvalidToolInput):
        compile_glob(pattern)


async def test_glob_finds_files_sorted(tree: ToolBench) -> None:
    found = await tree.text("glob", description="d", pattern="**/*.py", path=WS)
    assert found == f"{WS}/src/main.py\n{WS}/src/pkg/util.py"
    assert await tree.text("glob", description="d", pattern="*.md", path=WS) == f"{WS}/notes.md"
    assert await tree.text("glob", description="d", pattern="*.py", path=f"{WS}/src/pkg") == (
        f"{WS}/src/pkg/util.py"
    )
    # Noisy directories are skipped unless the pattern names them.
    assert await tree.text("glob", description="d", pattern="**/*.js", path=WS) == (
        f"No files match '**/*.js' under {WS}"
    )
    assert await tree.text("glob", description="d", pattern="node_modules/**", path=WS) == (
        f"{WS}/node_modules/dep/index.js"
    )


async def test_glob_caps_results(bench: ToolBench) -> None:
    for n in range(GLOB_MAX_RESULTS + 5):
        (bench.workspace() / f"f{n:03d}.txt").write_text("")
    lines = (await bench.text("glob", description="d", pattern="*.txt", path=WS)).splitlines()
    assert lines[0] == f"{WS}/f000.txt"
    assert lines[GLOB_MAX_RESULTS - 1] == f"{WS}/f{GLOB_MAX_RESULTS - 1:03d}.txt"
    assert lines[GLOB_MAX_RESULTS:] == ["[5 more matches not shown; narrow the pattern or path]"]


async def test_grep_regex_case_insensitive_by_default(tree: ToolBench) -> None:
    found = await tree.text("grep", description="d", pattern=r"hel+o", path=WS)
    assert found.splitlines() == [
        f"{WS}/notes.md:1: HELLO from notes",
        f"{WS}/src/main.py:2: print('Hello World')",
        f"{WS}/src/pkg/util.py:1: def hello():",
        f"{WS}/src/pkg/util.py:2:     return 'hello (1+1)'",
    ]


async def test_grep_case_sensitive_literal_and_glob(tree: ToolBench) -> None:
    sensitive = await tree.text(
        "grep", description="d", pattern="Hello", path=WS, case_sensitive=True
    )
    assert sensitive == f"{WS}/src/main.py:2: print('Hello World')"

    # As a regex, "(1+1)" means "11" in a group; literally it is the text itself.
    assert await tree.text("grep", description="d", pattern="(1+1)", path=WS) == (
        f"No matches for '(1+1)' under {WS}"
    )
    assert await tree.text("grep", description="d", pattern="(1+1)", path=WS, literal=True) == (
        f"{WS}/src/pkg/util.py:2:     return 'hello (1+1)'"
    )

    by_name = await tree.text("grep", description="d", pattern="hello", path=WS, glob="*.md")
    assert by_name == f"{WS}/notes.md:1: HELLO from notes"
    by_path = await tree.text("grep", description="d", pattern="hello", path=WS, glob="src/pkg/*")
    assert by_path.splitlines() == [
        f"{WS}/src/pkg/util.py:1: def hello():",
        f"{WS}/src/pkg/util.py:2:     return 'hello (1+1)'",
    ]


async def test_grep_a_single_file(tree: ToolBench) -> None:
    assert await tree.text("grep", description="d", pattern="print", path=f"{WS}/src/main.py") == (
        f"{WS}/src/main.py:2: print('Hello World')"
    )
    binary = await tree.error("grep", description="d", pattern="hello", path=f"{WS}/data.bin")
    assert isinstance(binary, WrongFileType)


async def test_grep_invalid_regex_is_a_clear_error(tree: ToolBench) -> None:
    error = await tree.error("grep", description="d", pattern="print(", path=WS)
    assert isinstance(error, InvalidToolInput)
    assert str(error) == (
        "invalid regular expression 'print(': missing ): print( (patterns run on RE2: no "
        "back-references or look-around). Fix it, or set literal to true to search for the "
        "text exactly as written"
    )


async def test_grep_literal_text_with_every_special_character(tree: ToolBench) -> None:
    text = "a (b) [c] {d} *e+ ?f | ^g$ \\h. #i ~j &k -l"
    (tree.workspace() / "special.txt").write_text(f"before\n{text}\nafter\n")
    found = await tree.text(
        "grep", description="d", pattern=text, path=f"{WS}/special.txt", literal=True
    )
    assert found == f"{WS}/special.txt:2: {text}"


async def test_grep_back_references_are_refused_clearly(tree: ToolBench) -> None:
    error = await tree.error("grep", description="d", pattern="(a)\\1", path=WS)
    assert isinstance(error, InvalidToolInput)
    assert str(error).startswith(
        "invalid regular expression '(a)\\\\1': invalid escape sequence: \\1 (patterns run on RE2"
    )


async def test_grep_caps_matches(bench: ToolBench) -> None:
    (bench.workspace() / "many.txt").write_text("match\n" * (GREP_MAX_MATCHES + 10))
    lines = (await bench.text("grep", description="d", pattern="match", path=WS)).splitlines()
    assert len(lines) == GREP_MAX_MATCHES + 1
    assert lines[-1] == (
        f"[stopped at {GREP_MAX_MATCHES} matches; narrow the pattern, path or glob]"
    )
    (bench.workspace() / "many.txt").write_text("match\n" * GREP_MAX_MATCHES)
    lines = (await bench.text("grep", description="d", pattern="match", path=WS)).splitlines()
    assert len(lines) == GREP_MAX_MATCHES
