"""``fawn chat``: the real binary in a real terminal (tmux), typed at and read back."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.cli_helpers import FAWN, call, clean_env, write_config
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread

pytestmark = pytest.mark.bwrap

OUT = "/mnt/user-data/outputs"


class Terminal:
    """A tmux session running one command, on a private tmux server."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        if shutil.which("tmux") is None:
            pytest.fail("tmux is missing: run scripts/system-deps")
        self.socket = f"fawn-test-{uuid.uuid4().hex[:8]}"
        env = " ".join(
            f"{k}={shlex.quote(v)}" for k, v in clean_env().items() if k in ("PATH", "HOME", "LANG")
        )
        line = f"cd {shlex.quote(str(cwd))} && env -u FAWN_CONFIG {env} TERM=xterm {shlex.join(command)}; echo EXITED=$?; sleep 600"
        self._tmux("new-session", "-d", "-s", "t", "-x", "150", "-y", "50", line)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-2000")

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "t", "-l", text)

    def key(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", *keys)

    def line(self, text: str) -> None:
        self.type(text)
        self.key("Enter")

    def wait_for(self, text: str, timeout: float = 60, count: int = 1) -> str:
        """The screen once ``text`` shows on it ``count`` times."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared on screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    try:
        yield opened
    finally:
        for terminal in opened:
            terminal.close()


def chat(terminals: list[Terminal], cwd: Path, *args: str) -> Terminal:
    terminal = Terminal([*FAWN, "chat", *args], cwd)
    terminals.append(terminal)
    terminal.wait_for("type a message, or /help for commands")
    return terminal


def test_chat_streams_shows_tools_answers_questions_and_runs_every_command(
    sqlite_server: LiveServer,
    stub: StubServerThread,
    key: str,
    tmp_path: Path,
    terminals: list[Terminal],
) -> None:
    ask = call(
        "ask_clarification",
        question="Which format?",
        clarification_type="approach_choice",
        options=["csv", "json"],
    )
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    call("read_file", description="read it", path="/mnt/user-data/uploads/in.txt")
                ]
            },
            {
                "tool_calls": [
                    call("write_file", description="save", path=f"{OUT}/r.md", content="# r\n")
                ]
            },
            {"tool_calls": [call("present_files", filepaths=[f"{OUT}/r.md"])]},
            {"tool_calls": [ask]},
            {"content": "went with the answer", "chunk_delay": 0.02},
        ],
        title=f"{key} Chat Title",
    )
    (tmp_path / "in.txt").write_text("from the terminal")
    term = chat(terminals, tmp_path, "--url", sqlite_server.url)

    term.line("/model")
    term.wait_for("* stub  Stub model")
    term.line("/model stub-vision")
    term.wait_for("* stub-vision")
    term.line("/model stub")
    term.line("/plan")
    term.wait_for("plan mode on")
    term.line("/plan off")
    term.wait_for("plan mode off")
    term.line("/upload in.txt")
    term.wait_for("uploaded in.txt")
    term.line(f"{key} go")
    term.wait_for("→ read_file: read it")
    term.wait_for("→ present_files: /mnt/user-data/outputs/r.md")
    screen = term.wait_for("answer>")
    assert "? Which format?" in screen and "  1. csv" in screen and "  2. json" in screen
    term.line("2")
    term.wait_for("went with the answer")

    term.line("/artifacts")
    term.wait_for(" 1. /mnt/user-data/outputs/r.md")
    term.line("/download 1 saved")
    term.wait_for("saved saved/r.md")
    assert (tmp_path / "saved" / "r.md").read_text() == "# r\n"

    term.line("/threads")
    screen = term.wait_for(f"{key} Chat Title")
    thread_id = screen.split(f"{key} Chat Title  [idle]  ")[1].split()[0]
    messages = httpx.get(f"{sqlite_server.url}/threads/{thread_id}").json()["values"]["messages"]
    tool = [m for m in messages if m["type"] == "tool"]
    # the question as the call's result, then the answer as the user's message
    assert [(m["type"], m.get("name"), m["content"]) for m in messages[-3:-1]] == [
        ("tool", "ask_clarification", "🔀 Which format?\n\n  1. csv\n  2. json"),
        ("human", None, "json"),
    ]
    assert any(m["content"] == "from the terminal" for m in tool)

    term.line("/new")
    term.wait_for("[new] >")
    term.line("/threads 1")
    term.wait_for(f"thread {thread_id}: {key} Chat Title (idle)")
    term.line("/nope")
    term.wait_for("unknown command /nope")
    term.line("/quit")
    term.wait_for("EXITED=0")


def test_ctrl_c_cancels_the_run_and_a_second_one_leaves(
    sqlite_server: LiveServer,
    stub: StubServerThread,
    key: str,
    tmp_path: Path,
    terminals: list[Terminal],
) -> None:
    stub.add_script(key, [{"content": " ".join(["slow"] * 400), "chunk_delay": 0.05}])
    term = chat(terminals, tmp_path, "--url", sqlite_server.url)
    term.line(key)
    term.wait_for("slow slow slow")
    term.key("C-c")
    term.wait_for("cancelling the run")
    term.wait_for("run cancelled")
    prompt = term.wait_for(" > ")
    assert "EXITED" not in prompt
    runs_url = f"{sqlite_server.url}/threads/search"
    threads = httpx.post(runs_url, json={"limit": 50}).json()
    mine = [
        t
        for t in threads
        if key in str((t.get("values") or {}).get("messages", [{}])[0].get("content"))
    ]
    runs = httpx.get(f"{sqlite_server.url}/threads/{mine[0]['thread_id']}/runs").json()
    assert [r["status"] for r in runs] == ["interrupted"]

    term.line("/new")
    term.line(key)
    term.wait_for("slow slow slow", count=2)
    term.key("C-c")
    term.wait_for("cancelling the run", count=2)
    term.key("C-c")
    term.wait_for("EXITED=0")


def test_embedded_chat_works_alone_and_refuses_a_served_data_dir(
    sqlite_server: LiveServer,
    stub: StubServerThread,
    key: str,
    tmp_path: Path,
    terminals: list[Terminal],
) -> None:
    stub.add_script(key, ["in-process answer"])
    config = write_config(stub, tmp_path / "own")
    term = chat(terminals, tmp_path, "--embedded", "--config", str(config))
    term.line(key)
    term.wait_for("in-process answer")
    term.wait_for("] >", count=2)  # the next prompt: a C-d typed before it would be lost
    term.key("C-d")
    term.wait_for("EXITED=0")

    refused = Terminal(
        [*FAWN, "chat", "--embedded", "--config", str(sqlite_server.config_path)], tmp_path
    )
    terminals.append(refused)
    screen = refused.wait_for("EXITED=2")
    assert "--embedded refused: a fawn server (pid" in screen
