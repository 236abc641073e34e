"""No tool can stall the server (issue 7, items 3 and 4): pathological patterns for
``grep`` and ``glob``, called by the model on a live server while ``GET /ok`` is asked
again and again.

Before: ``grep`` with ``(a+)+$`` over 32 ``a`` and a ``!`` held the interpreter (Python's
backtracking ``re``) for minutes, and ``glob`` with ten ``**/`` over a 25-level directory
for seconds; no other request was answered meanwhile.
"""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from tests.security.sandbox_helpers import WS, call, requires_bwrap, tool_calls, while_answering
from tests.support.openai_stub import StubServerThread

pytestmark = [pytest.mark.bwrap, requires_bwrap]

DEEP = "/".join(f"d{n}" for n in range(25))


async def test_grep_with_catastrophic_backtracking_pattern(
    lg: LangGraphClient, http: httpx.AsyncClient, stub: StubServerThread, key: str
) -> None:
    line = "a" * 32 + "!"
    results, answered = await while_answering(
        http,
        tool_calls(
            lg,
            stub,
            key,
            call("write_file", path=f"{WS}/evil.txt", content=f"{line}\n" * 200),
            call("grep", pattern="(a+)+$", path=f"{WS}/evil.txt"),
            call("grep", pattern="(a+)+!$", path=WS),
            call("grep", pattern="(a|aa)*b", path=WS),
        ),
    )
    assert results[1:] == [
        ("grep", "success", f"No matches for '(a+)+$' under {WS}/evil.txt"),
        (
            "grep",
            "success",
            "\n".join(f"{WS}/evil.txt:{n}: {line}" for n in range(1, 101))
            + "\n[stopped at 100 matches; narrow the pattern, path or glob]",
        ),
        ("grep", "success", f"No matches for '(a|aa)*b' under {WS}"),
    ]
    assert answered >= 1


async def test_grep_refuses_what_needs_backtracking(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    [(name, status, content)] = await tool_calls(
        lg, stub, key, call("grep", pattern="(a+)\\1$", path=WS)
    )
    assert (name, status) == ("grep", "error")
    assert "invalid regular expression '(a+)\\\\1$': invalid escape sequence: \\1" in content
    assert "(patterns run on RE2: no back-references or look-around)" in content


async def test_glob_with_ten_globstars_over_a_deep_tree(
    lg: LangGraphClient, http: httpx.AsyncClient, stub: StubServerThread, key: str
) -> None:
    globstars = "**/" * 10
    results, answered = await while_answering(
        http,
        tool_calls(
            lg,
            stub,
            key,
            call("bash", command=f"mkdir -p {DEEP} && touch {DEEP}/leaf.txt"),
            call("glob", pattern=f"{globstars}nothing", path=WS),
            call("glob", pattern=f"{globstars}*.txt", path=WS),
            call("glob", pattern="**/" * 2000 + "x", path=WS),
        ),
    )
    assert results == [
        ("bash", "success", "(no output)"),
        ("glob", "success", f"No files match '{globstars}nothing' under {WS}"),
        ("glob", "success", f"{WS}/{DEEP}/leaf.txt"),
        ("glob", "success", f"No files match '{'**/' * 2000}x' under {WS}"),
    ]
    assert answered >= 1
