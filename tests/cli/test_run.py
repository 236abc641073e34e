"""``fawn run``: the real command against a live server (and in-process with --embedded)."""

from __future__ import annotations

import http.server
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.cli_helpers import FAWN, call, clean_env, fawn, write_config
from tests.support.live import LiveServer, free_port
from tests.support.openai_stub import StubServerThread

pytestmark = pytest.mark.bwrap

OUT = "/mnt/user-data/outputs"


def test_run_streams_the_answer_uploads_and_saves_artifacts(
    sqlite_server: LiveServer, stub: StubServerThread, key: str, tmp_path: Path
) -> None:
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    call("read_file", description="r", path="/mnt/user-data/uploads/in.csv")
                ]
            },
            {
                "tool_calls": [
                    call("write_file", description="w", path=f"{OUT}/report.md", content="# R\n")
                ]
            },
            {"tool_calls": [call("present_files", filepaths=[f"{OUT}/report.md"])]},
            {"content": "The report is ready.", "chunk_delay": 0.01},
        ],
    )
    (tmp_path / "in.csv").write_text("a,b\n1,2\n")

    done = fawn(
        [
            "run",
            f"{key} summarise",
            "--url",
            sqlite_server.url,
            "--upload",
            "in.csv",
            "--out",
            "got",
        ],
        cwd=tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "The report is ready.\n"  # stdout is the answer alone
    notes = done.stderr.splitlines()
    assert notes[:3] == [
        "→ read_file: r",
        "→ write_file: w",
        f"→ present_files: {OUT}/report.md",
    ]
    assert notes[3] == "saved got/report.md"
    assert notes[4].startswith("thread ") and notes[4].endswith(": success")
    assert (tmp_path / "got" / "report.md").read_text() == "# R\n"
    seen = stub.requests_for(key)[1]["messages"]
    assert any(m["role"] == "tool" and m["content"] == "a,b\n1,2\n" for m in seen)


def test_a_question_exits_3_and_the_next_run_on_the_thread_answers_it(
    sqlite_server: LiveServer, stub: StubServerThread, key: str, tmp_path: Path
) -> None:
    ask = call(
        "ask_clarification",
        question="Which format?",
        clarification_type="approach_choice",
        options=["csv", "json"],
    )
    stub.add_script(key, [{"tool_calls": [ask]}, {"content": "using json"}])

    asked = fawn(["run", key, "--url", sqlite_server.url], cwd=tmp_path)

    assert asked.returncode == 3, asked.stderr
    lines = asked.stderr.splitlines()
    assert lines[0] == "→ ask_clarification: Which format?"
    assert lines[1:4] == ["the agent asks: Which format?", "  1. csv", "  2. json"]
    thread_id = lines[4].split("--thread ")[1].split()[0]
    answered = fawn(
        ["run", "--thread", thread_id, "json", "--url", sqlite_server.url], cwd=tmp_path
    )
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "using json\n"
    thread = httpx.get(f"{sqlite_server.url}/threads/{thread_id}").json()
    assert thread["status"] == "idle"


def test_a_failed_run_exits_1_with_the_error(
    sqlite_server: LiveServer, stub: StubServerThread, key: str, tmp_path: Path
) -> None:
    stub.add_script(key, [{"error": {"status": 400, "message": "boom"}}])
    done = fawn(["run", key, "--url", sqlite_server.url], cwd=tmp_path)
    assert done.returncode == 1
    # the agent's marked error message is its answer; the notes say the run failed
    assert done.stdout == "The model call failed: Error code: 400 - boom\n"
    status, error = done.stderr.splitlines()[-2:]
    assert status.startswith("thread ") and status.endswith(": error")
    assert error == "error: Error code: 400 - boom"


def test_embedded_runs_in_process_and_refuses_a_data_dir_a_server_holds(
    sqlite_server: LiveServer, stub: StubServerThread, key: str, tmp_path: Path
) -> None:
    stub.add_script(key, [{"content": "from inside"}])
    config = write_config(stub, tmp_path / "own")
    done = fawn(["run", key, "--embedded", "--config", str(config)], cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "from inside\n"), done.stderr
    assert (tmp_path / "own" / "data" / "fawn.db").exists()

    refused = fawn(
        ["run", key, "--embedded", "--config", str(sqlite_server.config_path)], cwd=tmp_path
    )
    assert refused.returncode == 2
    assert "--embedded refused: a fawn server (pid " in refused.stderr
    assert str(sqlite_server.data_dir.resolve()) in refused.stderr
    assert "must never share a SQLite data directory" in refused.stderr


def test_a_second_server_on_the_same_sqlite_data_dir_refuses_to_start(
    sqlite_server: LiveServer, tmp_path: Path
) -> None:
    second = LiveServer(dict(sqlite_server.config), tmp_path / "second")
    with pytest.raises(RuntimeError, match="is in use by process"):
        second.start(timeout=60)


def test_an_unreachable_server_is_a_clear_exit_2(tmp_path: Path) -> None:
    done = fawn(["run", "hi", "--url", f"http://127.0.0.1:{free_port()}"], cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot reach a fawn server at http://127.0.0.1:" in done.stderr
    assert "--embedded" in done.stderr


def test_ctrl_c_cancels_the_run_and_exits_130(
    sqlite_server: LiveServer, stub: StubServerThread, key: str, tmp_path: Path
) -> None:
    stub.add_script(key, [{"content": " ".join(["slow"] * 300), "chunk_delay": 0.05}])
    proc = subprocess.Popen(
        [*FAWN, "run", key, "--url", sqlite_server.url],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.read(4) == "slow"  # the answer is streaming
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "cancelling the run" in err and "cancelled (thread " in err
    thread_id = err.split("cancelled (thread ")[1].split(")")[0]
    runs = httpx.get(f"{sqlite_server.url}/threads/{thread_id}/runs").json()
    assert [r["status"] for r in runs] == ["interrupted"]


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:
        _Recorder.seen.append(dict(self.headers))
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"detail": "authentication required"}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def auth_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_api_key_is_sent_as_a_bearer_token(auth_server: str, tmp_path: Path, how: str) -> None:
    _Recorder.seen.clear()
    args = ["run", "hi", "--url", auth_server]
    env = {}
    if how == "flag":
        args += ["--api-key", "k-123"]
    else:
        env["FAWN_API_KEY"] = "k-123"
    done = fawn(args, cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "wants an API key" in done.stderr
    assert _Recorder.seen[0]["Authorization"] == "Bearer k-123"
