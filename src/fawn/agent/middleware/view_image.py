"""View image: ``view_image`` for vision models, and the pixels for one model call only.

For a run whose model does not declare ``supports_vision``, the vision tools are not bound
for the model call and refused if called. For a vision model, the images recorded in
``viewed_images`` (paths and metadata only) are read from the sandbox and shown to the model
as a human message appended to *that call's* request; the pixels never enter the state, so
no checkpoint holds base64. After the call ``viewed_images`` is cleared (``{}``) so each
image is shown once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from langchain.agents.middleware import (
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.types import Command

from fawn.agent.context import RunContext
from fawn.agent.errors import AgentError
from fawn.agent.middleware._shared import is_control_flow, run_context
from fawn.agent.middleware._visibility import refusal, without_tools
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.models import ModelFactory
from fawn.agent.state import ThreadState, ViewedImage

log = logging.getLogger(__name__)

ToolResult = ToolMessage | Command[Any]

#: ``(thread_id, virtual_path) -> (base64, mime_type)``; raises if the image cannot be read.
ImageLoader = Callable[[str, str], Awaitable[tuple[str, str]]]

_INTRO = "The images you viewed with view_image (shown for this step only):"


def image_message(images: Mapping[str, tuple[str, str] | Exception]) -> HumanMessage:
    """One human message showing each image (or why it could not be read)."""
    parts: list[str | dict[str, Any]] = [{"type": "text", "text": _INTRO}]
    for path, image in images.items():
        if isinstance(image, Exception):
            parts.append({"type": "text", "text": f"- {path}: could not be read ({image})"})
            continue
        data, mime = image
        parts.append({"type": "text", "text": f"- {path}"})
        parts.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
    return HumanMessage(content=parts)


def _viewed(request: ModelRequest[RunContext]) -> dict[str, ViewedImage]:
    state = cast("ThreadState", request.state)
    return dict(state.get("viewed_images") or {})


class ViewImageMiddleware(ChainMiddleware):
    placement = Placement(
        name="view_image", stage=Stage.CAPABILITIES, after=frozenset({"model_error_handling"})
    )

    def __init__(
        self, *, models: ModelFactory, vision_tools: frozenset[str], load_image: ImageLoader
    ) -> None:
        super().__init__()
        self._models = models
        self._vision_tools = vision_tools
        self._load = load_image

    def _supports_vision(self, context: RunContext) -> bool:
        try:
            return self._models.settings(context.model_name).supports_vision
        except AgentError:  # no such model: the model call itself reports it
            return False

    async def _load_all(self, thread_id: str, viewed: Mapping[str, ViewedImage]) -> HumanMessage:
        loaded: dict[str, tuple[str, str] | Exception] = {}
        for path in viewed:
            try:
                loaded[path] = await self._load(thread_id, path)
            except Exception as exc:
                if is_control_flow(exc):
                    raise
                log.warning("thread %s: cannot show image %s: %s", thread_id, path, exc)
                loaded[path] = exc
        return image_message(loaded)

    def _shown(
        self, request: ModelRequest[RunContext], message: HumanMessage
    ) -> ModelRequest[RunContext]:
        return request.override(messages=[*request.messages, message])

    @staticmethod
    def _cleared(
        response: ModelResponse[Any], viewed: Mapping[str, ViewedImage]
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        if not viewed:
            return response
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"viewed_images": {}})
        )

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        context = run_context(request.runtime)
        viewed = _viewed(request)
        if not self._supports_vision(context):
            hidden = without_tools(request, self._vision_tools)
            return self._cleared(await handler(hidden), viewed)
        if viewed:
            message = await self._load_all(context.thread_id, viewed)
            request = self._shown(request, message)
        return self._cleared(await handler(request), viewed)

    def _refused(self, request: ToolCallRequest) -> ToolMessage | None:
        if request.tool_call["name"] not in self._vision_tools:
            return None
        if self._supports_vision(run_context(request.runtime)):
            return None
        return refusal(request, "the run's model does not accept images")

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        return self._refused(request) or await handler(request)
