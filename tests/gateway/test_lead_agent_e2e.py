"""The lead agent end to end: langgraph_sdk → live server → real ChatOpenAI → scripted stub
model calling the real tools in a real bubblewrap sandbox.

Each test scripts the model's tool calls (see tests.support.openai_stub) and asserts what the
tools answered (ToolMessages), what the state holds and what is on disk.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread

pytestmark = pytest.mark.bwrap


@pytest.fixture
async def lg(sqlite_server: LiveServer) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=sqlite_server.url, timeout=60)
    try:
        yield client
    finally:
        await client.aclose()


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def tool_results(values: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(tool name, status, content) of every ToolMessage, in order."""
    return [
        (m["name"], m.get("status", "success"), m["content"])
        for m in values["messages"]
        if m["type"] == "tool"
    ]


def user_dir(server: LiveServer, tid: str, part: str) -> Path:
    return server.data_dir / "threads" / tid / "user-data" / part


async def run(client: LangGraphClient, tid: str, text: str, **kwargs: Any) -> dict[str, Any]:
    result = await client.runs.wait(tid, "lead_agent", input=user(text), **kwargs)
    assert isinstance(result, dict)
    return result


async def test_files_round_trip_through_bash_and_the_file_tools(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    ws = "/mnt/user-data/workspace"
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    call("bash", description="make", command="printf 'alpha\\nbeta\\n' > notes.txt")
                ]
            },
            {"tool_calls": [call("read_file", description="read", path=f"{ws}/notes.txt")]},
            {
                "tool_calls": [
                    call(
                        "str_replace",
                        description="edit",
                        path=f"{ws}/notes.txt",
                        old_str="beta",
                        new_str="gamma",
                    )
                ]
            },
            {
                "tool_calls": [
                    call("write_file", description="add", path=f"{ws}/more.txt", content="delta\n")
                ]
            },
            {"tool_calls": [call("glob", description="find", pattern="*.txt", path=ws)]},
            {"tool_calls": [call("grep", description="search", pattern="GAMMA", path=ws)]},
            {"content": "all done"},
        ],
    )
    tid = (await lg.threads.create())["thread_id"]

    values = await run(lg, tid, key)

    assert tool_results(values) == [
        ("bash", "success", "(no output)"),
        ("read_file", "success", "alpha\nbeta\n"),
        ("str_replace", "success", f"Replaced 1 occurrence in {ws}/notes.txt"),
        ("write_file", "success", f"Wrote 6 characters to {ws}/more.txt"),
        ("glob", "success", f"{ws}/more.txt\n{ws}/notes.txt"),
        ("grep", "success", f"{ws}/notes.txt:2: gamma"),
    ]
    workspace = user_dir(sqlite_server, tid, "workspace")
    assert (workspace / "notes.txt").read_text() == "alpha\ngamma\n"
    assert (workspace / "more.txt").read_text() == "delta\n"
    assert values["messages"][-1]["content"] == "all done"


async def test_present_files_makes_a_downloadable_artifact_and_refuses_other_paths(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    out = "/mnt/user-data/outputs"
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    call(
                        "write_file", description="w", path=f"{out}/report.md", content="# Report\n"
                    )
                ]
            },
            {"tool_calls": [call("present_files", filepaths=[f"{out}/report.md"])]},
            {
                "tool_calls": [
                    call(
                        "present_files",
                        filepaths=["/mnt/user-data/workspace/x.md", f"{out}/report.md"],
                    )
                ]
            },
            {"content": "presented"},
        ],
    )
    tid = (await lg.threads.create())["thread_id"]

    values = await run(lg, tid, key)

    results = tool_results(values)
    assert [(name, status) for name, status, _ in results] == [
        ("write_file", "success"),
        ("present_files", "success"),
        ("present_files", "error"),
    ]
    assert "/mnt/user-data/workspace/x.md" in results[2][2]
    assert values["artifacts"] == [f"{out}/report.md"]
    async with httpx.AsyncClient(base_url=sqlite_server.url) as http:
        download = await http.get(f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/report.md")
    assert (download.status_code, download.content) == (200, b"# Report\n")


async def test_an_upload_is_announced_in_the_next_turn_and_readable(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    call("read_file", description="r", path="/mnt/user-data/uploads/data.csv")
                ]
            },
            {"content": "read it"},
        ],
    )
    tid = (await lg.threads.create())["thread_id"]
    async with httpx.AsyncClient(base_url=sqlite_server.url) as http:
        uploaded = await http.post(
            f"/api/threads/{tid}/uploads", files={"files": ("data.csv", b"a,b\n1,2\n")}
        )
    assert uploaded.status_code == 200

    values = await run(lg, tid, f"{key} summarise the file")

    first_human = next(m for m in values["messages"] if m["type"] == "human")
    assert "<uploaded_files>" in first_human["content"]
    assert "data.csv" in first_human["content"]
    assert "/mnt/user-data/uploads/data.csv" in first_human["content"]
    assert values["uploaded_files"] == [
        {
            "filename": "data.csv",
            "size": 8,
            "path": "/mnt/user-data/uploads/data.csv",
            "extension": ".csv",
        }
    ]
    assert tool_results(values) == [("read_file", "success", "a,b\n1,2\n")]
    seen_by_model = stub.requests_for(key)[0]["messages"]
    assert any("data.csv" in str(m.get("content")) for m in seen_by_model if m["role"] == "user")


