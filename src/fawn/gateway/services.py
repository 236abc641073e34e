"""The composition root: every long-lived service, opened and closed by the app lifespan.

The run lifecycle is assembled here from its units, each given what it needs and nothing
else: admission, the dispatcher (claims) and executor (execution, then the finalization
steps), cancellation, ownership, waiting and following. See ``fawn.runs``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fawn.agent.graph import LeadAgent
from fawn.agent.lead import assemble_lead_agent
from fawn.agent.models import ModelFactory
from fawn.config.settings import AppConfig, EvidenceSettings
from fawn.evidence import ChangeLimits, EvidenceStore
from fawn.gateway.auth.service import AuthService, open_auth
from fawn.gateway.stream_events import LangGraphStreamRenderer
from fawn.runs.admission import Admission
from fawn.runs.cancellation import Cancellation
from fawn.runs.changes import RunChangesQuery
from fawn.runs.clock import Clock, SystemClock
from fawn.runs.dispatcher import Dispatcher
from fawn.runs.endings import StreamEnder
from fawn.runs.execution import GraphExecution
from fawn.runs.executor import RunExecutor
from fawn.runs.finalization import Finalizer, finalization_steps
from fawn.runs.following import Following
from fawn.runs.lifecycle import RunLifecycle
from fawn.runs.local import LocalRuns
from fawn.runs.ownership import Ownership, new_worker_id
from fawn.runs.rollback import Rollback
from fawn.runs.service import RunService
from fawn.runs.shutdown import Shutdown
from fawn.runs.threads import ThreadService
from fawn.runs.waiting import RunWaiter
from fawn.runs.wakeups import Wakeups
from fawn.runs.workspace import WorkspaceEvidence
from fawn.sandbox.local import LocalSandboxProvider
from fawn.store.checkpoints import Saver, open_checkpointer
from fawn.store.database import Database
from fawn.store.lock import hold_data_dir
from fawn.store.receipts import ReceiptRepository
from fawn.store.run_queue import RunQueue
from fawn.store.runs import RunRepository
from fawn.store.threads import ThreadRepository
from fawn.store.workers import WorkerRepository
from fawn.streams.bridge import StreamBridge
from fawn.streams.factory import open_notifier, open_stream_bridge
from fawn.streams.notify import Notifier


@dataclass(kw_only=True)
class Services:
    config: AppConfig
    data_dir: Path
    db: Database
    saver: Saver
    models: ModelFactory
    agent: LeadAgent
    sandbox: LocalSandboxProvider
    bridge: StreamBridge
    threads: ThreadService
    runs: RunService
    lifecycle: RunLifecycle
    auth: AuthService
    changes: RunChangesQuery


@dataclass(frozen=True, kw_only=True)
class RunParts:
    """What the run lifecycle is built on."""

    config: AppConfig
    db: Database
    saver: Saver
    models: ModelFactory
    agent: LeadAgent
    threads: ThreadService
    bridge: StreamBridge
    notifier: Notifier
    clock: Clock
    data_dir: Path


def evidence_store(settings: EvidenceSettings) -> EvidenceStore | None:
    """The store of run snapshots (None when ``evidence.enabled`` is off)."""
    if not settings.enabled:
        return None
    limits = ChangeLimits(
        diff_max_file_bytes=settings.diff_max_file_bytes,
        diff_max_chars=settings.diff_max_chars,
        diff_total_chars=settings.diff_total_chars,
    )
    return EvidenceStore(
        exclude=settings.exclude,
        keep_runs=settings.keep_runs,
        limits=limits,
        max_file_bytes=settings.max_file_bytes,
        watch=settings.watch,
    )


def build_runs(parts: RunParts) -> tuple[RunService, RunLifecycle]:
    """Assemble the run lifecycle's units."""
    settings, clock = parts.config.runs, parts.clock
    runs, queue, local, shutdown = (
        RunRepository(parts.db),
        RunQueue(parts.db, parts.config.checkpoints.mode),
        LocalRuns(),
        Shutdown(),
    )
    renderer = LangGraphStreamRenderer()
    wakeups = Wakeups(parts.notifier, clock, poll_seconds=settings.poll_seconds)
    ender = StreamEnder(parts.bridge, renderer, wakeups)
    worker_id = new_worker_id()
    cancellation = Cancellation(
        queue=queue, local=local, notifier=parts.notifier, ender=ender, clock=clock
    )
    workspace = WorkspaceEvidence(
        evidence_store(parts.config.evidence),
        parts.data_dir,
        parts.threads.repo.owner_of,
        require_delivery=parts.config.evidence.require_delivery,
    )
    steps = finalization_steps(
        queue=queue,
        agent=parts.agent,
        rollback=Rollback(parts.agent, parts.saver, workspace),
        workspace=workspace,
        threads=parts.threads,
        wakeups=wakeups,
        renderer=renderer,
        clock=clock,
        publish_seconds=parts.config.streams.publish_retry_seconds,
    )
    executor = RunExecutor(
        GraphExecution(
            parts.agent,
            renderer,
            recursion_limit=parts.config.agent.recursion_limit,
            workspace=workspace,
            durability=parts.config.checkpoints.durability,
        ),
        Finalizer(steps),
        parts.bridge,
        clock,
        stream_capacity=parts.config.streams.retention_events,
    )
    dispatcher = Dispatcher(
        queue=queue,
        local=local,
        executor=executor,
        wakeups=wakeups,
        shutdown=shutdown,
        clock=clock,
        owner=worker_id,
        max_concurrent=settings.max_concurrent,
        poll_seconds=settings.poll_seconds,
    )
    ownership = Ownership(
        worker_id=worker_id,
        workers=WorkerRepository(parts.db),
        queue=queue,
        runs=runs,
        local=local,
        ender=ender,
        clock=clock,
        settings=settings,
        single_process=not parts.db.is_postgres,
    )
    service = RunService(
        admission=Admission(
            queue=queue,
            models=parts.models,
            graph_nodes=list(parts.agent.graph.nodes),
            bridge=parts.bridge,
            cancellation=cancellation,
            wakeups=wakeups,
            shutdown=shutdown,
            clock=clock,
        ),
        dispatcher=dispatcher,
        cancellation=cancellation,
        waiter=RunWaiter(
            runs=runs, local=local, wakeups=wakeups, agent=parts.agent, shutdown=shutdown
        ),
        following=Following(
            bridge=parts.bridge,
            runs=runs,
            local=local,
            wakeups=wakeups,
            shutdown=shutdown,
            clock=clock,
        ),
        runs=runs,
        queue=queue,
        threads=parts.threads,
        bridge=parts.bridge,
        shutdown=shutdown,
        clock=clock,
        stop_wait_seconds=settings.stop_wait_seconds,
    )
    lifecycle = RunLifecycle(
        ownership=ownership,
        dispatcher=dispatcher,
        service=service,
        wakeups=wakeups,
        notifier=parts.notifier,
        shutdown=shutdown,
        drain_seconds=settings.drain_seconds,
        stop_wait_seconds=settings.stop_wait_seconds,
        workspace=workspace,
    )
    return service, lifecycle


