"""The lead agent: one compiled graph per server, configured per run through RunContext."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from fawn.agent.context import RunContext
from fawn.agent.models import ModelFactory
from fawn.agent.placeholder import UnconfiguredChatModel
from fawn.agent.state import ThreadState

LEAD_AGENT = "lead_agent"

SYSTEM_PROMPT = (
    "You are fawn's lead agent. You work inside an isolated workspace: "
    "/mnt/user-data/workspace for scratch work, /mnt/user-data/uploads for the user's files, "
    "/mnt/user-data/outputs for deliverables (present them with present_files)."
)


@dataclass(frozen=True, kw_only=True)
class LeadAgent:
    graph: CompiledStateGraph[Any, RunContext, Any, Any]
    graph_id: str = LEAD_AGENT


def build_lead_agent(
    models: ModelFactory,
    checkpointer: BaseCheckpointSaver[Any],
    *,
    tools: Sequence[BaseTool] = (),
    middleware: Sequence[AgentMiddleware[Any, Any]] = (),
    system_prompt: str = SYSTEM_PROMPT,
    state_schema: type[Any] = ThreadState,
) -> LeadAgent:
    """The compiled lead graph; ``state_schema`` is :class:`ThreadState` or its ``delta``
    checkpoint-mode variant (:func:`fawn.agent.delta.thread_state_schema`)."""
    base: BaseChatModel = models.get(None) if models.names else UnconfiguredChatModel()
    graph = create_agent(
        model=base,
        tools=list(tools),
        system_prompt=system_prompt,
        middleware=list(middleware),
        state_schema=state_schema,
        context_schema=RunContext,
        checkpointer=checkpointer,
        name=LEAD_AGENT,
    )
    return LeadAgent(graph=graph)
