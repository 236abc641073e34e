"""``fawn chat``: a terminal workbench on the public API, built on prompt_toolkit.

prompt_toolkit gives line editing, history and completion of the slash commands while the
conversation itself stays ordinary terminal output (scrollback, copy and paste, pipes), which
suits a chat better than a full-screen TUI. A run streams below the prompt; Ctrl-C cancels
it and a second Ctrl-C leaves (also when the run ended in between). At the prompt, Ctrl-C clears the line (twice in a row, or
Ctrl-D, leaves).
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import WordCompleter
from prompt_toolkit.history import InMemoryHistory

from fawn.cli.connect import CliError, add_connection_args, open_client, server_url
from fawn.cli.run import EXIT_USAGE, Abandoned, configurable, stream_run
from fawn.cli.view import TerminalView
from fawn.client.files import ClientError, artifacts, download, upload
from fawn.config import AppConfig

HELP = """commands:
  /threads [N]      list recent threads, or open the N-th of that list
  /new              start a new thread
  /upload PATH...   upload files into this thread
  /artifacts        list the files the agent presented
  /download [N] [DIR]  save artifact N (default: all) into DIR (default: .)
  /model [NAME]     show the models, or use NAME
  /plan [on|off]    toggle plan mode (the agent keeps a todo list)
  /help             this help;  /quit (or Ctrl-D) leaves
