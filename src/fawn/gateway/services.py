"""The composition root: every long-lived service, opened and closed by the app lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fawn.agent.graph import LeadAgent
from fawn.agent.lead import assemble_lead_agent
from fawn.agent.models import ModelFactory
from fawn.config.settings import AppConfig
from fawn.runs.manager import RunManager
from fawn.runs.threads import ThreadService
from fawn.runs.worker import RunWorker
from fawn.sandbox.local import LocalSandboxProvider
from fawn.store.checkpoints import Saver, open_checkpointer
from fawn.store.database import Database
from fawn.store.lock import hold_data_dir
from fawn.store.runs import RunRepository
from fawn.store.threads import ThreadRepository
from fawn.streams.bridge import StreamBridge
from fawn.streams.factory import open_stream_bridge


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
    runs: RunManager


@asynccontextmanager
async def open_services(config: AppConfig) -> AsyncIterator[Services]:
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
        sandbox = LocalSandboxProvider(data_dir, config.sandbox)
        stack.push_async_callback(sandbox.aclose)
        models = ModelFactory(config)
        agent = assemble_lead_agent(config, models, saver, sandbox)
        threads = ThreadService(ThreadRepository(db), agent, saver, data_dir)
        runs_repo = RunRepository(db)
        worker = RunWorker(
            config=config,
            agent=agent,
            saver=saver,
            runs=runs_repo,
            threads=threads,
            bridge=bridge,
            owner=RunManager.new_owner_id(),
        )
        manager = RunManager(worker, runs_repo, models, single_process=not db.is_postgres)
        await manager.start()
        stack.push_async_callback(manager.aclose)
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
            runs=manager,
        )
