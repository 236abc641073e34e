"""Drive the real lead agent in-process: real ModelFactory, sandbox provider and chain.

The seam is the configuration, as in production: the models are ``ScriptedChatModel``s
configured under ``models:`` (``use: fawn.testing.fake_model:ScriptedChatModel`` with their
``turns``), so ``ModelFactory`` builds and caches them exactly as it builds real providers
and the test can read back the instance the graph used (``bound_tool_names``). What each
model call was sent is recorded by a LangChain callback handler, not by patching.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AnyMessage, BaseMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from fawn.agent.context import RunContext
from fawn.agent.graph import LeadAgent
from fawn.agent.lead import assemble_lead_agent
from fawn.agent.models import ModelFactory
from fawn.agent.tools import build_tools
from fawn.config.settings import AppConfig
from fawn.sandbox.local import LocalSandboxProvider
from fawn.testing.fake_model import ScriptedChatModel

SCRIPTED = "fawn.testing.fake_model:ScriptedChatModel"


class CallRecorder(BaseCallbackHandler):
    """The messages of every chat-model call of the conversation (title calls excluded)."""

    run_inline = True

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []
        self.side_calls: list[list[BaseMessage]] = []
        self.called = asyncio.Event()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        target = self.side_calls if tags and "nostream" in tags else self.calls
        target.append(list(messages[0]))
        self.called.set()


def model_entry(name: str, turns: Sequence[Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "use": SCRIPTED, "model": name, "turns": list(turns), **extra}


@dataclass
class Harness:
    config: AppConfig
    models: ModelFactory
    sandbox: LocalSandboxProvider
    saver: InMemorySaver
    agent: LeadAgent
    recorder: CallRecorder = field(default_factory=CallRecorder)

    def model(self, name: str = "main") -> ScriptedChatModel:
        model = self.models.get(name)
        assert isinstance(model, ScriptedChatModel)
        return model

    def _config(self, thread_id: str) -> Any:
        return {"configurable": {"thread_id": thread_id}, "callbacks": [self.recorder]}

    async def run(
        self,
        text: str | None,
        *,
        thread_id: str = "t1",
        resume: Any = None,
        **context: Any,
    ) -> dict[str, Any]:
        """One run: a user message (or ``resume`` an interrupt); returns the final values."""
        if resume is not None:
            graph_input: Any = Command(resume=resume)
        elif text is None:
            graph_input = None
        else:
            graph_input = {"messages": [{"role": "user", "content": text}]}
        run = RunContext(thread_id=thread_id, run_id=f"run-{len(self.recorder.calls)}", **context)
        result: dict[str, Any] = await self.agent.graph.ainvoke(
            graph_input, self._config(thread_id), context=run
        )
        return result

    async def values(self, thread_id: str = "t1") -> dict[str, Any]:
        snapshot = await self.agent.graph.aget_state(self._config(thread_id))
        return dict(snapshot.values)

    async def interrupts(self, thread_id: str = "t1") -> list[Any]:
        snapshot = await self.agent.graph.aget_state(self._config(thread_id))
        return [i.value for task in snapshot.tasks for i in task.interrupts]

    async def messages(self, thread_id: str = "t1") -> list[AnyMessage]:
        return list((await self.values(thread_id))["messages"])

    def uploads_dir(self, thread_id: str = "t1") -> Path:
        path = self.config.data_dir / "threads" / thread_id / "user-data" / "uploads"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def workspace_dir(self, thread_id: str = "t1") -> Path:
        path = self.config.data_dir / "threads" / thread_id / "user-data" / "workspace"
        path.mkdir(parents=True, exist_ok=True)
        return path


def make_harness(
    data_dir: Path,
    turns: Sequence[Any],
    *,
    tools: Sequence[BaseTool] | None = None,
    extra_tools: Sequence[BaseTool] = (),
    models: Sequence[dict[str, Any]] = (),
    main: dict[str, Any] | None = None,
    **sections: Any,
) -> Harness:
    """A lead agent whose default model ``main`` answers ``turns``.

    ``tools`` replaces the built-in tools, ``extra_tools`` joins them; ``models`` adds model
    entries; ``sections`` are config sections (``title``, ``agent``, ...). Titles are off
    unless ``title`` is given.
    """
    raw: dict[str, Any] = {
        "data_dir": str(data_dir),
        "models": [model_entry("main", turns, **(main or {})), *models],
        "title": {"enabled": False},
        **sections,
    }
    config = AppConfig.model_validate(raw)
    factory = ModelFactory(config)
    sandbox = LocalSandboxProvider(config.data_dir, config.sandbox)
    saver = InMemorySaver()
    if tools is None:
        tools = [*build_tools(sandbox), *extra_tools]
    agent = assemble_lead_agent(
        config, factory, saver, sandbox, tools=tools, model_retry_backoff=0.0
    )
    return Harness(config=config, models=factory, sandbox=sandbox, saver=saver, agent=agent)
