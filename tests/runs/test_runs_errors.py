"""Failures and refusals: a failing model, unknown things, options we do not implement, and
values only the server may set."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import BadRequestError, NotFoundError, UnprocessableEntityError

from tests.runs.runs_helpers import (
    Lead,
    ai_invoked,
    collect,
    end_event,
    human,
    metadata_event,
    new_thread,
    pairs,
    script,
    user,
)
from tests.support.live import LiveServer
from tests.support.problems import problem


def _failing_turn(status: int) -> dict[str, Any]:
    return {"error": {"status": status, "message": "boom"}}


def _error(status: int) -> dict[str, str]:
    """The error as the run reports it: langchain-openai's exception name and message."""
    kind = {400: "OpenAIInvalidRequestError", 500: "OpenAIAPIError"}[status]
    return {"error": kind, "message": f"Error code: {status} - boom"}


async def _assert_failed_run(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str, status: int, *, wait: bool
) -> None:
    script(stub, key, _failing_turn(status))
    tid = await new_thread(client)
    events = await collect(
        client.runs.stream(tid, "lead_agent", input=user(key), stream_mode="updates")
    )
    run_id = events[0].data["run_id"]
    error = _error(status)
    assert pairs(events)[0] == metadata_event(run_id, tid)
    assert pairs(events)[-2:] == [("error", error), end_event(run_id, "error")]
    run = await client.runs.get(tid, run_id)
    assert (run["status"], run["error"], run["stop_reason"]) == (
        "error",
        error["message"],
        "model_error",
    )
    thread = await client.threads.get(tid)
    assert (thread["status"], thread["error"]) == ("error", error)

    if not wait:
        return
    # the failure is recorded as a marked AI message, so a fresh conversation fails again
    with pytest.raises(Exception, match=f"^{error['error']}: {error['message']}$"):
        await client.runs.wait(await new_thread(client), "lead_agent", input=user(key))
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        raw = await http.post(
            f"/threads/{await new_thread(client)}/runs/wait",
            json={"assistant_id": "lead_agent", "input": user(key)},
        )
    assert raw.status_code == 200
    assert raw.json() == {"__error__": error}


async def test_model_failure_is_an_error_event_and_an_error_run(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """A 400 is not retried: the failure surfaces at once."""
    await _assert_failed_run(server, client, stub, key, 400, wait=True)


async def test_server_error_after_retries_is_an_error_run(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """A 500 is retried (agent.model_retries, with backoff) before the run fails."""
    if "database" in server.config:
        pytest.skip("retries take seconds; one backend is enough")
    await _assert_failed_run(server, client, stub, key, 500, wait=False)


async def test_a_failed_thread_accepts_the_next_run(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, _failing_turn(400))
    script(stub, f"{key}-ok", {"content": "fine now"})
    tid = await new_thread(client)
    with pytest.raises(Exception, match="^OpenAIInvalidRequestError: Error code: 400 - boom$"):
        await client.runs.wait(tid, "lead_agent", input=user(key))
    other = await new_thread(client)
    answer = await client.runs.wait(other, "lead_agent", input=user(f"{key}-ok"))
    assert answer["messages"][-1] == ai_invoked("fine now")
    assert (await client.threads.get(other))["status"] == "idle"


async def test_unknown_thread_is_404(client: LangGraphClient) -> None:
    missing = str(uuid.uuid4())
    with pytest.raises(NotFoundError) as caught:
        await client.runs.create(missing, "lead_agent", input=user("x"))
    assert caught.value.body == problem(f"thread {missing} not found", "not_found")  # type: ignore[attr-defined]
    with pytest.raises(NotFoundError):
        await collect(client.runs.stream(missing, "lead_agent", input=user("x")))


async def test_unknown_assistant_is_422(client: LangGraphClient) -> None:
    tid = await new_thread(client)
    with pytest.raises(UnprocessableEntityError) as caught:
        await client.runs.create(tid, "nobody", input=user("x"))
    assert caught.value.body == problem(  # type: ignore[attr-defined]
        "assistant 'nobody' not found; available: lead_agent "
        "(bee7d354-5df5-5f26-a978-10ea053f620d)",
        "invalid_input",
    )
    assert await client.runs.list(tid) == []


async def test_unknown_model_name_is_400_listing_the_configured_ones(
    client: LangGraphClient,
) -> None:
    tid = await new_thread(client)
    for kwargs in (
        {"config": {"configurable": {"model_name": "gpt-nope"}}},
        {"context": {"model_name": "gpt-nope"}},
    ):
        with pytest.raises(BadRequestError) as caught:
            await client.runs.create(tid, "lead_agent", input=user("x"), **kwargs)  # type: ignore[arg-type]
        assert caught.value.body == problem(  # type: ignore[attr-defined]
            "unknown model_name 'gpt-nope'; configured models: stub, stub-vision",
            "unknown_model",
        )
    assert await client.runs.list(tid) == []


async def test_server_owned_values_cannot_be_overridden(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "mine"})
    tid = await new_thread(client)
    elsewhere = str(uuid.uuid4())
    forged = {
        "thread_id": elsewhere,
        "run_id": "forged-run",
        "user_id": "mallory",
        "checkpoint_ns": "evil",
        "model_name": "stub",
    }
    events = await collect(
        client.runs.stream(
            tid,
            "lead_agent",
            input=user(key),
            config={"configurable": forged},
            context={"thread_id": elsewhere, "run_id": "forged-run", "user_id": "mallory"},
            stream_mode="values",
        )
    )
    run_id = events[0].data["run_id"]
    assert run_id != "forged-run"
    assert pairs(events)[0] == metadata_event(run_id, tid)
    run = await client.runs.get(tid, run_id)
    assert run["kwargs"]["config"] == {"configurable": {"model_name": "stub"}}
    assert run["kwargs"]["context"]["model_name"] == "stub"
    assert "thread_id" not in run["kwargs"]["context"]
    snapshot = await client.threads.get_state(tid)
    assert snapshot["values"]["messages"][0] == human(key)
    assert snapshot["metadata"]["run_id"] == run_id
    assert snapshot["checkpoint"]["thread_id"] == tid
    assert snapshot["values"] == Lead.of(server, tid).state(
        human(key), ai_invoked("mine"), title=snapshot["values"].get("title")
    )
    with pytest.raises(NotFoundError):
        await client.threads.get(elsewhere)
    assert (await client.threads.get_state(tid))["checkpoint"]["checkpoint_ns"] == ""


async def test_secrets_in_the_request_are_redacted_on_the_run(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "ok"})
    tid = await new_thread(client)
    run = await client.runs.create(
        tid,
        "lead_agent",
        input=user(key),
        config={"configurable": {"api_key": "sk-live", "nested": {"password": "p"}}},
    )
    await client.runs.join(tid, run["run_id"])
    stored = await client.runs.get(tid, run["run_id"])
    assert stored["kwargs"]["config"] == {
        "configurable": {"api_key": "***", "nested": {"password": "***"}}
    }
