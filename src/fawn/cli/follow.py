"""Following a run's stream in the terminal: what ``fawn run`` and ``fawn chat`` both print.

The stream is read as the SDK yields it (``values``, ``messages-tuple``, ``updates``,
``custom``). The answer's tokens go to `RunView.text` as they arrive; a tool call is shown
once, when the model's whole message is known (the ``updates`` of the ``model`` node), and its
result when the ``tools`` node reports it. The outcome is what the server's ``end`` event says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from langgraph_sdk.schema import StreamMode

STREAM_MODES: list[StreamMode] = ["values", "messages-tuple", "updates", "custom"]


class RunView(Protocol):
    def text(self, delta: str) -> None: ...
    def tool_call(self, name: str, args: dict[str, Any]) -> None: ...
    def tool_result(self, name: str, status: str, content: str) -> None: ...
    def todos(self, todos: list[dict[str, Any]]) -> None: ...
    def task(self, event: dict[str, Any]) -> None: ...


@dataclass(kw_only=True)
class RunOutcome:
    run_id: str | None = None
    status: str = "success"
    error: str | None = None
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def clarification(self) -> dict[str, Any] | None:
        """The question the agent asked, if the run stopped to ask one."""
        for interrupt in self.interrupts:
            value = interrupt.get("value")
            if isinstance(value, dict):
                return value
        return None


async def follow_run(parts: AsyncIterator[Any], view: RunView) -> RunOutcome:
    """Consume a run's stream, telling ``view`` what happens; the outcome once it is over."""
    outcome = RunOutcome()
    todos: list[dict[str, Any]] = []
    ended = False
    async for part in parts:
        event, data = part.event, part.data
        if event == "metadata" and isinstance(data, dict):
            outcome.run_id = data.get("run_id") or outcome.run_id
        elif event == "messages" and isinstance(data, list) and len(data) == 2:
            _on_chunk(data[0], data[1], view)
        elif event == "updates" and isinstance(data, dict):
            _on_updates(data, view, outcome)
        elif event == "values" and isinstance(data, dict):
            outcome.values = data
            new_todos = data.get("todos") or []
            if new_todos != todos:
                todos = list(new_todos)
                view.todos(todos)
        elif event == "custom" and isinstance(data, dict):
            view.task(data)
        elif event == "error":
            outcome.error = _error_text(data)
        elif event == "end" and isinstance(data, dict):
            outcome.status = str(data.get("status") or outcome.status)
            ended = True
    if not ended:
        outcome.status = (
            "error" if outcome.error else ("interrupted" if outcome.interrupts else "success")
        )
    elif outcome.error and outcome.status == "success":
        outcome.status = "error"
    return outcome


def _on_chunk(chunk: Any, metadata: Any, view: RunView) -> None:
    if not isinstance(chunk, dict) or not isinstance(metadata, dict):
        return
    if metadata.get("langgraph_node") != "model":
        return
    text = content_text(chunk.get("content"))
    if text:
        view.text(text)


def _on_updates(data: dict[str, Any], view: RunView, outcome: RunOutcome) -> None:
    for node, update in data.items():
        if node == "__interrupt__" and isinstance(update, list):
            outcome.interrupts = [i for i in update if isinstance(i, dict)]
            continue
        if not isinstance(update, dict):
            continue
        for message in update.get("messages") or []:
            if not isinstance(message, dict):
                continue
            if message.get("type") == "ai":
                for call in message.get("tool_calls") or []:
                    view.tool_call(str(call.get("name")), dict(call.get("args") or {}))
            elif message.get("type") == "tool":
                view.tool_result(
                    str(message.get("name")),
                    str(message.get("status") or "success"),
                    content_text(message.get("content")),
                )


def content_text(content: Any) -> str:
    """The text of a LangChain message content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part if isinstance(part, str) else str(part.get("text") or "")
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")
        )
    return ""


def _error_text(data: Any) -> str:
    if isinstance(data, dict):
        return str(data.get("message") or data.get("error") or data)
    return str(data)


def describe_call(name: str, args: dict[str, Any], width: int = 100) -> str:
    """One line for a tool call: its name and the argument that says most about it."""
    for key in ("description", "command", "path", "question", "pattern", "filepaths"):
        if key in args:
            value = args[key]
            text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            text = " ".join(text.split())
            if len(text) > width:
                text = text[: width - 1] + "…"
            return f"{name}: {text}"
    return name