QUESTION = "🔀 The report can take either.\n\nWhich format?\n\n  1. csv\n  2. json"  # DeerFlow's ClarificationMiddleware format


def question_request(call_id: str) -> dict[str, Any]:
    """DeerFlow's structured request (``artifact.human_input``) for the scripted question."""
    return {
        "version": 1,
        "kind": "human_input_request",
        "source": "ask_clarification",
        "request_id": f"clarification:{call_id}",
        "tool_call_id": call_id,
        "clarification_type": "approach_choice",
        "question": "Which format?",
        "context": "The report can take either.",
        "input_mode": "choice_with_other",
        "options": [
            {"id": "option-1", "label": "csv", "value": "csv"},
            {"id": "option-2", "label": "json", "value": "json"},
        ],
    }


def script_question(stub: StubServerThread, key: str) -> None:
    ask = call(
        "ask_clarification",
        question="Which format?",
        clarification_type="approach_choice",
        context="The report can take either.",
        options=["csv", "json", " json ", ""],
    )
    sibling = call("bash", description="too early", command="touch too-early")
    stub.add_script(key, [{"tool_calls": [ask, sibling]}, {"content": "using the answer"}])


def shape(messages: list[dict[str, Any]]) -> list[tuple[str, str | None, Any]]:
    """(type, tool name or tool call names, content) of each message."""
    out: list[tuple[str, str | None, Any]] = []
    for m in messages:
        if m["type"] == "ai":
            out.append(("ai", ",".join(c["name"] for c in m["tool_calls"]) or None, m["content"]))
        else:
            out.append((m["type"], m.get("name"), m["content"]))
    return out


def model_turns(stub: StubServerThread, key: str) -> list[list[dict[str, Any]]]:
    """The messages of each agent model call (title calls carry no tools)."""
    return [r["messages"] for r in stub.requests_for(key) if r.get("tools")]


async def test_clarification_pauses_with_the_question_as_deerflow_renders_it(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    script_question(stub, key)
    tid = (await lg.threads.create())["thread_id"]

    paused = await run(lg, tid, key)

    state = await lg.threads.get_state(tid)
    values = state["values"]
    assert isinstance(values, dict)
    ask, question = values["messages"][1], values["messages"][2]
    call_id = ask["tool_calls"][0]["id"]
    # the sibling bash call was dropped before it ran: the question is the only result
    assert shape(values["messages"]) == [
        ("human", None, key),
        ("ai", "ask_clarification", ""),
        ("tool", "ask_clarification", QUESTION),
    ]
    assert {k: question[k] for k in ("tool_call_id", "status", "artifact")} == {
        "tool_call_id": call_id,
        "status": "success",
        "artifact": {
            "human_input": question_request(call_id),
            "clarification": {
                "type": "clarification",
                "question": "Which format?",
                "clarification_type": "approach_choice",
                "context": "The report can take either.",
                "options": ["csv", "json", " json ", ""],
            },
        },
    }
    interrupt = {
        "value": question["artifact"]["clarification"],
        "id": paused["__interrupt__"][0]["id"],
    }
    assert paused["__interrupt__"] == [interrupt]
    assert state["interrupts"] == [interrupt]
    assert state["next"] == ["clarification_pause.before_model"]
    assert (await lg.threads.get(tid))["status"] == "interrupted"
    assert (await lg.runs.list(tid))[0]["status"] == "interrupted"
    assert len(model_turns(stub, key)) == 1


@pytest.mark.parametrize("answer_by", ["command", "message"])
async def test_clarification_is_answered_by_resume_or_by_the_next_message(
    lg: LangGraphClient, stub: StubServerThread, key: str, answer_by: str
) -> None:
    script_question(stub, key)
    tid = (await lg.threads.create())["thread_id"]
    paused = await run(lg, tid, key)
    call_id = paused["messages"][1]["tool_calls"][0]["id"]

    if answer_by == "command":
        done = await lg.runs.wait(tid, "lead_agent", command={"resume": {"answer": "json"}})
    else:
        done = await run(lg, tid, "json")
    assert isinstance(done, dict)

    assert shape(done["messages"]) == [
        ("human", None, key),
        ("ai", "ask_clarification", ""),
        ("tool", "ask_clarification", QUESTION),
        ("human", None, "json"),
        ("ai", None, "using the answer"),
    ]
    answer = done["messages"][3]["additional_kwargs"]
    if answer_by == "command":  # DeerFlow's app shows the question answered, not the reply
        assert answer == {
            "hide_from_ui": True,
            "human_input_response": {
                "version": 1,
                "kind": "human_input_response",
                "source": "ask_clarification",
                "request_id": f"clarification:{call_id}",
                "response_kind": "text",
                "value": "json",
            },
        }
    else:
        assert answer == {}
    # the model read the question as the call's result, then the answer
    second = model_turns(stub, key)[1]
    assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in second[-3:]] == [
        ("assistant", None, None),
        ("tool", call_id, QUESTION),
        ("user", None, "json"),
    ]
    assert (await lg.threads.get(tid))["status"] == "idle"
    assert (await lg.threads.get_state(tid))["interrupts"] == []


