"""Resource limits (issue 7, item 9's sandbox parts), reached by the model's bash calls on a
live server whose limits are small (``tests.security.sandbox_helpers.SANDBOX``).

Each attack ends with a clear result while ``GET /ok`` keeps answering, and the thread
keeps working afterwards. Before: a bash call could allocate 4 GiB, start 2,000 processes
(a fork bomb took the machine down), fill the disk and a RAM-backed ``/tmp``.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from tests.security.sandbox_helpers import (
    call,
    requires_bwrap,
    tool_calls,
    tool_calls_in,
    while_answering,
)
from tests.support.openai_stub import StubServerThread

pytestmark = [pytest.mark.bwrap, requires_bwrap]

QUOTA_NOTE = (
    "[the thread's files are at its disk quota of 64 MiB: writing fails until files are deleted]"
)


async def test_a_fork_bomb_is_contained(
    lg: LangGraphClient, http: httpx.AsyncClient, stub: StubServerThread, key: str
) -> None:
    bomb = "f(){ f | f & }; f; sleep 2; echo survived"
    results, answered = await while_answering(
        http,
        tool_calls(lg, stub, key, call("bash", command=bomb), call("bash", command="echo ok")),
    )
    [(_, status, bombed), after] = results
    assert status == "success"
    # The shell could not fork past the process limit (64): it says so, and its own
    # `sleep` could not start either; the sandbox then ends with the shell.
    assert "Cannot fork" in bombed
    assert "survived" not in bombed or bombed.count("Cannot fork") > 1
    assert after == ("bash", "success", "ok\n")
    assert answered >= 1


async def test_an_8_gib_allocation_fails(
    lg: LangGraphClient, http: httpx.AsyncClient, stub: StubServerThread, key: str
) -> None:
    allocate = "python3 -c 'bytearray(8 << 30)'"
    results, answered = await while_answering(
        http, tool_calls(lg, stub, key, call("bash", command=allocate))
    )
    assert results == [
        (
            "bash",
            "success",
            "Traceback (most recent call last):\n"
            '  File "<string>", line 1, in <module>\n'
            "MemoryError\n[exit code 1]",
        )
    ]
    assert answered >= 1


async def test_a_disk_fill_stops_at_the_quota_and_the_thread_keeps_working(
    lg: LangGraphClient, http: httpx.AsyncClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(
        key,
        [
            {"tool_calls": [call("bash", command="head -c 1G /dev/zero > big")]},
            {"tool_calls": [call("bash", command="echo more > small")]},
            {"tool_calls": [call("bash", command="rm big && echo hello > small && cat small")]},
            {"content": "done"},
        ],
    )
    tid = (await lg.threads.create())["thread_id"]
    results, answered = await while_answering(http, tool_calls_in(lg, tid, key))
    assert results == [
        (
            "bash",
            "success",
            "File size limit exceeded\n"
            "[the command was stopped: a file reached the size limit]\n"
            f"{QUOTA_NOTE}\n[exit code 153]",
        ),
        # At the quota, small files can still be written (the quota is then checked while
        # the command runs): enough to work the way out.
        ("bash", "success", f"{QUOTA_NOTE}\n"),
        ("bash", "success", "hello\n"),
    ]
    assert answered >= 1


async def test_many_files_are_stopped_by_the_quota(
    lg: LangGraphClient, http: httpx.AsyncClient, stub: StubServerThread, key: str
) -> None:
    """Files each below the per-file bound add up: the command is stopped while it runs
    (the quota is checked every second)."""
    fill = "i=0; while true; do i=$((i+1)); head -c 4M /dev/zero > f$i; sleep 0.05; done"
    results, _ = await while_answering(
        http,
        tool_calls(
            lg, stub, key, call("bash", command=fill), call("bash", command="rm f* && echo ok")
        ),
    )
    assert results == [
        (
            "bash",
            "success",
            "[the command was stopped: the thread's files reached its disk quota of 64 MiB; "
            f"delete files to make room]\n{QUOTA_NOTE}\n[exit code -9]",
        ),
        ("bash", "success", "ok\n"),
    ]


async def test_tmp_is_capped(lg: LangGraphClient, stub: StubServerThread, key: str) -> None:
    assert await tool_calls(
        lg,
        stub,
        key,
        call("bash", command="head -c 100M /dev/zero > /tmp/x"),
        call("bash", command="head -c 100M /dev/zero > /dev/shm/x"),
        call("bash", command="df --output=size -m /tmp /dev/shm | tail -n 2 | tr -d ' '"),
    ) == [
        (
            "bash",
            "success",
            "head: error writing 'standard output': No space left on device\n[exit code 1]",
        ),
        (
            "bash",
            "success",
            "head: error writing 'standard output': No space left on device\n[exit code 1]",
        ),
        ("bash", "success", "16\n16\n"),
    ]


async def test_cpu_time_is_capped(
    lg: LangGraphClient, http: httpx.AsyncClient, stub: StubServerThread, key: str
) -> None:
    spin = "python3 -c 'while True: pass'"
    results, answered = await while_answering(
        http, tool_calls(lg, stub, key, call("bash", command=spin))
    )
    assert results == [
        (
            "bash",
            "success",
            "CPU time limit exceeded\n"
            "[the command was stopped: it used up its CPU time limit]\n[exit code 152]",
        )
    ]
    assert answered >= 1


async def test_at_most_max_concurrent_commands_run_at_once(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    """Four threads each run one command; the server runs two at a time (max_concurrent:
    2). Each command records when it ran (the sandboxes share the host's clock)."""
    span = "date +%s%N; sleep 1; date +%s%N"
    keys = [f"{key}-{n}" for n in range(4)]
    results = await asyncio.gather(
        *(tool_calls(lg, stub, k, call("bash", command=span)) for k in keys)
    )
    spans = []
    for [(_, status, output)] in results:
        assert status == "success"
        start, end = (int(line) for line in output.split())
        spans.append((start, end))
    for start, _ in spans:
        running = sum(1 for s, e in spans if s <= start < e)
        assert running <= 2, spans
