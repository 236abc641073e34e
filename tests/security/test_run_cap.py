"""Issue 7, item 9: many runs on many threads must not all execute (and start sandboxes) at
once. ``runs.max_concurrent`` caps what a worker executes; the excess waits ``pending`` in
admission order and runs when a slot frees."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langgraph_sdk import get_client

from tests.runs.runs_helpers import script, user
from tests.support.live import LiveServer

CAP = 2
RUNS = 5


async def test_runs_beyond_the_cap_wait_pending_in_order(
    make_server: Callable[..., LiveServer], stub: Any, key: str
) -> None:
    live = make_server(runs={"max_concurrent": CAP, "poll_seconds": 0.5})
    client = get_client(url=live.url, timeout=60)
    try:
        created = []
        for i in range(RUNS):
            prompt = f"{key}-{i}"
            script(stub, prompt, {"content": "done", "delay": 2.5})
            thread = await client.threads.create()
            run = await client.runs.create(thread["thread_id"], "lead_agent", input=user(prompt))
            created.append((thread["thread_id"], run["run_id"]))

        # One look reads the runs one after another, newest first, so it is no snapshot,
        # but two things it sees are certain. A run seen pending after a newer run was seen
        # started was still waiting when the newer one started (out of order). A run seen
        # running in two consecutive looks ran all the time between its two reads, so all
        # such runs ran at once (between the end of the first look and the start of the
        # second).
        newest_first = list(reversed(created))
        out_of_order: list[tuple[str, str]] = []
        most_running = 0
        before: set[str] = set()
        while True:
            statuses: dict[str, str] = {}
            for tid, run_id in newest_first:
                status = statuses[run_id] = (await client.runs.get(tid, run_id))["status"]
                if status == "pending":
                    out_of_order += [(run_id, r) for r, s in statuses.items() if s != "pending"]
            running = {r for r, s in statuses.items() if s == "running"}
            most_running = max(most_running, len(running & before))
            before = running
            if all(s in ("success", "error", "interrupted") for s in statuses.values()):
                break
            await asyncio.sleep(0.05)

        assert set(statuses.values()) == {"success"}
        assert most_running == CAP  # never more; and the looks did see the cap reached
        assert out_of_order == []  # the excess waited its turn, in admission order
    finally:
        await client.aclose()
