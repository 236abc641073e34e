"""The run lifecycle in-process, on a fake clock, with a graph the test controls.

``Worker`` assembles the real units (``fawn.gateway.services.build_runs``) on a real
database (SQLite file, or a PostgreSQL database for several workers), a real checkpointer
and a small graph whose one node does what the run's input says:

- ``ok``: answer at once;
- ``hold:<name>``: wait until the test opens gate ``<name>`` (``Gates.open``);
- ``fail``: raise inside the graph.

Faults are injected through seams, not patches: :class:`FlakyDatabase` refuses every
statement while ``down`` is set (as a database that went away), and the notifier and clock
are passed in (two workers share them as two processes share Redis and time).
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from sqlalchemy.ext.asyncio import AsyncConnection
from typing_extensions import TypedDict

from fawn.agent.graph import LeadAgent
from fawn.agent.models import ModelFactory
from fawn.config.settings import AppConfig
from fawn.gateway.services import RunParts, build_runs
from fawn.runs.lifecycle import RunLifecycle
from fawn.runs.service import RunService
from fawn.runs.spec import RunSpec
from fawn.runs.threads import ThreadService
from fawn.sandbox.local import LocalSandboxProvider
from fawn.store.checkpoints import open_checkpointer
from fawn.store.database import Database
from fawn.store.errors import StoreUnavailable
from fawn.store.threads import ThreadRepository
from fawn.streams.events import StreamEvent
from fawn.streams.memory import MemoryStreamBridge
from fawn.streams.notify import MemoryNotifier
from fawn.testing.clock import FakeClock

MODEL = {
    "name": "scripted",
    "use": "fawn.testing.fake_model:ScriptedChatModel",
    "model": "scripted",
}


class Gates:
    """Named events the graph's node waits on (``hold:<name>``)."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}
        self.entered: dict[str, asyncio.Event] = {}

    def _get(self, table: dict[str, asyncio.Event], name: str) -> asyncio.Event:
        return table.setdefault(name, asyncio.Event())

    def open(self, name: str) -> None:
        self._get(self._events, name).set()

    async def wait(self, name: str) -> None:
        self._get(self.entered, name).set()
        await self._get(self._events, name).wait()

    async def reached(self, name: str) -> None:
        """Until a run is waiting at gate ``name``."""
        await self._get(self.entered, name).wait()


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[list[str], operator.add]


def control_graph(gates: Gates, saver: Any) -> LeadAgent:
    async def work(state: State) -> dict[str, Any]:
        command = str(state["messages"][-1].content)
        if command.startswith("hold:"):
            await gates.wait(command.removeprefix("hold:"))
        elif command == "fail":
            raise RuntimeError("the node failed")
        return {"messages": [AIMessage(content=f"done {command}")], "steps": [command]}

    graph = StateGraph(State)
    graph.add_node("work", work)
    graph.add_edge(START, "work")
    graph.add_edge("work", END)
    return LeadAgent(graph=graph.compile(checkpointer=saver))  # type: ignore[arg-type]


class FlakyDatabase(Database):
    """A database whose connections fail while ``down`` is set."""

    down: bool = False

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        self._check()
        async with super().begin() as conn:
            yield conn

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        self._check()
        async with super().connect() as conn:
            yield conn

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable("the database is unavailable: (test) connection refused")


@dataclass
class Worker:
    service: RunService
    lifecycle: RunLifecycle
    threads: ThreadService
    db: FlakyDatabase
    bridge: MemoryStreamBridge
    sandbox: LocalSandboxProvider
    stack: AsyncExitStack = field(default_factory=AsyncExitStack)

    async def new_thread(self) -> str:
        return (await self.threads.create(None, None, "raise")).thread_id

    async def admit(self, thread_id: str | None, command: str, **spec: Any) -> str:
        run = await self.service.admit(thread_id, run_spec(command, **spec))
        return run.run_id

    async def status(self, thread_id: str, run_id: str) -> str:
        return (await self.service.get(thread_id, run_id)).status