async def test_plan_mode_write_todos_and_the_title(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    todos = [
        {"content": "Read the data", "status": "completed"},
        {"content": "Write the report", "status": "in_progress"},
    ]
    stub.add_script(
        key,
        [{"tool_calls": [call("write_todos", todos=todos)]}, {"content": "planned"}],
        title="Quarterly Report Plan",
    )
    tid = (await lg.threads.create())["thread_id"]

    values = await run(lg, tid, key, config={"configurable": {"is_plan_mode": True}})

    assert values["todos"] == todos
    assert values["title"] == "Quarterly Report Plan"
    bound = stub.requests_for(key)[0]["tools"]
    assert "write_todos" in [t["function"]["name"] for t in bound]


async def test_write_todos_is_hidden_outside_plan_mode(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, [{"content": "no plan"}])
    tid = (await lg.threads.create())["thread_id"]
    await run(lg, tid, key)
    bound = [t["function"]["name"] for t in stub.requests_for(key)[0]["tools"]]
    assert "write_todos" not in bound and "bash" in bound


async def test_the_sandbox_contains_every_escape(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        probe = (
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', "
            f'{port}), timeout=2)" 2>/dev/null && echo CONNECTED || echo NO-NETWORK'
        )
        stub.add_script(
            key,
            [
                {
                    "tool_calls": [
                        call(
                            "read_file",
                            description="a",
                            path="/mnt/user-data/workspace/../../../etc/passwd",
                        )
                    ]
                },
                {"tool_calls": [call("read_file", description="b", path="/etc/passwd")]},
                {"tool_calls": [call("bash", description="c", command="ln -s /etc planted")]},
                {
                    "tool_calls": [
                        call(
                            "read_file",
                            description="d",
                            path="/mnt/user-data/workspace/planted/passwd",
                        )
                    ]
                },
                {
                    "tool_calls": [
                        call(
                            "bash", description="e", command="cat /etc/shadow; ls /root; echo rc=$?"
                        )
                    ]
                },
                {"tool_calls": [call("bash", description="f", command=probe)]},
                {
                    "tool_calls": [
                        call(
                            "bash",
                            description="g",
                            command="touch /usr/x /x 2>&1 | sed 's/.*: //'; ls /usr/x /x 2>&1 | head -1",
                        )
                    ]
                },
                {"tool_calls": [call("write_file", description="h", path="/tmp/x", content="x")]},
                {"content": "contained"},
            ],
        )
        tid = (await lg.threads.create())["thread_id"]
        values = await run(lg, tid, key)

    results = tool_results(values)
    statuses = [(name, status) for name, status, _ in results]
    assert statuses == [
        ("read_file", "error"),
        ("read_file", "error"),
        ("bash", "success"),
        ("read_file", "error"),
        ("bash", "success"),
        ("bash", "success"),
        ("bash", "success"),
        ("write_file", "error"),
    ]
    texts = [content for _, _, content in results]
    assert "outside the sandbox" in texts[0] and "outside the sandbox" in texts[1]
    assert "outside" in texts[3]
    assert "root:" not in texts[4] and "No such file or directory" in texts[4]
    assert texts[5].strip() == "NO-NETWORK"
    assert "No such file or directory" in texts[6] and "Read-only file system" in texts[6]
    host_root = str(sqlite_server.data_dir)
    assert all(host_root not in text for text in texts)  # host paths never leak


async def test_thread_a_cannot_see_thread_b(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    b = (await lg.threads.create())["thread_id"]
    secret = user_dir(sqlite_server, b, "workspace")
    secret.mkdir(parents=True, exist_ok=True)
    (secret / "secret.txt").write_text("B only")
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    call(
                        "bash",
                        description="look",
                        command=f"cat ../../../threads/{b}/user-data/workspace/secret.txt; ls /mnt/user-data/workspace",
                    )
                ]
            },
            {"content": "looked"},
        ],
    )
    a = (await lg.threads.create())["thread_id"]
    values = await run(lg, a, key)
    [(_, _, text)] = tool_results(values)
    # B's directory is not mounted in A's sandbox: the path does not exist there
    assert text == (
        f"cat: ../../../threads/{b}/user-data/workspace/secret.txt: No such file or directory\n"
    )


