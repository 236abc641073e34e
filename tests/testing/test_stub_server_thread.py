"""The stub outside the test's event loop: on its own thread, and as a command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from langchain_openai import ChatOpenAI

from tests.support.openai_stub import StubServerThread, run_in_thread

REPO = Path(__file__).resolve().parents[2]


def test_thread_serves_sync_clients() -> None:
    with StubServerThread() as stub:
        stub.add_script("threaded", [{"content": "from a thread"}, "second"], title="Thread")
        model = ChatOpenAI(model="stub", api_key="x", base_url=stub.base_url, max_retries=0)

        base_url = stub.base_url
        first = model.invoke("threaded hello")
        streamed = "".join(str(chunk.content) for chunk in model.stream("threaded hello"))
        sent = stub.requests_for("threaded")

    assert (first.content, streamed) == ("from a thread", "from a thread")
    assert [body["stream"] for body in sent] == [False, True]
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base_url}/models")


def test_run_in_thread_returns_a_started_server() -> None:
    stub = run_in_thread()
    try:
        base_url = stub.base_url
        response = httpx.get(f"{base_url}/models")
    finally:
        stub.stop()

    assert (response.status_code, base_url.startswith("http://127.0.0.1:")) == (200, True)


def test_thread_start_errors_reach_the_caller() -> None:
    with pytest.raises(ValueError, match="2024"):
        StubServerThread(port=2024).start()


def test_command_line_prints_the_base_url_and_serves() -> None:
    command = [sys.executable, "-W", "error", "-m", "tests.support.openai_stub", "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO) as process:
        try:
            assert process.stdout is not None
            base_url = process.stdout.readline().strip()
            added = httpx.post(
                base_url.removesuffix("/v1") + "/_stub/scripts",
                json={"key": "cli", "turns": ["from the command line"]},
            )
            model = ChatOpenAI(model="stub", api_key="x", base_url=base_url, max_retries=0)
            reply = model.invoke("cli hi")
        finally:
            process.terminate()
        returncode = process.wait(timeout=10)

    assert (added.status_code, reply.content, returncode) == (200, "from the command line", 0)