Ctrl-C cancels a running answer; a second Ctrl-C leaves."""

COMMANDS = [
    "/threads",
    "/new",
    "/upload",
    "/artifacts",
    "/download",
    "/model",
    "/plan",
    "/help",
    "/quit",
]


def add_parser(sub: Any, common: Any) -> None:
    chat = sub.add_parser("chat", help="chat with the agent in the terminal")
    common(chat)
    chat.add_argument("--thread", help="open this thread (default: a new one)")
    chat.add_argument("--model", help="model name from the configuration (default: the first)")
    add_connection_args(chat)


def main(args: argparse.Namespace, config: AppConfig) -> int:
    return asyncio.run(_main(args, config))


async def _main(args: argparse.Namespace, config: AppConfig) -> int:
    view = TerminalView(sys.stdout, sys.stdout, color=sys.stdout.isatty())
    try:
        async with open_client(args, config) as client:
            where = (
                f"embedded ({config.data_dir})"
                if args.embedded
                else (args.url or server_url(config))
            )
            chat = Chat(
                client=client, view=view, where=where, thread_id=args.thread, model=args.model
            )
            await chat.start()
            await chat.loop()
    except CliError as exc:
        view.note(f"fawn chat: {exc}", error=True)
        return EXIT_USAGE
    return 0


#: A Ctrl-C at the prompt this soon after one cancelled a run is the "second" one: it leaves.
SECOND_CTRL_C_SECONDS = 3.0


class Leave(Exception):
    """The user asked to leave (second Ctrl-C during a run, /quit)."""


@dataclass(kw_only=True)
class Chat:
    client: LangGraphClient
    view: TerminalView
    where: str
    thread_id: str | None = None
    model: str | None = None
    plan: bool = False
    models: list[dict[str, Any]] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)
    #: when a run was last cancelled with Ctrl-C (``time.monotonic()``)
    cancelled_at: float = float("-inf")

    @property
    def http(self) -> httpx.AsyncClient:
        return self.client.http.client

    async def start(self) -> None:
        response = await self.http.get("/api/models")
        self.models = response.json().get("models", []) if response.status_code == 200 else []
        if self.model is None and self.models:
            self.model = self.models[0]["name"]
        self.say(f"fawn chat · {self.where} · model {self.model or '(none configured)'}")
        self.say("type a message, or /help for commands")
        if self.thread_id:
            await self.open_thread(self.thread_id)

    async def loop(self) -> None:
        session: PromptSession[str] = PromptSession(
            history=InMemoryHistory(), completer=WordCompleter(COMMANDS, sentence=True)
        )
        ctrl_c = False
        while True:
            try:
                line = (await session.prompt_async(self.prompt_text())).strip()
            except KeyboardInterrupt:
                # A run cancelled with Ctrl-C may end before the second Ctrl-C arrives: one
                # landing at the prompt right after still means "leave".
                if ctrl_c or time.monotonic() - self.cancelled_at < SECOND_CTRL_C_SECONDS:
                    return
                ctrl_c = True
                self.say("(Ctrl-C again or Ctrl-D to leave)")
                continue
            except EOFError:
                return
            ctrl_c = False
            try:
                await self.handle(line)
            except (Leave, Abandoned):
                return
            except (ClientError, CliError, httpx.HTTPError, OSError, ValueError) as exc:
                self.view.note(f"error: {_message(exc)}", error=True)

    def prompt_text(self) -> str:
        mode = " plan" if self.plan else ""
        short = self.thread_id[:8] if self.thread_id else "new"
        return f"[{short}{mode}] > "

    def say(self, line: str) -> None:
        self.view.note(line)

    async def handle(self, line: str) -> None:
        if not line:
            return
        if not line.startswith("/"):
            await self.send(line)
            return
        name, *rest = shlex.split(line)
        handler = self.commands().get(name)
        if handler is None:
            self.say(f"unknown command {name}; /help lists them")
            return
        await handler(rest)

    def commands(self) -> dict[str, Callable[[list[str]], Awaitable[None]]]:
        return {
            "/threads": self.cmd_threads,
            "/new": self.cmd_new,
            "/upload": self.cmd_upload,
            "/artifacts": self.cmd_artifacts,
            "/download": self.cmd_download,
            "/model": self.cmd_model,
            "/plan": self.cmd_plan,
            "/help": self.cmd_help,
            "/quit": self.cmd_quit,
            "/exit": self.cmd_quit,
        }

    # -- runs -----------------------------------------------------------------------------

    async def ensure_thread(self) -> str:
        if self.thread_id is None:
            self.thread_id = (await self.client.threads.create())["thread_id"]
        return self.thread_id

    async def send(self, text: str, *, resume: bool = False) -> None:
        thread_id = await self.ensure_thread()
        message = {"messages": [{"role": "user", "content": text}]}
        outcome = await stream_run(
            self.client,
            thread_id,
            self.view,
            input=None if resume else message,
            command={"resume": text} if resume else None,
            configurable=configurable(self.model, self.plan, False),
        )
        self.view.end_line()
        if outcome is None:
            # The cancel was sent; a second Ctrl-C (or none) brought us here.
            self.cancelled_at = time.monotonic()
            self.say("run cancelled")
            return
        if outcome.status == "error":
            self.view.note(f"the run failed: {outcome.error or 'see the server log'}", error=True)
        elif outcome.status == "interrupted" and outcome.clarification is not None:
            await self.ask(outcome.clarification)

    async def ask(self, question: dict[str, Any]) -> None:
        """Show the agent's question and resume the run with the answer typed here."""
        self.say(f"? {question.get('question') or question}")
        options = [str(o) for o in question.get("options") or []]
        for i, option in enumerate(options, 1):
            self.say(f"  {i}. {option}")
        session: PromptSession[str] = PromptSession()
        try:
            reply = (await session.prompt_async("answer> ")).strip()
        except (KeyboardInterrupt, EOFError):
            self.say("(not answered: the question stays open; your next message answers it)")
            return
        if not reply:
            return
        if reply.isdigit() and 1 <= int(reply) <= len(options):
            reply = options[int(reply) - 1]
        await self.send(reply, resume=True)

    async def open_thread(self, thread_id: str) -> None:
        thread = await self.client.threads.get(thread_id)
        self.thread_id = thread["thread_id"]
        values = thread.get("values") or {}
        self.say(
            f"thread {self.thread_id}: {values.get('title') or 'untitled'} ({thread['status']})"
        )
        for message in (values.get("messages") or [])[-6:]:
            self._show_message(message)
        interrupts = [i for group in (thread.get("interrupts") or {}).values() for i in group]
        if thread["status"] == "interrupted" and interrupts:
            value = interrupts[0].get("value")
            if isinstance(value, dict):
                await self.ask(value)

    def _show_message(self, message: dict[str, Any]) -> None:
        from fawn.cli.follow import content_text

        text = content_text(message.get("content")).strip()
        if message.get("type") == "human" and text:
            self.say(f"you: {text[:300]}")
        elif message.get("type") == "ai" and text:
            self.view.text(text + "\n")

    # -- commands -------------------------------------------------------------------------

    async def cmd_threads(self, args: list[str]) -> None:
        if args:
            index = int(args[0]) if args[0].isdigit() else None
            if index is None or not 1 <= index <= len(self.listed):
                self.say("usage: /threads N, N from the last /threads list")
                return
            await self.open_thread(self.listed[index - 1])
            return
        threads = await self.client.threads.search(
            limit=20,
            sort_by="updated_at",
            sort_order="desc",
            select=["thread_id", "status", "updated_at"],
            extract={"title": "values.title"},
        )
        self.listed = [t["thread_id"] for t in threads]
        if not threads:
            self.say("no threads yet")
        for i, thread in enumerate(threads, 1):
            title = (thread.get("extracted") or {}).get("title") or "untitled"
            mark = "*" if thread["thread_id"] == self.thread_id else " "
            self.say(f"{mark}{i:2}. {title}  [{thread['status']}]  {thread['thread_id']}")

    async def cmd_new(self, args: list[str]) -> None:
        self.thread_id = None
        self.say("new thread (created with your first message)")

    async def cmd_upload(self, args: list[str]) -> None:
        if not args:
            self.say("usage: /upload PATH...")
            return
        paths = _local_paths(args)
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            self.say(f"no such file: {', '.join(missing)}")
            return
        stored = await upload(self.http, await self.ensure_thread(), paths)
        for entry in stored:
            self.say(
                f"uploaded {entry['filename']} → {entry.get('virtual_path') or entry.get('path', '')}"
            )

    async def cmd_artifacts(self, args: list[str]) -> None:
        found = await artifacts(self.http, self.thread_id) if self.thread_id else []
        if not found:
            self.say("no artifacts in this thread")
        for i, path in enumerate(found, 1):
            self.say(f"{i:2}. {path}")

    async def cmd_download(self, args: list[str]) -> None:
        found = await artifacts(self.http, self.thread_id) if self.thread_id else []
        if not found:
            self.say("no artifacts in this thread")
            return
        chosen = found
        if args and args[0].isdigit():
            index = int(args.pop(0))
            if not 1 <= index <= len(found):
                self.say(f"no artifact {index}; /artifacts lists {len(found)}")
                return
            chosen = [found[index - 1]]
        folder = _local_paths(args)[0] if args else _local_paths(["."])[0]
        assert self.thread_id is not None
        for path in chosen:
            saved = await download(self.http, self.thread_id, path, folder)
            self.say(f"saved {saved}")

    async def cmd_model(self, args: list[str]) -> None:
        names = [m["name"] for m in self.models]
        if args:
            if args[0] not in names:
                self.say(f"unknown model {args[0]}; configured: {', '.join(names) or 'none'}")
                return
            self.model = args[0]
        for model in self.models:
            mark = "*" if model["name"] == self.model else " "
            self.say(f"{mark} {model['name']}  {model.get('display_name') or ''}".rstrip())

    async def cmd_plan(self, args: list[str]) -> None:
        self.plan = (
            {"on": True, "off": False}.get(args[0], not self.plan) if args else not self.plan
        )
        self.say(f"plan mode {'on' if self.plan else 'off'}")

    async def cmd_help(self, args: list[str]) -> None:
        for line in HELP.splitlines():
            self.say(line)

    async def cmd_quit(self, args: list[str]) -> None:
        raise Leave


def _local_paths(args: list[str]) -> list[Path]:
    return [Path(a).expanduser() for a in args]


def _message(exc: BaseException) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        try:
            detail = exc.response.json().get("detail")
        except ValueError:
            detail = None
        return f"{detail or exc} (HTTP {exc.response.status_code})"
    return str(exc)
