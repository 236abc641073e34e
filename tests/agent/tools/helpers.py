"""Driving the real tools: directly (a tool call with a ToolRuntime), or in a real agent."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain.tools import ToolRuntime
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphBubbleUp
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from fawn.agent.context import RunContext
from fawn.agent.state import ThreadState
from fawn.agent.tools import build_tools
from fawn.sandbox import LocalSandboxProvider
from fawn.testing.fake_model import ScriptedChatModel

_ids = itertools.count(1)


@dataclass
class ToolBench:
    """The real tools over a real provider, called the way a ToolNode calls them."""

    provider: LocalSandboxProvider
    data_dir: Path
    tools: dict[str, BaseTool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tools = {tool.name: tool for tool in build_tools(self.provider)}

    def runtime(self, thread_id: str, call_id: str) -> ToolRuntime[RunContext, Any]:
        return ToolRuntime(
            state={},
            context=RunContext(thread_id=thread_id, run_id="run-1"),
            config={},
            stream_writer=lambda _chunk: None,
            tool_call_id=call_id,
            store=None,
        )

    async def call(self, name: str, /, *, thread: str = "thread-a", **args: Any) -> Any:
        call_id = f"call-{next(_ids)}"
        runtime = self.runtime(thread, call_id)
        return await self.tools[name].ainvoke(
            {"type": "tool_call", "id": call_id, "name": name, "args": {**args, "runtime": runtime}}
        )

    async def text(self, name: str, /, *, thread: str = "thread-a", **args: Any) -> str:
        """The content of the tool's ``ToolMessage``, checked to name no host path."""
        result = await self.call(name, thread=thread, **args)
        assert isinstance(result, ToolMessage), result
        assert isinstance(result.content, str)
        self.assert_no_host_path(result.content)
        return result.content

    async def error(self, name: str, /, *, thread: str = "thread-a", **args: Any) -> Exception:
        """The exception the tool raises, checked to name no host path."""
        try:
            result = await self.call(name, thread=thread, **args)
        except Exception as error:
            self.assert_no_host_path(str(error))
            return error
        raise AssertionError(f"{name} did not fail: {result!r}")

    def assert_no_host_path(self, text: str) -> None:
        assert str(self.data_dir) not in text, text

    def workspace(self, thread: str = "thread-a") -> Path:
        return self.data_dir / "threads" / thread / "user-data" / "workspace"

    def outputs(self, thread: str = "thread-a") -> Path:
        return self.data_dir / "threads" / thread / "user-data" / "outputs"


class ToolErrorsAsMessages(AgentMiddleware[Any, Any, Any]):
    """A stand-in for the product's tool-error middleware: an exception becomes an error
    ``ToolMessage``; interrupts (and cancellation, not an ``Exception``) pass through."""

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        try:
            return await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as error:
            return ToolMessage(
                content=f"Error: {error}",
                tool_call_id=request.tool_call["id"],
                name=request.tool_call["name"],
                status="error",
            )


def build_agent(
    provider: LocalSandboxProvider, turns: Sequence[Any]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    return create_agent(
        model=ScriptedChatModel(list(turns)),
        tools=build_tools(provider),
        middleware=[ToolErrorsAsMessages()],
        state_schema=ThreadState,
        context_schema=RunContext,
        checkpointer=InMemorySaver(),
    )


def call(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    """A scripted tool call."""
    spec: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        spec["id"] = call_id
    return spec


def tool_messages(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    return [message for message in messages if isinstance(message, ToolMessage)]
