"""``write_todos``: the agent's task list in plan mode, kept in ``ThreadState.todos``."""

from __future__ import annotations

from typing import Any, Literal

from langchain.agents.middleware.todo import WRITE_TODOS_TOOL_DESCRIPTION
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command

# pydantic builds the tool's schema from this, and on Python 3.11 it needs this TypedDict.
from typing_extensions import TypedDict

from fawn.agent.state import Todo
from fawn.agent.tools.access import RunToolRuntime, tool_call_id
from fawn.agent.tools.errors import InvalidToolInput
from fawn.agent.tools.names import WRITE_TODOS

TodoStatus = Literal["pending", "in_progress", "completed"]
TODO_STATUSES: tuple[TodoStatus, ...] = ("pending", "in_progress", "completed")


class TodoItem(TypedDict):
    """One task as the model writes it."""

    content: str
    status: TodoStatus


def validated_todos(todos: list[TodoItem]) -> list[Todo]:
    """The list as stored, or an error naming the first bad item."""
    checked: list[Todo] = []
    for index, item in enumerate(todos):
        content = item.get("content")
        status = item.get("status")
        if not isinstance(content, str) or not content.strip():
            raise InvalidToolInput(f"todos[{index}].content is empty; describe the task")
        if status not in TODO_STATUSES:
            raise InvalidToolInput(
                f"todos[{index}].status is {status!r}; use one of {', '.join(TODO_STATUSES)}"
            )
        checked.append({"content": content, "status": status})
    return checked


def _summary(todos: list[Todo]) -> str:
    if not todos:
        return "Cleared the todo list."
    lines = [f"- [{todo['status']}] {todo['content']}" for todo in todos]
    return "Updated the todo list:\n" + "\n".join(lines)


def todos_tool() -> BaseTool:
    @tool(WRITE_TODOS, description=WRITE_TODOS_TOOL_DESCRIPTION)
    async def write_todos(todos: list[TodoItem], runtime: RunToolRuntime) -> Command[Any]:
        """Create and manage a structured task list for your current work session."""
        stored = validated_todos(todos)
        message = ToolMessage(
            _summary(stored), tool_call_id=tool_call_id(runtime), name=WRITE_TODOS
        )
        return Command(update={"todos": stored, "messages": [message]})

    return write_todos
