"""Checkpoint bytes per turn as a thread grows, in both checkpoint modes side by side.

A graph with fawn's message channel (``full``: ``add_messages``; ``delta``: the
``DeltaChannel`` of ``fawn.agent.delta`` with its keyframes) answers each human turn with
one AI message of ``--answer-chars`` characters; checkpoints go to the SQLite saver fawn
uses by default, or with ``--postgres URL`` to the PostgreSQL one (logical bytes:
``octet_length``, before TOAST compression). Reported per mode: the bytes the checkpoint
tables gained during turn 10 and during the last turn (``--turns``), their median and mean
over the last 50 turns (the mean includes the keyframes a ``delta`` thread writes every
``--keyframe-every`` message updates, two per turn here), and the time to read the latest
state and the oldest one's child (the reads replay the writes since the nearest keyframe).
Nothing here asserts.

    .venv/bin/python bench/checkpoint_bytes_bench.py --turns 200
    .venv/bin/python bench/checkpoint_bytes_bench.py --turns 200 --postgres postgresql://...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import aiosqlite
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from psycopg import AsyncConnection
from psycopg.rows import dict_row

from fawn.agent.delta import replay_messages

Saver = BaseCheckpointSaver[Any]
Measure = Callable[[str], Awaitable[int]]


class FullState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def delta_state(keyframe_every: int) -> type[Any]:
    channel = DeltaChannel(replay_messages, list, snapshot_frequency=keyframe_every)
    return TypedDict("DeltaState", {"messages": Annotated[list[AnyMessage], channel]})  # type: ignore[operator,no-any-return]


@asynccontextmanager
async def sqlite_saver() -> AsyncIterator[tuple[Saver, Measure]]:
    conn = await aiosqlite.connect(":memory:")
    try:
        saver = AsyncSqliteSaver(conn)
        await saver.setup()

        async def measure(thread_id: str) -> int:
            total = 0
            for query in (
                "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) "
                "FROM checkpoints WHERE thread_id = ?",
                "SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes WHERE thread_id = ?",
            ):
                async with conn.execute(query, (thread_id,)) as cursor:
                    row = await cursor.fetchone()
                    total += int(row[0]) if row else 0
            return total

        yield saver, measure
    finally:
        await conn.close()


@asynccontextmanager
async def postgres_saver(url: str) -> AsyncIterator[tuple[Saver, Measure]]:
    conn = await AsyncConnection.connect(
        url, autocommit=True, prepare_threshold=0, row_factory=dict_row
    )
    try:
        saver = AsyncPostgresSaver(conn)  # type: ignore[arg-type]
        await saver.setup()

        async def measure(thread_id: str) -> int:
            query = (
                "SELECT (SELECT COALESCE(SUM(octet_length(checkpoint::text) "
                "+ octet_length(metadata::text)), 0) FROM checkpoints WHERE thread_id = %s) "
                "+ (SELECT COALESCE(SUM(octet_length(blob)), 0) FROM checkpoint_blobs "
                "WHERE thread_id = %s) "
                "+ (SELECT COALESCE(SUM(octet_length(blob)), 0) FROM checkpoint_writes "
                "WHERE thread_id = %s) AS total"
            )
            async with conn.cursor() as cur:
                await cur.execute(query, (thread_id,) * 3)
                row = await cur.fetchone()
            return int(row["total"]) if row else 0

        yield saver, measure
    finally:
        await conn.close()


async def read_ms(graph: Any, config: Any, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await graph.aget_state(config)
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


async def run_mode(
    mode: str, saver: Saver, measure: Measure, turns: int, answer_chars: int, keyframe_every: int
) -> dict[str, Any]:
    def answer(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage("a" * answer_chars)]}

    schema = FullState if mode == "full" else delta_state(keyframe_every)
    builder = StateGraph(schema)
    builder.add_node("model", answer)
    builder.add_edge(START, "model")
    graph = builder.compile(checkpointer=saver)
    thread_id = f"bench-{mode}-{uuid.uuid4().hex[:8]}"
    config: Any = {"configurable": {"thread_id": thread_id}}
    per_turn: dict[int, int] = {}
    after: dict[int, Any] = {}  # the checkpoint each turn ended on
    for turn in range(1, turns + 1):
        before = await measure(thread_id)
        await graph.ainvoke({"messages": [HumanMessage(f"question {turn}")]}, config)
        per_turn[turn] = await measure(thread_id) - before
        after[turn] = (await graph.aget_state(config)).config
    state = await graph.aget_state(config)
    assert len(state.values["messages"]) == 2 * turns
    last = [per_turn[t] for t in range(max(1, turns - 49), turns + 1)]
    typical = statistics.median(per_turn.values())
    return {
        "mode": mode,
        "bytes_turn_10": per_turn[10],
        f"bytes_turn_{turns - 1}": per_turn[turns - 1],
        f"bytes_turn_{turns}": per_turn[turns],
        "median_bytes_last_50_turns": int(statistics.median(last)),
        # how a typical turn late in the thread compares with turn 10 (1.0: flat)
        "growth_ratio_median_last_50_to_turn_10": round(statistics.median(last) / per_turn[10], 1),
        "mean_bytes_last_50_turns": int(statistics.mean(last)),
        # turns that stored several times the typical turn: delta's keyframes
        "heavy_turns": [t for t, b in per_turn.items() if mode == "delta" and b > 3 * typical],
        "total_bytes": await measure(thread_id),
        f"read_state_turn_{turns}_ms": await read_ms(graph, after[turns]),
        f"read_state_turn_{turns - 1}_ms": await read_ms(graph, after[turns - 1]),
        "read_state_turn_10_ms": await read_ms(graph, after[10]),
    }


async def run(
    turns: int, answer_chars: int, keyframe_every: int, postgres: str | None
) -> dict[str, Any]:
    opener = postgres_saver(postgres) if postgres else sqlite_saver()
    async with opener as (saver, measure):
        modes = [
            await run_mode(mode, saver, measure, turns, answer_chars, keyframe_every)
            for mode in ("full", "delta")
        ]
    return {
        "backend": "postgres" if postgres else "sqlite",
        "turns": turns,
        "answer_chars": answer_chars,
        "keyframe_every": keyframe_every,
        "modes": modes,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--answer-chars", type=int, default=400)
    parser.add_argument("--keyframe-every", type=int, default=100)
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: SQLite in memory)")
    args = parser.parse_args()
    result = asyncio.run(run(args.turns, args.answer_chars, args.keyframe_every, args.postgres))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"checkpoint_bytes_bench_{result['backend']}.json").write_text(
        json.dumps(result, indent=2)
    )
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
