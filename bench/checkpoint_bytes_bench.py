"""Checkpoint bytes per turn as a thread grows (the ``full`` checkpoint mode, today's).

A graph with fawn's message reducer answers each human turn with one AI message of
``--answer-chars`` characters; checkpoints go to the SQLite saver fawn uses by default.
Reported: the bytes the checkpoint and writes tables gained during turn 10 and during the
last turn (``--turns``), so the growth of per-turn storage with thread length shows.
Nothing here asserts.

    .venv/bin/python bench/checkpoint_bytes_bench.py --turns 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

import aiosqlite
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


async def stored_bytes(conn: aiosqlite.Connection) -> int:
    total = 0
    for query in (
        "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints",
        "SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes",
    ):
        async with conn.execute(query) as cursor:
            row = await cursor.fetchone()
            total += int(row[0]) if row else 0
    return total


async def run(turns: int, answer_chars: int) -> dict[str, Any]:
    conn = await aiosqlite.connect(":memory:")
    try:
        saver = AsyncSqliteSaver(conn)
        await saver.setup()

        def answer(state: State) -> dict[str, Any]:
            return {"messages": [AIMessage("a" * answer_chars)]}

        builder = StateGraph(State)
        builder.add_node("model", answer)
        builder.add_edge(START, "model")
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        per_turn: dict[int, int] = {}
        for turn in range(1, turns + 1):
            before = await stored_bytes(conn)
            await graph.ainvoke({"messages": [HumanMessage(f"question {turn}")]}, config)
            per_turn[turn] = await stored_bytes(conn) - before
        return {
            "mode": "full",
            "turns": turns,
            "answer_chars": answer_chars,
            "bytes_turn_10": per_turn[10],
            f"bytes_turn_{turns}": per_turn[turns],
            "growth_ratio": round(per_turn[turns] / per_turn[10], 1),
            "total_bytes": await stored_bytes(conn),
        }
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--answer-chars", type=int, default=400)
    args = parser.parse_args()
    result = asyncio.run(run(args.turns, args.answer_chars))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "checkpoint_bytes_bench.json").write_text(json.dumps(result, indent=2))
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