def run_spec(command: str, **overrides: Any) -> RunSpec:
    fields: dict[str, Any] = {
        "assistant_id": "lead_agent",
        "input": {"messages": [{"role": "user", "content": command}]},
        "stream_modes": ("values",),
    }
    fields.update(overrides)
    return RunSpec(**fields)


def app_config(data_dir: Path, **runs: Any) -> AppConfig:
    settings = {
        "renew_seconds": 1.0,
        "outage_tolerance_seconds": 10.0,
        "sweep_seconds": 2.0,
        "lease_seconds": 20.0,
        "poll_seconds": 5.0,
        "drain_seconds": 5.0,
        "stop_wait_seconds": 5.0,
        **runs,
    }
    return AppConfig.model_validate(
        {"data_dir": str(data_dir), "models": [MODEL], "runs": settings}
    )


@asynccontextmanager
async def start_worker(
    data_dir: Path,
    *,
    clock: FakeClock,
    gates: Gates,
    notifier: MemoryNotifier | None = None,
    db_url: str | None = None,
    **runs: Any,
) -> AsyncIterator[Worker]:
    """A worker on ``data_dir`` (SQLite) or ``db_url`` (PostgreSQL; several workers)."""
    config = app_config(data_dir, **runs)
    if db_url is not None:
        config = config.model_copy(
            update={"database": config.database.model_copy(update={"url": db_url})}
        )
    async with AsyncExitStack() as stack:
        base = Database.from_settings(config.database, data_dir)
        db = FlakyDatabase(engine=base.engine, url=base.url)
        stack.push_async_callback(db.dispose)
        await db.migrate()
        saver = await stack.enter_async_context(open_checkpointer(config.database, data_dir))
        bridge = MemoryStreamBridge(config.streams)
        stack.push_async_callback(bridge.aclose)
        sandbox = LocalSandboxProvider(data_dir, config.sandbox)
        agent = control_graph(gates, saver)
        threads = ThreadService(ThreadRepository(db), agent, saver, data_dir, sandbox)
        service, lifecycle = build_runs(
            RunParts(
                config=config,
                db=db,
                saver=saver,
                models=ModelFactory(config),
                agent=agent,
                threads=threads,
                bridge=bridge,
                notifier=notifier or MemoryNotifier(),
                clock=clock,
                data_dir=data_dir,
            )
        )
        await lifecycle.start()
        stack.push_async_callback(lifecycle.aclose)
        yield Worker(service, lifecycle, threads, db, bridge, sandbox, stack)


async def settle(clock: FakeClock, seconds: float = 0.0, *, rounds: int = 20) -> None:
    """Let every ready task run (and move the fake clock by ``seconds``)."""
    for _ in range(rounds):
        await asyncio.sleep(0.01)
    if seconds:
        await clock.advance(seconds)
        for _ in range(rounds):
            await asyncio.sleep(0.01)


async def eventually(check: Any, *, clock: FakeClock | None = None, step: float = 0.0) -> Any:
    """Poll ``check()`` (sync or async) until it is truthy: a generous, bounded loop that
    also moves the fake clock by ``step`` each round when given."""
    for _ in range(500):
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if clock is not None and step:
            await clock.advance(step)
        await asyncio.sleep(0.02)
    raise AssertionError("the condition never held")


@contextlib.contextmanager
def database_down(*workers: Worker) -> Iterator[None]:
    for worker in workers:
        worker.db.down = True
    try:
        yield
    finally:
        for worker in workers:
            worker.db.down = False


async def stream_events(worker: Worker, run_id: str) -> list[tuple[str, Any]]:
    """The run's stream as the worker's bridge holds it: (event, data) pairs."""
    return [
        (item.event, item.data)
        async for item in worker.bridge.subscribe(run_id, heartbeat_seconds=60)
        if isinstance(item, StreamEvent)
    ]
