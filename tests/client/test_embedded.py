"""The embedded client: one test body against ``fawn.embedded(...)`` and against a live server.

Both are the stock ``langgraph_sdk`` client; only the line that makes it differs.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

import fawn
from fawn.store.lock import DataDirInUse
from tests.conftest import base_config
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread


@pytest.fixture(params=["embedded", "remote"])
async def lg(
    request: pytest.FixtureRequest, stub: StubServerThread, tmp_path: Path
) -> AsyncIterator[LangGraphClient]:
    if request.param == "remote":
        server: LiveServer = request.getfixturevalue("sqlite_server")
        client = get_client(url=server.url, timeout=60)
        try:
            yield client
        finally:
            await client.aclose()
        return
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(base_config(stub, tmp_path / "data")))
    async with fawn.embedded(config=config) as client:
        yield client


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def test_the_same_body_passes_embedded_and_remote(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "args": {
                            "description": "w",
                            "path": "/mnt/user-data/outputs/a.txt",
                            "content": "alpha",
                        },
                    }
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "present_files",
                        "args": {"filepaths": ["/mnt/user-data/outputs/a.txt"]},
                    }
                ]
            },
            {"content": "one two three", "chunk_delay": 0.01},
        ],
        title="Embedded Or Not",
    )
    assistants = await lg.assistants.search()
    assert [a["graph_id"] for a in assistants] == ["lead_agent"]

    thread = await lg.threads.create(metadata={"owner": key})
    tid = thread["thread_id"]
    http = lg.http.client
    uploaded = await http.post(f"/api/threads/{tid}/uploads", files={"files": ("n.txt", b"hi")})
    assert uploaded.status_code == 200

    parts = [
        part
        async for part in lg.runs.stream(
            tid,
            "lead_agent",
            input=user(key),
            stream_mode=["messages-tuple", "updates"],
            stream_resumable=True,
        )
    ]
    events = [p.event for p in parts]
    assert events[0] == "metadata" and events[-1] == "end"
    run_id = parts[0].data["run_id"]
    assert parts[-1].data == {"run_id": run_id, "status": "success"}
    tokens = [
        p.data[0]["content"]
        for p in parts
        if p.event == "messages" and p.data[1]["langgraph_node"] == "model"
    ]
    assert "".join(tokens) == "one two three"
    assert len([t for t in tokens if t]) == 3  # streamed word by word, not as one blob

    # rejoin after the first event: the rest, in order, no duplicate
    ids = [p.id for p in parts]
    rejoined = [p async for p in lg.runs.join_stream(tid, run_id, last_event_id=ids[0])]
    assert [p.id for p in rejoined] == ids[1:]

    state = await lg.threads.get_state(tid)
    values: Any = state["values"]
    assert values["title"] == "Embedded Or Not"
    assert values["messages"][-1]["content"] == "one two three"
    assert values["uploaded_files"] == [
        {
            "filename": "n.txt",
            "size": 2,
            "path": "/mnt/user-data/uploads/n.txt",
            "extension": ".txt",
        }
    ]
    artifact = await http.get(f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/a.txt")
    assert (artifact.status_code, artifact.content) == (200, b"alpha")

    found = await lg.threads.search(metadata={"owner": key})
    assert [(t["thread_id"], t["status"]) for t in found] == [(tid, "idle")]
    runs = await lg.runs.list(tid)
    assert [(r["run_id"], r["status"]) for r in runs] == [(run_id, "success")]

    waited = await lg.runs.wait(tid, "lead_agent", input=user("again"))
    assert isinstance(waited, dict)
    assert waited["messages"][-1]["content"] == "one two three"

    await lg.threads.delete(tid)
    with pytest.raises(httpx.HTTPStatusError) as missing:
        await lg.threads.get(tid)
    assert missing.value.response.status_code == 404


async def test_a_long_run_streams_before_it_ends_and_a_cancel_reaches_it(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    """The in-process transport hands out each event as it is sent (never buffers the run)."""
    stub.add_script(key, [{"content": " ".join(["word"] * 200), "chunk_delay": 0.05}])
    tid = (await lg.threads.create())["thread_id"]
    seen: list[str] = []
    run_id = ""
    async for part in lg.runs.stream(
        tid, "lead_agent", input=user(key), stream_mode="messages-tuple"
    ):
        seen.append(part.event)
        if part.event == "metadata":
            run_id = part.data["run_id"]
        if part.event == "messages" and part.data[0]["content"]:
            # the first token arrived while the run is still going: cancel it from here
            await lg.runs.cancel(tid, run_id, action="interrupt")
            break
    final = await lg.runs.join(tid, run_id)
    assert isinstance(final, dict)
    run = await lg.runs.get(tid, run_id)
    assert run["status"] == "interrupted"
    assert seen[0] == "metadata"


async def test_embedded_refuses_a_data_dir_a_server_owns(
    sqlite_server: LiveServer,
) -> None:
    with pytest.raises(DataDirInUse, match="in use by process") as refused:
        async with fawn.embedded(config=sqlite_server.config_path):
            pass
    assert refused.value.data_dir == sqlite_server.data_dir.resolve()
    # the server is untouched
    async with httpx.AsyncClient(base_url=sqlite_server.url) as http:
        assert (await http.get("/ok")).status_code == 200


async def test_two_embedded_clients_never_share_a_data_dir(
    stub: StubServerThread, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(base_config(stub, tmp_path / "data")))
    async with fawn.embedded(config=config) as first:
        with pytest.raises(DataDirInUse):
            async with fawn.embedded(config=config):
                pass
        assert (await first.threads.create())["status"] == "idle"
    # released when the first one closed
    async with fawn.embedded(config=config) as again:
        assert len(await again.threads.search()) == 1


async def test_closing_the_client_mid_stream_leaves_nothing_running(
    stub: StubServerThread, tmp_path: Path, key: str
) -> None:
    stub.add_script(key, [{"content": " ".join(["w"] * 100), "chunk_delay": 0.05}])
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(base_config(stub, tmp_path / "data")))
    before = asyncio.all_tasks()
    async with fawn.embedded(config=config) as client:
        tid = (await client.threads.create())["thread_id"]
        async for part in client.runs.stream(
            tid, "lead_agent", input=user(key), on_disconnect="cancel"
        ):
            if part.event == "metadata":
                break
    leftover = {t for t in asyncio.all_tasks() - before if not t.done()}
    assert leftover == set()


def test_importing_fawn_config_does_not_import_the_application() -> None:
    code = (
        "import sys, fawn.config, fawn\n"
        "assert 'fawn.gateway' not in sys.modules, 'gateway imported'\n"
        "assert 'fawn.client.embedded' not in sys.modules\n"
        "assert callable(fawn.embedded) and 'fawn.gateway.app' in sys.modules\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr
