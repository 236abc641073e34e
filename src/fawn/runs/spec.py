"""RunSpec: a validated run request, independent of HTTP.

Every option here means what LangGraph means by it; options we do not implement are refused
before a run exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from langgraph.types import Command, Send

from fawn.agent.context import AgentOptions, ReasoningEffort
from fawn.runs.errors import InvalidInput
from fawn.store.runs import MultitaskStrategy

StreamModeName = Literal[
    "values",
    "updates",
    "messages",
    "messages-tuple",
    "custom",
    "debug",
    "tasks",
    "checkpoints",
    "events",
]
SUPPORTED_STREAM_MODES: tuple[str, ...] = get_args(StreamModeName)
#: The most sub-agents a run may ask to have at once (``subagents.max_concurrent`` may lower it)
MAX_CONCURRENT_SUBAGENTS = 4
OnDisconnect = Literal["cancel", "continue"]

#: configurable/context keys the lead agent understands, and their types
_OPTION_TYPES: dict[str, type | tuple[type, ...]] = {
    "thinking_enabled": bool,
    "reasoning_effort": str,
    "model_name": str,
    "is_plan_mode": bool,
    "subagent_enabled": bool,
    "max_concurrent_subagents": int,
    "agent_name": str,
}
#: DeerFlow's chat modes, as its web app sends them (``context.mode``): what each turns on.
#: These are defaults; an option the request also names (the app sends the same values
#: beside ``mode``) wins.
MODES: dict[str, dict[str, Any]] = {
    "flash": {"thinking_enabled": False, "is_plan_mode": False, "subagent_enabled": False},
    "thinking": {
        "thinking_enabled": True,
        "is_plan_mode": False,
        "subagent_enabled": False,
        "reasoning_effort": "low",
    },
    "pro": {
        "thinking_enabled": True,
        "is_plan_mode": True,
        "subagent_enabled": False,
        "reasoning_effort": "medium",
    },
    "ultra": {
        "thinking_enabled": True,
        "is_plan_mode": True,
        "subagent_enabled": True,
        "reasoning_effort": "high",
    },
}
#: values only the server sets; a client's copy is dropped at the boundary (refused when the
#: server has identities: see the gateway's run routes)
OWNER_KEYS = frozenset(
    {
        "user_id",
        "owner_id",
        "langgraph_auth_user",
        "langgraph_auth_user_id",
        "langgraph_auth_permissions",
    }
)
SERVER_OWNED = frozenset({"thread_id", "run_id", "checkpoint_ns", "checkpoint_map"}) | OWNER_KEYS
_SECRET_MARKERS = ("api_key", "apikey", "token", "secret", "password", "authorization")


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    assistant_id: str
    input: Any = None
    command: Mapping[str, Any] | None = None
    stream_modes: tuple[str, ...] = ("values",)
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    config: Mapping[str, Any] = field(default_factory=dict)
    options: AgentOptions = AgentOptions()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    interrupt_before: list[str] | Literal["*"] | None = None
    interrupt_after: list[str] | Literal["*"] | None = None
    checkpoint: Mapping[str, Any] | None = None
    multitask_strategy: MultitaskStrategy = "enqueue"
    on_disconnect: OnDisconnect = "continue"
    durability: Literal["sync", "async", "exit"] | None = None
    #: a stateless run's temporary thread goes (checkpoints, record, files) before ``end``
    delete_thread_on_completion: bool = False
    #: server-owned: the authenticated caller (``RunContext.user_id``), never a client's claim
    user_id: str | None = None
    #: server-owned: the tools the caller's role may use (None: all of them)
    allowed_tools: tuple[str, ...] | None = None

    def graph_input(self) -> Any:
        if self.command:
            return command_from_json(self.command)
        return self.input

    def kwargs_json(self) -> dict[str, Any]:
        """What the run record keeps of the request (secrets redacted)."""
        return {
            "input": self.input,
            "command": dict(self.command) if self.command else None,
            "config": redact(dict(self.config)),
            "context": redact(_options_json(self.options)),
            "stream_mode": list(self.stream_modes),
            "subgraphs": self.stream_subgraphs,
            "resumable": self.stream_resumable,
            "interrupt_before": self.interrupt_before,
            "interrupt_after": self.interrupt_after,
            "checkpoint": dict(self.checkpoint) if self.checkpoint else None,
            "on_disconnect": self.on_disconnect,
            "durability": self.durability,
        }

    def to_json(self) -> dict[str, Any]:
        """Everything needed to execute the run, unredacted (stored for the worker that
        claims it; never sent to a client)."""
        return {
            "assistant_id": self.assistant_id,
            "input": self.input,
            "command": dict(self.command) if self.command else None,
            "stream_modes": list(self.stream_modes),
            "stream_subgraphs": self.stream_subgraphs,
            "stream_resumable": self.stream_resumable,
            "config": dict(self.config),
            "options": {f.name: getattr(self.options, f.name) for f in fields(AgentOptions)},
            "metadata": dict(self.metadata),
            "interrupt_before": self.interrupt_before,
            "interrupt_after": self.interrupt_after,
            "checkpoint": dict(self.checkpoint) if self.checkpoint else None,
            "multitask_strategy": self.multitask_strategy,
            "on_disconnect": self.on_disconnect,
            "durability": self.durability,
            "delete_thread_on_completion": self.delete_thread_on_completion,
            "user_id": self.user_id,
            "allowed_tools": list(self.allowed_tools) if self.allowed_tools is not None else None,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RunSpec:
        return cls(
            assistant_id=raw["assistant_id"],
            input=raw.get("input"),
            command=raw.get("command"),
            stream_modes=tuple(raw.get("stream_modes") or ("values",)),
            stream_subgraphs=bool(raw.get("stream_subgraphs")),
            stream_resumable=bool(raw.get("stream_resumable")),
            config=raw.get("config") or {},
            options=AgentOptions(**(raw.get("options") or {})),
            metadata=raw.get("metadata") or {},
            interrupt_before=raw.get("interrupt_before"),
            interrupt_after=raw.get("interrupt_after"),
            checkpoint=raw.get("checkpoint"),
            multitask_strategy=raw.get("multitask_strategy", "enqueue"),
            on_disconnect=raw.get("on_disconnect", "continue"),
            durability=raw.get("durability"),
            delete_thread_on_completion=bool(raw.get("delete_thread_on_completion")),
            user_id=raw.get("user_id"),
            allowed_tools=tuple(raw["allowed_tools"])
            if raw.get("allowed_tools") is not None
            else None,
        )


def _options_json(options: AgentOptions) -> dict[str, Any]:
    return {k: getattr(options, k) for k in _OPTION_TYPES}


def redact(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            k: "***" if any(m in str(k).lower() for m in _SECRET_MARKERS) else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def parse_stream_modes(raw: str | list[str] | None) -> tuple[str, ...]:
    modes = [raw] if isinstance(raw, str) else list(raw or ["values"])
    unsupported = [m for m in modes if m not in SUPPORTED_STREAM_MODES]
    if unsupported:
        raise InvalidInput(
            f"unsupported stream_mode {', '.join(unsupported)}; "
            f"supported: {', '.join(SUPPORTED_STREAM_MODES)}",
            field="stream_mode",
        )
    return tuple(dict.fromkeys(modes))


def parse_options(
    config: Mapping[str, Any] | None, context: Mapping[str, Any] | None
) -> AgentOptions:
    """Merge ``config.configurable`` and ``context`` (context wins) into typed options."""
    merged: dict[str, Any] = {}
    configurable = (config or {}).get("configurable") or {}
    if not isinstance(configurable, Mapping):
        raise InvalidInput("config.configurable must be an object", field="config.configurable")
    # ``configurable`` is open (LangGraph passes it through); ``context`` is the graph's
    # context schema, so a key the agent does not read would silently do nothing.
    unknown = sorted(set(context or {}) - set(_OPTION_TYPES) - SERVER_OWNED - {"mode"})
    if unknown:
        known = ", ".join([*_OPTION_TYPES, "mode"])
        raise InvalidInput(
            f"context: unknown key(s) {', '.join(unknown)}; known: {known}", field="context"
        )
    mode = None
    for source in (configurable, context or {}):
        merged.update({k: v for k, v in source.items() if k in _OPTION_TYPES})
        mode = source.get("mode", mode)
    if mode is not None:
        if not isinstance(mode, str) or mode not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)}", field="mode")
        named = {k: v for k, v in merged.items() if v is not None}
        merged = {**MODES[mode], **named}
    for key, value in merged.items():
        expected = _OPTION_TYPES[key]
        if value is not None and (
            not isinstance(value, expected) or (expected is int and isinstance(value, bool))
        ):
            raise InvalidInput(f"{key} must be of type {expected.__name__}", field=key)  # type: ignore[union-attr]
    effort = merged.get("reasoning_effort")
    if effort is not None and effort not in get_args(ReasoningEffort):
        raise InvalidInput(
            f"reasoning_effort must be one of {', '.join(get_args(ReasoningEffort))}",
            field="reasoning_effort",
        )
    n = merged.get("max_concurrent_subagents")
    if n is not None and not 1 <= n <= MAX_CONCURRENT_SUBAGENTS:
        raise InvalidInput(
            f"max_concurrent_subagents must be between 1 and {MAX_CONCURRENT_SUBAGENTS}",
            field="max_concurrent_subagents",
        )
    agent_name = merged.get("agent_name")
    if agent_name not in (None, "lead_agent"):
        raise InvalidInput(
            f"unknown agent_name {agent_name!r}: only 'lead_agent' exists", field="agent_name"
        )
    return AgentOptions(**{k: v for k, v in merged.items() if v is not None})


def command_from_json(raw: Mapping[str, Any]) -> Command[Any]:
    unknown = sorted(set(raw) - {"resume", "update", "goto"})
    if unknown:
        raise InvalidInput(f"unknown command field(s): {', '.join(unknown)}", field="command")
    goto: Any = raw.get("goto")
    if goto is not None:
        goto = [_goto(g) for g in goto] if isinstance(goto, list) else _goto(goto)
    update = raw.get("update")
    if isinstance(update, list):
        update = [tuple(u) for u in update]
    return Command(resume=raw.get("resume"), update=update, goto=goto or ())


def _goto(item: Any) -> str | Send:
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping) and "node" in item:
        return Send(item["node"], item.get("input"))
    raise InvalidInput("command.goto must be a node name or {node, input}", field="command.goto")