async def test_a_raising_tool_is_an_error_result_and_the_run_completes(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    call(
                        "str_replace",
                        description="x",
                        path="/mnt/user-data/workspace/none.txt",
                        old_str="a",
                        new_str="b",
                    )
                ]
            },
            {"content": "recovered"},
        ],
    )
    tid = (await lg.threads.create())["thread_id"]
    values = await run(lg, tid, key)
    [(name, status, text)] = tool_results(values)
    assert (name, status) == ("str_replace", "error")
    assert text.startswith("Error: ") and "none.txt" in text
    assert values["messages"][-1]["content"] == "recovered"
    assert (await lg.runs.list(tid))[0]["status"] == "success"


async def test_clarification_streams_as_deerflow_app_reads_it(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    script_question(stub, key)
    tid = (await lg.threads.create())["thread_id"]
    events = [
        (part.event, part.data)
        async for part in lg.runs.stream(
            tid, "lead_agent", input=user(key), stream_mode=["values", "messages-tuple"]
        )
    ]
    values = [data for event, data in events if event == "values"]
    tool_chunks = [
        data[0] for event, data in events if event == "messages" and data[0]["type"] == "tool"
    ]
    *_, before_pause, last = values
    question = before_pause["messages"][-1]
    call_id = before_pause["messages"][-2]["tool_calls"][0]["id"]
    assert (question["type"], question["name"], question["tool_call_id"]) == (
        "tool",
        "ask_clarification",
        call_id,
    )
    assert (question["content"], question["artifact"]["human_input"]) == (
        QUESTION,
        question_request(call_id),
    )
    # the pause: the same messages, then the interrupt (the app's useStream reads both)
    assert last["messages"] == before_pause["messages"]
    assert [i["value"] for i in last["__interrupt__"]] == [question["artifact"]["clarification"]]
    assert [(c["name"], c["tool_call_id"], c["content"]) for c in tool_chunks] == [
        ("ask_clarification", call_id, QUESTION)
    ]
    assert events[-1] == ("end", {"run_id": events[0][1]["run_id"], "status": "interrupted"})


async def test_deerflow_apps_card_reply_answers_the_question(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    """The app's question card answers with a new, hidden message naming the request."""
    script_question(stub, key)
    tid = (await lg.threads.create())["thread_id"]
    paused = await run(lg, tid, key)
    call_id = paused["messages"][1]["tool_calls"][0]["id"]
    response = {
        "version": 1,
        "kind": "human_input_response",
        "source": "ask_clarification",
        "request_id": f"clarification:{call_id}",
        "response_kind": "option",
        "option_id": "option-2",
        "value": "json",
    }
    reply = {
        "role": "user",
        "content": 'For your clarification "Which format?", my answer is: json',
        "additional_kwargs": {"hide_from_ui": True, "human_input_response": response},
    }
    done = await lg.runs.wait(tid, "lead_agent", input={"messages": [reply]})
    assert isinstance(done, dict)
    assert shape(done["messages"])[2:] == [
        ("tool", "ask_clarification", QUESTION),
        ("human", None, reply["content"]),
        ("ai", None, "using the answer"),
    ]
    assert done["messages"][3]["additional_kwargs"] == reply["additional_kwargs"]
    second = model_turns(stub, key)[1]
    assert [(m["role"], m["content"]) for m in second[-2:]] == [
        ("tool", QUESTION),
        ("user", reply["content"]),
    ]
    thread = await lg.threads.get(tid)
    assert (thread["status"], thread["interrupts"]) == ("idle", {})
