"""``checkpoints.durability``: the deployment's default for when a run's steps become
durable; a run's own ``durability`` still wins."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph_sdk import get_client

from tests.runs.runs_helpers import human, slow_turn, user, wait_streaming
from tests.support.live import LiveServer


@pytest.mark.parametrize("mode", ["full", "delta"])
async def test_the_configured_durability_applies_unless_the_run_asks(
    mode: str, make_server: Callable[..., LiveServer], stub: Any, key: str
) -> None:
    live = make_server(checkpoints={"durability": "exit", "mode": mode})
    stub.add_script(key, [slow_turn(30, 0.05)])
    client = get_client(url=live.url, timeout=60)
    try:
        # the deployment's "exit": nothing of the run is durable (or visible) until it ends
        quiet = (await client.threads.create())["thread_id"]
        run = await client.runs.create(
            quiet, "lead_agent", input=user(key), stream_mode="messages-tuple"
        )
        await wait_streaming(client, quiet, run["run_id"])
        assert (await client.threads.get_state(quiet))["values"] == {}
        await client.runs.join(quiet, run["run_id"])
        ended = (await client.threads.get_state(quiet))["values"]
        assert [m["type"] for m in ended["messages"]] == ["human", "ai"]
        # what the run wrote at its end reads back the same from its history
        history = await client.threads.get_history(quiet)
        assert history[0]["values"] == ended

        # a run asking for "sync" has its input step durable before the model answers
        eager = (await client.threads.create())["thread_id"]
        run = await client.runs.create(
            eager,
            "lead_agent",
            input=user(key),
            stream_mode="messages-tuple",
            durability="sync",
        )
        await wait_streaming(client, eager, run["run_id"])
        midway = (await client.threads.get_state(eager))["values"]
        assert midway["messages"] == [human(key)]
        await client.runs.join(eager, run["run_id"])
    finally:
        await client.aclose()