@asynccontextmanager
async def open_services(config: AppConfig, clock: Clock | None = None) -> AsyncIterator[Services]:
    data_dir = config.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    async with AsyncExitStack() as stack:
        db = Database.from_settings(config.database, data_dir)
        if not db.is_postgres:
            # SQLite and the memory bridge are one process's: refuse a second owner.
            stack.enter_context(hold_data_dir(data_dir))
        stack.push_async_callback(db.dispose)
        await db.migrate()
        saver = await stack.enter_async_context(open_checkpointer(config.database, data_dir))
        bridge = await open_stream_bridge(config.streams)
        stack.push_async_callback(bridge.aclose)
        notifier = await open_notifier(config.streams)
        stack.push_async_callback(notifier.aclose)
        thread_repo = ThreadRepository(db, config.checkpoints.mode)
        # a thread's files live under its owner's directory
        sandbox = LocalSandboxProvider(data_dir, config.sandbox, owner_of=thread_repo.owner_of)
        stack.push_async_callback(sandbox.aclose)
        models = ModelFactory(config)
        agent = assemble_lead_agent(config, models, saver, sandbox)
        threads = ThreadService(thread_repo, agent, saver, data_dir, sandbox)
        auth = await stack.enter_async_context(open_auth(config, db, data_dir, thread_repo))
        runs, lifecycle = build_runs(
            RunParts(
                config=config,
                db=db,
                saver=saver,
                models=models,
                agent=agent,
                threads=threads,
                bridge=bridge,
                notifier=notifier,
                clock=clock or SystemClock(),
                data_dir=data_dir,
            )
        )
        await lifecycle.start()
        stack.push_async_callback(lifecycle.aclose)
        yield Services(
            config=config,
            data_dir=data_dir,
            db=db,
            saver=saver,
            models=models,
            agent=agent,
            sandbox=sandbox,
            bridge=bridge,
            threads=threads,
            runs=runs,
            lifecycle=lifecycle,
            auth=auth,
            changes=RunChangesQuery(runs, ReceiptRepository(db)),
        )
