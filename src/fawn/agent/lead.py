"""Assembles the lead agent from configuration: tools, middleware chain, sandbox."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from fawn.agent.graph import LeadAgent, build_lead_agent
from fawn.agent.models import ModelFactory
from fawn.config.settings import AppConfig
from fawn.sandbox.base import SandboxProvider


def assemble_lead_agent(
    config: AppConfig,
    models: ModelFactory,
    checkpointer: BaseCheckpointSaver[Any],
    sandbox: SandboxProvider,
) -> LeadAgent:
    return build_lead_agent(models, checkpointer)
