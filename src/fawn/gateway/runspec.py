"""HTTP run bodies → RunSpec, refusing options we do not implement."""

from __future__ import annotations

from typing import Any

from fawn.gateway.routers.assistants import resolve_assistant
from fawn.gateway.schemas import LEAD_AGENT_ID, RunCreate
from fawn.runs.errors import InvalidInput
from fawn.runs.spec import (
    SERVER_OWNED,
    RunSpec,
    command_from_json,
    parse_options,
    parse_stream_modes,
)


def build_spec(body: RunCreate, *, stateless: bool) -> RunSpec:
    if resolve_assistant(body.assistant_id) is None:
        raise InvalidInput(
            f"assistant {body.assistant_id!r} not found; available: lead_agent ({LEAD_AGENT_ID})",
            field="assistant_id",
        )
    if body.input is not None and body.command is not None:
        raise InvalidInput("give either input or command, not both", field="command")
    if body.command is not None:
        command_from_json(body.command)
    if stateless and (body.checkpoint or body.checkpoint_id):
        raise InvalidInput("stateless runs cannot start from a checkpoint", field="checkpoint")
    if not stateless and body.on_completion is not None:
        raise InvalidInput(
            "on_completion applies to stateless runs only (POST /runs...)", field="on_completion"
        )
    config: dict[str, Any] = dict(body.config or {})
    if not isinstance(config.get("configurable", {}), dict | None):
        raise InvalidInput("config.configurable must be an object", field="config.configurable")
    configurable = {
        k: v for k, v in (config.get("configurable") or {}).items() if k not in SERVER_OWNED
    }
    checkpoint: dict[str, Any] | None = None
    if body.checkpoint is not None:
        checkpoint = body.checkpoint.model_dump(exclude_none=True)
        checkpoint.pop("thread_id", None)
    elif body.checkpoint_id or configurable.get("checkpoint_id"):
        given = body.checkpoint_id or configurable["checkpoint_id"]
        if not isinstance(given, str):
            raise InvalidInput(
                "config.configurable.checkpoint_id must be a string (a checkpoint's id)",
                field="config.configurable.checkpoint_id",
            )
        checkpoint = {"checkpoint_id": given}
    configurable.pop("checkpoint_id", None)
    config["configurable"] = configurable
    durability = body.durability
    if durability is None and body.checkpoint_during is not None:
        durability = "async" if body.checkpoint_during else "exit"
    return RunSpec(
        assistant_id=LEAD_AGENT_ID,
        input=body.input,
        command=body.command,
        stream_modes=parse_stream_modes(body.stream_mode),
        stream_subgraphs=body.stream_subgraphs,
        stream_resumable=body.stream_resumable,
        config=config,
        options=parse_options(_json_ints(config), _json_ints(body.context)),
        metadata=dict(body.metadata or {}),
        interrupt_before=body.interrupt_before,
        interrupt_after=body.interrupt_after,
        checkpoint=checkpoint,
        multitask_strategy=body.multitask_strategy,
        on_disconnect=body.on_disconnect,
        durability=durability,
        delete_thread_on_completion=stateless and body.on_completion != "keep",
    )


def _json_ints(options: dict[str, Any] | None) -> dict[str, Any] | None:
    """Integer options as JSON Schema reads them: ``4.0`` is the integer 4."""
    if options is None:
        return None
    normalized = dict(options)
    if isinstance(normalized.get("configurable"), dict):
        normalized["configurable"] = _json_ints(normalized["configurable"])
    value = normalized.get("max_concurrent_subagents")
    if isinstance(value, float) and value.is_integer():
        normalized["max_concurrent_subagents"] = int(value)
    return normalized
