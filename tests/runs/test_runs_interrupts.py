"""Interrupts and commands: ``interrupt()`` (ask_clarification's pause) and breakpoints pause
the run and mark the thread ``interrupted``; ``command`` resumes, updates and redirects it."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError

from tests.runs.runs_helpers import (
    ANY_UUID,
    TITLE,
    Expected,
    Lead,
    ai_invoked,
    collect,
    containing,
    end_event,
    human,
    metadata_event,
    new_thread,
    pairs,
    pattern,
    script,
    user,
)
from tests.support.live import LiveServer
from tests.support.problems import problem

QUESTION = {
    "type": "clarification",
    "question": "Which colour?",
    "clarification_type": "missing_info",
    "context": None,
    "options": None,
}
ASK = {
    "tool_calls": [
        {
            "name": "ask_clarification",
            "args": {"question": "Which colour?", "clarification_type": "missing_info"},
            "id": "call_ask",
        }
    ]
}
INTERRUPT_ID = pattern(r"[0-9a-f]{32}", "<interrupt id>")


def _task(name: str, interrupts: list[Any] | None = None) -> dict[str, Any]:
    return {
        "id": ANY_UUID,
        "name": name,
        "path": ["__pregel_pull", name],
        "error": None,
        "interrupts": interrupts or [],
        "checkpoint": None,
        "state": None,
        "result": None,
    }


async def _statuses(client: LangGraphClient, tid: str, run_id: str) -> tuple[str, str]:
    run = await client.runs.get(tid, run_id)
    thread = await client.threads.get(tid)
    return run["status"], thread["status"]


async def _last_run(client: LangGraphClient, tid: str) -> dict[str, Any]:
    return dict((await client.runs.list(tid, limit=1))[0])


async def test_interrupt_from_a_tool_pauses_and_resume_answers_it(
    mode_server: LiveServer, mode_client: LangGraphClient, stub: Any, key: str
) -> None:
    client, server = mode_client, mode_server
    script(stub, key, ASK, {"content": "Blue it is"})
    tid = await new_thread(client)
    lead = Lead.of(server, tid)
    paused = await client.runs.wait(tid, "lead_agent", input=user(key))
    interrupt = {"value": QUESTION, "id": INTERRUPT_ID}
    asked, question = paused["messages"][-2:]
    assert paused == {
        **lead.state(human(key), asked, question),
        "__interrupt__": [interrupt],
    }
    assert (question["type"], question["content"], question["tool_call_id"]) == (
        "tool",
        "❓ Which colour?",
        "call_ask",
    )
    assert (asked["type"], asked["content"], asked["tool_calls"]) == (
        "ai",
        "",
        [
            {
                "name": "ask_clarification",
                "args": {"question": "Which colour?", "clarification_type": "missing_info"},
                "id": "call_ask",
                "type": "tool_call",
            }
        ],
    )
    first = await _last_run(client, tid)
    assert (first["status"], first["stop_reason"]) == ("interrupted", "interrupt")
    thread = await client.threads.get(tid)
    snapshot = await client.threads.get_state(tid)
    assert thread["status"] == "interrupted"
    assert thread["interrupts"] == {snapshot["tasks"][0]["id"]: [interrupt]}
    # the question is written; the pause waits before the next model call
    assert snapshot["next"] == ["clarification_pause.before_model"]
    assert snapshot["tasks"] == [_task("clarification_pause.before_model", [interrupt])]
    assert snapshot["interrupts"] == [interrupt]

    events = await collect(
        client.runs.stream(tid, "lead_agent", command={"resume": "blue"}, stream_mode="values")
    )
    run_id = events[0].data["run_id"]
    assert pairs(events)[0] == metadata_event(run_id, tid)
    assert pairs(events)[-1] == end_event(run_id)
    final = events[-2].data
    answer = final["messages"][3]
    assert (answer["type"], answer["content"]) == ("human", "blue")
    assert final == lead.state(
        human(key), asked, question, answer, ai_invoked("Blue it is"), title=TITLE
    )
    assert await _statuses(client, tid, run_id) == ("success", "idle")
    assert (await client.threads.get(tid))["interrupts"] == {}


async def test_interrupt_shows_in_the_updates_stream(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, ASK, {"content": "ok"})
    tid = await new_thread(client)
    events = await collect(
        client.runs.stream(tid, "lead_agent", input=user(key), stream_mode="updates")
    )
    run_id = events[0].data["run_id"]
    assert pairs(events)[-2:] == [
        ("updates", {"__interrupt__": [{"value": QUESTION, "id": INTERRUPT_ID}]}),
        end_event(run_id, "interrupted"),
    ]


async def test_interrupt_before_pauses_then_a_null_input_resumes(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "after the pause"})
    tid = await new_thread(client)
    lead = Lead.of(server, tid)
    events = await collect(
        client.runs.stream(tid, "lead_agent", input=user(key), interrupt_before=["model"])
    )
    run_id = events[0].data["run_id"]
    exchange = Expected(lead, run_id, key, ai_invoked("after the pause"))
    assert pairs(events) == [
        metadata_event(run_id, tid),
        *exchange.values(until="model"),
        end_event(run_id, "interrupted"),
    ]
    paused = await client.threads.get_state(tid)
    assert (paused["values"], paused["next"], paused["tasks"]) == (
        lead.state(human(key)),
        ["model"],
        [_task("model")],
    )
    assert await _statuses(client, tid, run_id) == ("interrupted", "interrupted")
    assert (await client.runs.get(tid, run_id))["stop_reason"] == "interrupt"

    resumed = await client.runs.wait(tid, "lead_agent")
    assert resumed == lead.state(human(key), ai_invoked("after the pause"), title=TITLE)
    latest = await _last_run(client, tid)
    assert await _statuses(client, tid, latest["run_id"]) == ("success", "idle")


async def test_interrupt_before_then_command_resume_continues(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "resumed"})
    tid = await new_thread(client)
    lead = Lead.of(server, tid)
    paused = await client.runs.wait(tid, "lead_agent", input=user(key), interrupt_before=["model"])
    assert paused == lead.state(human(key))
    assert (await client.threads.get(tid))["status"] == "interrupted"
    resumed = await client.runs.wait(tid, "lead_agent", command={"resume": "go on"})
    assert resumed == lead.state(human(key), ai_invoked("resumed"), title=TITLE)
    assert (await client.threads.get(tid))["status"] == "idle"
    run = await _last_run(client, tid)
    assert (run["kwargs"]["command"], run["kwargs"]["input"]) == ({"resume": "go on"}, None)


async def test_interrupt_after_pauses_after_the_node(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "answer"})
    tid = await new_thread(client)
    lead = Lead.of(server, tid)
    events = await collect(
        client.runs.stream(
            tid, "lead_agent", input=user(key), interrupt_after=["model"], stream_mode="updates"
        )
    )
    run_id = events[0].data["run_id"]
    exchange = Expected(lead, run_id, key, ai_invoked("answer"))
    after_model = exchange.steps[exchange.index("model") + 1][0]
    assert pairs(events) == [
        metadata_event(run_id, tid),
        *exchange.updates(until=after_model),
        ("updates", {"__interrupt__": []}),
        end_event(run_id, "interrupted"),
    ]
    paused = await client.threads.get_state(tid)
    assert (paused["values"], paused["next"]) == (
        lead.state(human(key), ai_invoked("answer")),
        [after_model],
    )
    assert await _statuses(client, tid, run_id) == ("interrupted", "interrupted")
    resumed = await client.runs.wait(tid, "lead_agent")
    assert resumed == lead.state(human(key), ai_invoked("answer"), title=TITLE)
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_command_update_and_goto_from_a_finished_thread(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "one"}, {"content": "two"})
    tid = await new_thread(client)
    first = await client.runs.wait(tid, "lead_agent", input=user(key))
    answer = await client.runs.wait(
        tid,
        "lead_agent",
        command={"update": {"messages": [{"role": "user", "content": "more"}]}, "goto": "model"},
    )
    lead = Lead.of(server, tid)
    assert answer == lead.state(*first["messages"], human("more"), ai_invoked("two"), title=TITLE)
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_command_update_while_paused_before_the_model(
    mode_server: LiveServer, mode_client: LangGraphClient, stub: Any, key: str
) -> None:
    client, server = mode_client, mode_server
    script(stub, key, {"content": "saw both"})
    tid = await new_thread(client)
    await client.runs.wait(tid, "lead_agent", input=user(key), interrupt_before=["model"])
    answer = await client.runs.wait(
        tid,
        "lead_agent",
        command={"update": {"messages": [{"role": "user", "content": "also this"}]}},
    )
    lead = Lead.of(server, tid)
    assert answer == lead.state(human(key), human("also this"), ai_invoked("saw both"), title=TITLE)
    (request,) = [r for r in stub.requests_for(key) if r.get("tools")]
    assert [m["content"] for m in request["messages"] if m["role"] == "user"] == [
        key,
        "also this",
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"interrupt_before": ["nope"]},
            containing("interrupt_before: unknown node(s) nope; nodes: "),
        ),
        ({"interrupt_after": ["model", "x"]}, containing("interrupt_after: unknown node(s) x; ")),
        ({"command": {"resume": 1, "bogus": 2}}, "command.bogus: unsupported field"),
        (
            {"command": {"goto": 3}},
            "command.goto: must be a node name, {node, input}, or a list of them",
        ),
    ],
)
async def test_bad_breakpoints_and_commands_are_422(
    client: LangGraphClient, body: dict[str, Any], message: Any
) -> None:
    tid = await new_thread(client)
    with pytest.raises(UnprocessableEntityError) as caught:
        await client.runs.create(tid, "lead_agent", **body)
    assert caught.value.body == problem(message, "invalid_input")  # type: ignore[attr-defined]
    assert await client.runs.list(tid) == []
