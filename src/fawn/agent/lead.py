"""Assembles the lead agent from configuration: tools, the ordered middleware chain, prompt,
and the sub-agents its ``task`` tool starts.

The middleware are listed here in no particular order: each declares its own placement and
:func:`fawn.agent.middleware.chain.build_chain` derives (and validates) the chain from those
declarations. ``tests/agent/test_chain.py`` pins the result, for the lead and for a
sub-agent. Both chains share the capability middleware (what a model may see and call), so
a filter added to :func:`_shared_controls` applies to sub-agents as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from langchain.agents import create_agent
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from fawn.agent.context import RunContext
from fawn.agent.delta import thread_state_schema
from fawn.agent.errors import AgentError
from fawn.agent.graph import LeadAgent, build_lead_agent
from fawn.agent.middleware.chain import ChainMiddleware, build_chain
from fawn.agent.middleware.clarification import (
    ClarificationMiddleware,
    ClarificationPauseMiddleware,
)
from fawn.agent.middleware.dangling_tool_calls import DanglingToolCallMiddleware
from fawn.agent.middleware.dynamic_context import DynamicContextMiddleware
from fawn.agent.middleware.finish_reasons import FinishReasonMiddleware
from fawn.agent.middleware.input_sanitization import InputSanitizationMiddleware
from fawn.agent.middleware.loop_detection import LoopDetectionMiddleware
from fawn.agent.middleware.model_errors import ModelErrorMiddleware
from fawn.agent.middleware.model_selection import ModelSelectionMiddleware
from fawn.agent.middleware.read_before_write import ReadBeforeWriteMiddleware
from fawn.agent.middleware.sandbox import SandboxMiddleware
from fawn.agent.middleware.subagent_limit import SubagentLimitMiddleware
from fawn.agent.middleware.summarization import SummarizationMiddleware
from fawn.agent.middleware.system_message_coalescing import SystemMessageCoalescingMiddleware
from fawn.agent.middleware.terminal_response import TerminalResponseMiddleware
from fawn.agent.middleware.thread_data import ThreadDataMiddleware
from fawn.agent.middleware.title import TitleMiddleware
from fawn.agent.middleware.todo_list import TodoListMiddleware
from fawn.agent.middleware.token_budget import TokenBudgetMiddleware
from fawn.agent.middleware.tool_errors import ToolErrorMiddleware
from fawn.agent.middleware.tool_output_budget import ToolOutputBudgetMiddleware
from fawn.agent.middleware.tool_policy import ToolPolicyMiddleware
from fawn.agent.middleware.tool_result_sanitization import ToolResultSanitizationMiddleware
from fawn.agent.middleware.turn_limit import TurnLimitMiddleware
from fawn.agent.middleware.uploads import UploadsMiddleware
from fawn.agent.middleware.view_image import ViewImageMiddleware
from fawn.agent.models import ModelFactory
from fawn.agent.placeholder import UnconfiguredChatModel
from fawn.agent.prompts import PLAN_MODE_PROMPT, SYSTEM_PROMPT
from fawn.agent.state import ThreadState
from fawn.agent.subagents.runner import Graph, SubagentRunner
from fawn.agent.subagents.task_tool import task_tool
from fawn.agent.subagents.types import SubagentType, subagent_types
from fawn.agent.tools import (
    ASK_CLARIFICATION,
    PLAN_MODE_TOOLS,
    VISION_TOOLS,
    build_tools,
    load_image_b64,
)
from fawn.config.settings import AppConfig
from fawn.sandbox.base import SandboxProvider


def _shared_controls(
    config: AppConfig,
    models: ModelFactory,
    sandbox: SandboxProvider,
    *,
    model_retry_backoff: float,
) -> list[ChainMiddleware]:
    """The middleware the lead and its sub-agents both run."""
    agent, controls = config.agent, config.controls
    shared: list[ChainMiddleware] = [
        ModelSelectionMiddleware(models),
        InputSanitizationMiddleware(),
        ModelErrorMiddleware(retries=agent.model_retries, backoff_seconds=model_retry_backoff),
        ToolErrorMiddleware(),
        ToolResultSanitizationMiddleware(),
        ToolOutputBudgetMiddleware(controls, sandbox),
        TodoListMiddleware(plan_tools=PLAN_MODE_TOOLS, plan_prompt=PLAN_MODE_PROMPT),
        # the user's role's tools (auth.policy), for the lead and its sub-agents alike
        ToolPolicyMiddleware(),
        ViewImageMiddleware(
            models=models,
            vision_tools=VISION_TOOLS,
            load_image=partial(load_image_b64, sandbox),
        ),
        SubagentLimitMiddleware(config.subagents),
        LoopDetectionMiddleware(warn_after=agent.loop_warn_after, stop_after=agent.loop_stop_after),
        TokenBudgetMiddleware(
            max_run_tokens=controls.max_run_tokens, warn_fraction=controls.token_warn_fraction
        ),
        TerminalResponseMiddleware(),
        FinishReasonMiddleware(),
        SystemMessageCoalescingMiddleware(),
    ]
    if controls.read_before_write:
        shared.append(ReadBeforeWriteMiddleware(sandbox))
    if controls.dynamic_context:
        shared.append(DynamicContextMiddleware(config.subagents))
    return shared


def lead_middleware(
    config: AppConfig,
    models: ModelFactory,
    sandbox: SandboxProvider,
    *,
    model_retry_backoff: float = 1.0,
) -> list[ChainMiddleware]:
    """The lead agent's middleware chain, ordered by the middleware's own declarations.

    ``model_retry_backoff`` is the first retry's delay in seconds (doubling after).
    """
    return build_chain(
        [
            *_shared_controls(config, models, sandbox, model_retry_backoff=model_retry_backoff),
            SandboxMiddleware(sandbox),
            ThreadDataMiddleware(sandbox),
            UploadsMiddleware(sandbox),
            ClarificationPauseMiddleware(tool_name=ASK_CLARIFICATION),
            DanglingToolCallMiddleware(),
            SummarizationMiddleware(config.summarization, models),
            TitleMiddleware(config.title, models),
            ClarificationMiddleware(tool_name=ASK_CLARIFICATION),
        ]
    )


def subagent_middleware(
    config: AppConfig,
    models: ModelFactory,
    sandbox: SandboxProvider,
    kind: SubagentType,
    *,
    model_retry_backoff: float = 1.0,
) -> list[ChainMiddleware]:
    """A sub-agent's chain: the shared controls plus its turn limit. No thread resources (its
    tools find the sandbox through the run context), no title, no clarification."""
    return build_chain(
        [
            *_shared_controls(config, models, sandbox, model_retry_backoff=model_retry_backoff),
            TurnLimitMiddleware(max_turns=kind.max_turns),
        ]
    )


def build_subagent_runner(
    config: AppConfig,
    models: ModelFactory,
    sandbox: SandboxProvider,
    tools: Sequence[BaseTool],
    *,
    model_retry_backoff: float = 1.0,
) -> SubagentRunner:
    """One compiled graph per sub-agent type, over its share of ``tools``."""
    types = subagent_types(config.subagents, tools)
    base = models.get(None) if models.names else UnconfiguredChatModel()
    graphs: dict[str, Graph] = {}
    for kind in types.values():
        graphs[kind.name] = create_agent(
            model=base,
            tools=kind.select(tools),
            system_prompt=kind.system_prompt,
            middleware=subagent_middleware(
                config, models, sandbox, kind, model_retry_backoff=model_retry_backoff
            ),
            state_schema=ThreadState,
            context_schema=RunContext,
            name=f"subagent:{kind.name}",
        )
    return SubagentRunner(graphs, types, partial(_model_name, models))


def _model_name(models: ModelFactory, name: str | None) -> str:
    """The configured name behind ``name`` (``None``: the default model), for reports."""
    if not models.names:
        return name or ""
    try:
        return models.settings(name).name
    except AgentError:
        return name or ""


def assemble_lead_agent(
    config: AppConfig,
    models: ModelFactory,
    checkpointer: BaseCheckpointSaver[Any],
    sandbox: SandboxProvider,
    *,
    tools: Sequence[BaseTool] | None = None,
    model_retry_backoff: float = 1.0,
) -> LeadAgent:
    """The lead agent: ``tools`` defaults to every built-in tool (``build_tools``); the
    ``task`` tool is added, its sub-agents drawing on the same list."""
    chain = lead_middleware(config, models, sandbox, model_retry_backoff=model_retry_backoff)
    base_tools = list(build_tools(sandbox) if tools is None else tools)
    runner = build_subagent_runner(
        config, models, sandbox, base_tools, model_retry_backoff=model_retry_backoff
    )
    return build_lead_agent(
        models,
        checkpointer,
        tools=[*base_tools, task_tool(runner)],
        middleware=chain,
        system_prompt=SYSTEM_PROMPT,
        state_schema=thread_state_schema(
            config.checkpoints.mode, keyframe_every=config.checkpoints.keyframe_every
        ),
    )
