"""A ``delta``-mode read through a PostgreSQL outage: rebuilding ``messages`` walks the
thread's writes (``aget_delta_channel_history``), and that read waits for the database like
every other checkpoint read instead of failing the run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph

from fawn.agent.delta import thread_state_schema
from fawn.config.settings import DatabaseSettings
from fawn.store.checkpoints import POOL_WAIT_SECONDS, open_checkpointer
from tests.faults.cluster import PrivatePostgres

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    cluster = PrivatePostgres().init()
    try:
        yield cluster
    finally:
        cluster.destroy()


async def test_a_delta_history_read_waits_out_an_outage(
    postgres: PrivatePostgres, tmp_path: Path
) -> None:
    url = postgres.create_database()
    async with open_checkpointer(DatabaseSettings(url=url), tmp_path) as saver:
        builder = StateGraph(thread_state_schema("delta", keyframe_every=100))
        builder.add_node("model", lambda state: {"messages": [AIMessage("answer")]})
        builder.add_edge(START, "model")
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        for turn in range(3):
            await graph.ainvoke({"messages": [HumanMessage(f"question {turn}")]}, config)
        latest = (await graph.aget_state(config)).config

        postgres.stop()
        read = asyncio.create_task(
            saver.aget_delta_channel_history(config=latest, channels=["messages"])
        )
        # longer than the pool waits for a connection: a read that does not retry has failed
        await asyncio.sleep(POOL_WAIT_SECONDS + 2)
        assert not read.done()
        postgres.start()
        history = await read

        assert len(history["messages"]["writes"]) == 6  # three questions, three answers
        state = await graph.aget_state(config)
        assert [m.content for m in state.values["messages"]] == [
            text for turn in range(3) for text in (f"question {turn}", "answer")
        ]
