"""Assembles the lead agent from configuration: tools, the ordered middleware chain, prompt.

The middleware are listed here in no particular order: each declares its own placement and
:func:`fawn.agent.middleware.chain.build_chain` derives (and validates) the chain from those
declarations. ``tests/agent/test_chain.py`` pins the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from fawn.agent.graph import LeadAgent, build_lead_agent
from fawn.agent.middleware.chain import ChainMiddleware, build_chain
from fawn.agent.middleware.clarification import ClarificationMiddleware
from fawn.agent.middleware.dangling_tool_calls import DanglingToolCallMiddleware
from fawn.agent.middleware.input_sanitization import InputSanitizationMiddleware
from fawn.agent.middleware.loop_detection import LoopDetectionMiddleware
from fawn.agent.middleware.model_errors import ModelErrorMiddleware
from fawn.agent.middleware.model_selection import ModelSelectionMiddleware
from fawn.agent.middleware.sandbox import SandboxMiddleware
from fawn.agent.middleware.summarization import SummarizationMiddleware
from fawn.agent.middleware.thread_data import ThreadDataMiddleware
from fawn.agent.middleware.title import TitleMiddleware
from fawn.agent.middleware.todo_list import TodoListMiddleware
from fawn.agent.middleware.tool_errors import ToolErrorMiddleware
from fawn.agent.middleware.uploads import UploadsMiddleware
from fawn.agent.middleware.view_image import ViewImageMiddleware
from fawn.agent.models import ModelFactory
from fawn.agent.prompts import PLAN_MODE_PROMPT, SYSTEM_PROMPT
from fawn.agent.tools import (
    ASK_CLARIFICATION,
    PLAN_MODE_TOOLS,
    VISION_TOOLS,
    build_tools,
    load_image_b64,
)
from fawn.config.settings import AppConfig
from fawn.sandbox.base import SandboxProvider


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
    agent = config.agent
    return build_chain(
        [
            ModelSelectionMiddleware(models),
            InputSanitizationMiddleware(),
            SandboxMiddleware(sandbox),
            ThreadDataMiddleware(sandbox),
            UploadsMiddleware(sandbox),
            DanglingToolCallMiddleware(),
            ModelErrorMiddleware(retries=agent.model_retries, backoff_seconds=model_retry_backoff),
            ToolErrorMiddleware(),
            SummarizationMiddleware(config.summarization, models),
            TitleMiddleware(config.title, models),
            TodoListMiddleware(plan_tools=PLAN_MODE_TOOLS, plan_prompt=PLAN_MODE_PROMPT),
            ViewImageMiddleware(
                models=models,
                vision_tools=VISION_TOOLS,
                load_image=partial(load_image_b64, sandbox),
            ),
            LoopDetectionMiddleware(
                warn_after=agent.loop_warn_after, stop_after=agent.loop_stop_after
            ),
            ClarificationMiddleware(tool_name=ASK_CLARIFICATION),
        ]
    )


def assemble_lead_agent(
    config: AppConfig,
    models: ModelFactory,
    checkpointer: BaseCheckpointSaver[Any],
    sandbox: SandboxProvider,
    *,
    tools: Sequence[BaseTool] | None = None,
    model_retry_backoff: float = 1.0,
) -> LeadAgent:
    """The lead agent: ``tools`` defaults to every built-in tool (``build_tools``)."""
    chain = lead_middleware(config, models, sandbox, model_retry_backoff=model_retry_backoff)
    return build_lead_agent(
        models,
        checkpointer,
        tools=build_tools(sandbox) if tools is None else tools,
        middleware=chain,
        system_prompt=SYSTEM_PROMPT,
    )
