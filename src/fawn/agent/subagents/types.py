"""Sub-agent types: the built-in ``general-purpose`` and ``bash``, and custom ones from
``subagents.custom_agents``. A type is a prompt, a tool allowlist and its limits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.tools import BaseTool

from fawn.agent.errors import AgentError
from fawn.agent.tools.names import BASH, LEAD_ONLY_TOOLS, LS, READ_FILE, STR_REPLACE, WRITE_FILE
from fawn.config.settings import SubagentSettings
from fawn.sandbox.paths import VIRTUAL_OUTPUTS, VIRTUAL_UPLOADS, VIRTUAL_WORKSPACE

GENERAL_PURPOSE = "general-purpose"
BASH_AGENT = "bash"


class SubagentConfigError(AgentError):
    """A custom sub-agent type names a tool that does not exist or is the lead's alone."""

    code = "invalid_subagent_config"


@dataclass(frozen=True, kw_only=True)
class SubagentType:
    name: str
    description: str
    system_prompt: str
    #: the tools it may use; ``None``: every tool but the lead's own
    tools: frozenset[str] | None
    model_name: str | None
    max_turns: int
    timeout_seconds: float

    def select(self, available: Sequence[BaseTool]) -> list[BaseTool]:
        """Its tools, from the lead's list (so a filter on that list applies here too)."""
        return [
            t
            for t in available
            if t.name not in LEAD_ONLY_TOOLS and (self.tools is None or t.name in self.tools)
        ]


_WORKSPACE_NOTE = f"""\
You share the lead agent's sandbox and files: {VIRTUAL_WORKSPACE} (working directory), \
{VIRTUAL_UPLOADS} (the user's uploads) and {VIRTUAL_OUTPUTS} (deliverables). You do not see \
the lead's conversation: everything you know about the task is in its message."""

_GENERAL_PURPOSE_PROMPT = f"""\
You are a sub-agent doing one delegated task on your own. Work with the tools you have, do \
not ask questions (nobody will answer them), and finish with a concise report: what you \
did, what you found, the paths of files you created, and any problem you hit. You cannot \
delegate further.

{_WORKSPACE_NOTE}"""

_BASH_PROMPT = f"""\
You are a sub-agent that runs shell commands for one delegated task. Run the commands \
carefully (dependent ones one at a time), and finish with a concise report of what you ran, \
whether it worked, the relevant output and any error. You cannot delegate further.

{_WORKSPACE_NOTE}"""


def builtin_types(settings: SubagentSettings) -> list[SubagentType]:
    return [
        SubagentType(
            name=GENERAL_PURPOSE,
            description=(
                "A capable agent for a bounded, self-contained piece of work (research in the "
                "files, writing, analysis) with every tool except task, ask_clarification "
                "and present_files."
            ),
            system_prompt=_GENERAL_PURPOSE_PROMPT,
            tools=None,
            model_name=None,
            max_turns=settings.max_turns,
            timeout_seconds=settings.timeout_seconds,
        ),
        SubagentType(
            name=BASH_AGENT,
            description="Runs a bounded shell workflow (bash plus basic file tools).",
            system_prompt=_BASH_PROMPT,
            tools=frozenset({BASH, LS, READ_FILE, WRITE_FILE, STR_REPLACE}),
            model_name=None,
            max_turns=settings.max_turns,
            timeout_seconds=settings.timeout_seconds,
        ),
    ]


def subagent_types(
    settings: SubagentSettings, available: Sequence[BaseTool]
) -> dict[str, SubagentType]:
    """Every type by name: the built-ins, then ``subagents.custom_agents``."""
    names = {t.name for t in available} - LEAD_ONLY_TOOLS
    types = {t.name: t for t in builtin_types(settings)}
    for custom in settings.custom_agents:
        tools = None if custom.tools is None else frozenset(custom.tools)
        unknown = sorted((tools or frozenset()) - names)
        if unknown:
            raise SubagentConfigError(
                f"subagents.custom_agents[{custom.name}].tools: {', '.join(unknown)} "
                f"cannot be given to a sub-agent (available: {', '.join(sorted(names))})"
            )
        types[custom.name] = SubagentType(
            name=custom.name,
            description=custom.description,
            system_prompt=f"{custom.system_prompt}\n\n{_WORKSPACE_NOTE}",
            tools=tools,
            model_name=custom.model_name,
            max_turns=custom.max_turns or settings.max_turns,
            timeout_seconds=custom.timeout_seconds or settings.timeout_seconds,
        )
    return types
