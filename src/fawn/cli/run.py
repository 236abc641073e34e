"""``fawn run "prompt"``: one run, its answer streamed to stdout; for scripts and CI.

Exit status: 0 the run succeeded; 1 it ended in error; 3 the agent asked a question (answer
it with ``fawn run --thread ID "answer"``); 130 cancelled with Ctrl-C; 2 a usage or
connection problem. Notes (tool calls, plan, the thread id) go to stderr, so stdout is the
answer alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError
from langgraph_sdk.schema import Command, RunCreateMetadata

from fawn.cli.connect import CliError, add_connection_args, open_client
from fawn.cli.follow import STREAM_MODES, RunOutcome, follow_run
from fawn.cli.interrupts import Interrupts
from fawn.cli.view import TerminalView
from fawn.client.files import ClientError, artifacts, download_all, upload
from fawn.config import AppConfig

ASSISTANT = "lead_agent"


class Abandoned(Exception):
    """A second Ctrl-C: stop waiting for the run (its cancel was already sent)."""


EXIT_ERROR, EXIT_USAGE, EXIT_QUESTION, EXIT_CANCELLED = 1, 2, 3, 130


def add_parser(sub: Any, common: Any) -> None:
    run = sub.add_parser("run", help="run one prompt and stream the answer to stdout")
    common(run)
    run.add_argument("prompt", help="what to ask")
    run.add_argument("--thread", help="continue this thread (default: a new one)")
    run.add_argument("--out", type=Path, help="download the thread's artifacts into this folder")
    run.add_argument(
        "--upload",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="upload a file into the thread before the run (repeatable)",
    )
    run.add_argument("--model", help="model name from the configuration (default: the first)")
    run.add_argument("--plan", action="store_true", help="plan mode (the agent keeps a todo list)")
    run.add_argument("--thinking", action="store_true", help="enable the model's thinking mode")
    add_connection_args(run)


def main(args: argparse.Namespace, config: AppConfig) -> int:
    return asyncio.run(_main(args, config))


def configurable(model: str | None, plan: bool, thinking: bool) -> dict[str, Any]:
    options: dict[str, Any] = {"is_plan_mode": plan, "thinking_enabled": thinking}
    if model:
        options["model_name"] = model
    return options


async def _main(args: argparse.Namespace, config: AppConfig) -> int:
    view = TerminalView(sys.stdout, sys.stderr, color=sys.stderr.isatty())
    try:
        async with open_client(args, config) as client:
            return await _run(client, args, view)
    except CliError as exc:
        view.note(f"fawn run: {exc}", error=True)
        return EXIT_USAGE
    except (APIStatusError, ClientError, httpx.HTTPError) as exc:
        view.note(f"fawn run: {_describe(exc)}", error=True)
        return EXIT_ERROR


async def _run(client: LangGraphClient, args: argparse.Namespace, view: TerminalView) -> int:
    http = client.http.client
    thread_id = args.thread or (await client.threads.create())["thread_id"]
    if args.upload:
        missing = [str(p) for p in args.upload if not p.is_file()]
        if missing:
            raise CliError(f"no such file: {', '.join(missing)}")
        await upload(http, thread_id, args.upload)
    try:
        outcome = await stream_run(
            client,
            thread_id,
            view,
            input={"messages": [{"role": "user", "content": args.prompt}]},
            configurable=configurable(args.model, args.plan, args.thinking),
        )
    except Abandoned:
        outcome = None
    view.end_line()
    if outcome is None:
        view.note(f"cancelled (thread {thread_id})", error=True)
        return EXIT_CANCELLED
    if args.out is not None:
        for path in await download_all(http, thread_id, await artifacts(http, thread_id), args.out):
            view.note(f"saved {path}")
    return _report(outcome, thread_id, view)


async def stream_run(
    client: LangGraphClient,
    thread_id: str,
    view: TerminalView,
    *,
    configurable: dict[str, Any],
    input: dict[str, Any] | None = None,
    command: Command | None = None,
) -> RunOutcome | None:
    """Run and follow; Ctrl-C cancels the run (then waits for its end), a second one raises
    `Abandoned`. None when the run was cancelled from here."""
    created: dict[str, str] = {}
    known = asyncio.Event()

    def on_created(meta: RunCreateMetadata) -> None:
        created["run_id"] = meta["run_id"]
        known.set()

    async def cancel() -> None:
        view.note("cancelling the run (Ctrl-C again to stop waiting)…", error=True)
        await known.wait()  # a Ctrl-C before the server answered still reaches the run
        await client.runs.cancel(thread_id, created["run_id"], action="interrupt")

    parts = client.runs.stream(
        thread_id,
        ASSISTANT,
        input=input,
        command=command,
        stream_mode=STREAM_MODES,
        stream_resumable=True,
        multitask_strategy="reject",
        config={"configurable": configurable},
        on_run_created=on_created,
    )
    task = asyncio.ensure_future(follow_run(parts, view))
    interrupts = Interrupts(task, cancel)
    with interrupts.installed():
        try:
            outcome = await task
        except asyncio.CancelledError:
            if interrupts.count < 2:
                raise
            await interrupts.drain()
            raise Abandoned from None
    await interrupts.drain()
    if interrupts.count:
        return None
    return outcome


def _report(outcome: RunOutcome, thread_id: str, view: TerminalView) -> int:
    question = outcome.clarification
    if outcome.status == "interrupted" and question is not None:
        view.note(f"the agent asks: {question.get('question') or question}")
        for i, option in enumerate(question.get("options") or [], 1):
            view.note(f"  {i}. {option}")
        view.note(f'answer with: fawn run --thread {thread_id} "<your answer>"')
        return EXIT_QUESTION
    view.note(f"thread {thread_id}: {outcome.status}", error=outcome.status != "success")
    if outcome.error:
        view.note(f"error: {outcome.error}", error=True)
    return 0 if outcome.status == "success" else EXIT_ERROR


def _describe(exc: BaseException) -> str:
    if isinstance(exc, APIStatusError):
        with contextlib.suppress(Exception):
            detail = exc.response.json().get("detail")
            if detail:
                return f"{detail} (HTTP {exc.response.status_code})"
    return str(exc)
