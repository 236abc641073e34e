"""The ``delta`` checkpoint mode's message reducer: ``add_messages``'s result, deterministic
ids, and the batching invariance ``DeltaChannel`` relies on to replay writes."""

from __future__ import annotations

import random
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from fawn.agent.delta import replay_messages


def random_writes(rng: random.Random, count: int) -> list[list[Any]]:
    """Writes as nodes and clients make them: new messages (some without an id, some as
    dicts or chunks), replacements and removals of existing ids, and now and then a reset."""
    writes: list[list[Any]] = []
    live: list[str] = []
    serial = 0
    for _ in range(count):
        write: list[Any] = []
        for _ in range(rng.randint(1, 3)):
            roll = rng.random()
            serial += 1
            if roll < 0.25:
                write.append(HumanMessage(f"no id {serial}"))
            elif roll < 0.35:
                write.append({"role": "user", "content": f"dict {serial}", "id": f"d{serial}"})
            elif roll < 0.45:
                write.append(AIMessageChunk(f"chunk {serial}", id=f"c{serial}"))
            elif roll < 0.6 and live:
                write.append(AIMessage(f"edit {serial}", id=rng.choice(live)))
            elif roll < 0.7 and live:
                target = rng.choice(live)
                live.remove(target)
                write.append(RemoveMessage(id=target))
            elif roll < 0.73:
                write.append(RemoveMessage(id=REMOVE_ALL_MESSAGES))
                live.clear()
            else:
                write.append(AIMessage(f"answer {serial}", id=f"a{serial}"))
                live.append(f"a{serial}")
        writes.append(write)
    return writes


def ids_of(messages: list[Any]) -> list[str | None]:
    return [m.id for m in messages]


@pytest.mark.parametrize("seed", range(40))
def test_replay_is_add_messages_with_derived_ids_and_batching_invariant(seed: int) -> None:
    rng = random.Random(seed)
    writes = random_writes(rng, 30)
    whole = replay_messages([], writes)

    # one write at a time through add_messages itself, given the same ids
    expected: list[Any] = []
    for write in writes:
        step = replay_messages(expected, [write])
        # the messages this write added carry the ids replay derived: give add_messages them
        derived = {m.content: m.id for m in step}
        given = [
            m.model_copy(update={"id": derived.get(m.content, "dropped in this write")})
            if isinstance(m, HumanMessage) and m.id is None
            else m
            for m in write
        ]
        expected = list(add_messages(expected, given))  # type: ignore[arg-type]
        assert step == expected
    assert whole == expected

    # any split of the writes gives the same list, ids included (and so does a re-read)
    cut = rng.randint(0, len(writes))
    assert replay_messages(replay_messages([], writes[:cut]), writes[cut:]) == whole
    assert ids_of(replay_messages([], writes)) == ids_of(whole)


def test_a_message_without_id_gets_the_same_id_on_every_read() -> None:
    writes = [[HumanMessage("hi")], [AIMessage("hello", id="a1")], [HumanMessage("hi")]]
    first = replay_messages([], writes)
    assert ids_of(first) == ids_of(replay_messages([], writes))
    assert len(set(ids_of(first))) == 3  # the same text twice is two messages


def test_removing_an_unknown_id_is_refused_like_add_messages() -> None:
    with pytest.raises(ValueError, match="doesn't exist"):
        replay_messages([AIMessage("x", id="a")], [[RemoveMessage(id="b")]])
