"""Issue 7, item 9: many runs on many threads must not all execute (and start sandboxes) at
once. ``runs.max_concurrent`` caps what a worker executes; the excess waits ``pending`` in
admission order and runs when a slot frees."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langgraph_sdk import get_client

from tests.runs.runs_helpers import script, slow_turn, user
from tests.support.live import LiveServer

CAP = 2
RUNS = 5


@pytest.mark.skip(
    reason="known defect, open in issue 7: on a loaded machine 3 runs were seen `running` with "
    "runs.max_concurrent 2 (the dispatcher re-check under the claim lock did not close it)"
)
async def test_runs_beyond_the_cap_wait_pending_in_order(
    make_server: Callable[..., LiveServer], stub: Any, key: str
) -> None:
    live = make_server(runs={"max_concurrent": CAP, "poll_seconds": 0.5})
    client = get_client(url=live.url, timeout=60)
    try:
        created = []
        for i in range(RUNS):
            prompt = f"{key}-{i}"
            script(stub, prompt, slow_turn(words=60, chunk_delay=0.05))
            thread = await client.threads.create()
            run = await client.runs.create(thread["thread_id"], "lead_agent", input=user(prompt))
            created.append((thread["thread_id"], run["run_id"]))

        started: list[str] = []  # run ids in the order they were first seen executing
        most_running = 0
        while True:
            statuses = {
                run_id: (await client.runs.get(tid, run_id))["status"] for tid, run_id in created
            }
            running = [r for r, s in statuses.items() if s == "running"]
            most_running = max(most_running, len(running))
            # within one look, a finished run started before a running one
            started += [r for r, s in statuses.items() if s == "success" and r not in started]
            started += [r for r in running if r not in started]
            if all(s in ("success", "error", "interrupted") for s in statuses.values()):
                break
            await asyncio.sleep(0.05)

        assert set(statuses.values()) == {"success"}
        assert most_running <= CAP
        # the excess waited its turn: the first runs admitted were the first to execute
        assert set(started[:CAP]) == {run_id for _, run_id in created[:CAP]}
    finally:
        await client.aclose()
