"""What a ``task`` result says, in text for the model and in fields for a UI.

The text is what the model reads (``Task Succeeded. Result: …``, ``Task failed. Error: …``);
programs read the structured fields in ``ToolMessage.additional_kwargs``, named as DeerFlow's
web app reads them (``subagent_status``, ``subagent_result_brief``,
``subagent_result_sha256``, ``subagent_error``, ``subagent_stop_reason``,
``subagent_model_name``, ``subagent_token_usage``).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, TypedDict

SubagentStatus = Literal["completed", "failed", "cancelled", "timed_out"]
#: The caps a sub-agent result may name (DeerFlow's contract values).
CONTRACT_STOP_REASONS: frozenset[str] = frozenset({"token_capped", "turn_capped", "loop_capped"})
BRIEF_MAX_CHARS = 2000
_CAP_LABELS = {
    "token_capped": "token budget",
    "turn_capped": "turn budget",
    "loop_capped": "repeated tool-call loop",
}


class TokenUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    total_tokens: int


def bounded(text: str, limit: int = BRIEF_MAX_CHARS) -> str:
    """``text`` cut to ``limit`` characters, keeping its head and tail."""
    text = text.strip()
    if len(text) <= limit:
        return text
    marker = "\n...\n"
    head = limit * 2 // 3
    return f"{text[:head]}{marker}{text[-(limit - head - len(marker)) :]}"


def result_text(
    status: SubagentStatus,
    *,
    result: str | None = None,
    error: str | None = None,
    stop_reason: str | None = None,
) -> str:
    """What the lead model reads as the ``task`` result."""
    cap = _CAP_LABELS.get(stop_reason or "")
    capped = f" (capped: {cap})" if cap else ""
    if status == "completed":
        return f"Task Succeeded{capped}. Result: {result or ''}"
    if status == "cancelled":
        return f"Task cancelled by user. Error: {error}" if error else "Task cancelled by user."
    if status == "timed_out":
        return f"Task timed out. Error: {error}" if error else "Task timed out."
    return f"Task failed{capped}. Error: {error}" if error else f"Task failed{capped}."


def result_fields(
    status: SubagentStatus,
    *,
    result: str | None = None,
    error: str | None = None,
    stop_reason: str | None = None,
    model_name: str | None = None,
    usage: TokenUsage | None = None,
) -> dict[str, Any]:
    """The structured fields of a ``task`` result (``ToolMessage.additional_kwargs``)."""
    fields: dict[str, Any] = {"subagent_status": status}
    if status == "completed" and result and result.strip():
        fields["subagent_result_brief"] = bounded(result)
        fields["subagent_result_sha256"] = hashlib.sha256(result.encode("utf-8")).hexdigest()
    if status != "completed" and error and error.strip():
        fields["subagent_error"] = bounded(error)
    if stop_reason in CONTRACT_STOP_REASONS:
        fields["subagent_stop_reason"] = stop_reason
    if model_name:
        fields["subagent_model_name"] = model_name
    if usage is not None:
        fields["subagent_token_usage"] = dict(usage)
    return fields
