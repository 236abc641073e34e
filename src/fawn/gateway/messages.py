"""The lead agent's run input on the wire: ``{"messages": [...], ...}``, checked at admission.

A message is what LangChain's ``convert_to_messages`` turns into a message, narrowed to one
shape that a JSON Schema can state (so the OpenAPI document and the server agree): an object
with ``role`` (or ``type``) and ``content`` (text or a list of content blocks), a string (a
human message) or a ``[role, content]`` pair. ``messages: 5``, ``role: "bogus"`` or an object
as ``content`` used to be accepted, and the run then failed inside the graph; now the request
is a 422 naming ``input.messages[i]`` and no run exists.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from langchain_core.messages import convert_to_messages
from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
    with_config,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict

MessageRole = Literal[
    "human", "user", "ai", "assistant", "system", "developer", "tool", "function", "remove"
]
ROLES: tuple[str, ...] = get_args(MessageRole)
#: Roles a ``[role, content]`` pair can have (the others need more than content).
PairRole = Literal["human", "user", "ai", "assistant", "system", "developer"]
PAIR_ROLES: tuple[str, ...] = get_args(PairRole)

#: Text, or a list of content blocks (text parts and ``{"type": ...}`` blocks).
Blocks = str | list[str | dict[str, Any]]
#: An object's ``content``; null reads as empty text.
Content = Blocks | None

#: What each role needs besides ``content`` (LangChain refuses the message without it).
_REQUIRED_BY_ROLE = {"tool": "tool_call_id", "remove": "id", "function": "name"}


def _role_rules() -> list[JsonValue]:
    """JSON Schema for the role-dependent rules of :meth:`InputMessage._role_needs`."""
    rules: list[JsonValue] = []
    for role, field in _REQUIRED_BY_ROLE.items():
        exclusions: tuple[tuple[str, dict[str, JsonValue]], ...] = (
            ("role", {}),
            ("type", {"not": {"required": ["role"]}}),
        )
        for key, extra in exclusions:
            condition: dict[str, JsonValue] = {
                "required": [key],
                "properties": {key: {"const": role}},
                **extra,
            }
            rules.append({"if": condition, "then": {"required": [field]}})
    return rules


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any]
    id: str | None
    type: Literal["tool_call"] = "tool_call"


class InputMessage(BaseModel):
    """One message as an object; keys not listed travel as ``additional_kwargs``."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "anyOf": [
                {"required": [key], "properties": {key: {"type": "string"}}}
                for key in ("role", "type")
            ],
            "allOf": _role_rules(),
        },
    )

    role: MessageRole | None = None
    type: MessageRole | None = None
    content: Content
    id: str | None = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[ToolCall] | None = None
    additional_kwargs: dict[str, Any] | None = None
    response_metadata: dict[str, Any] | None = None
    status: Literal["success", "error"] | None = None

    @model_validator(mode="after")
    def _role_needs(self) -> InputMessage:
        role = self.role or self.type
        if role is None:
            raise ValueError("a message needs a role (or type)")
        needed = _REQUIRED_BY_ROLE.get(role)
        if needed is not None and getattr(self, needed) is None:
            raise ValueError(f"a {role} message needs {needed}")
        return self


_SHAPES = (
    "a message is an object with role (or type) and content, a string, or a [role, content] pair"
)


def _check_message(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """``value`` unchanged if it is a message, else one error saying what is wrong with it."""
    if isinstance(value, dict):
        try:
            InputMessage.model_validate(value)
        except ValidationError as exc:
            raise _first_problem(exc) from None
    elif isinstance(value, list):
        if len(value) != 2 or value[0] not in PAIR_ROLES or not _is_content(value[1]):
            raise PydanticCustomError(
                "message",
                "a [role, content] pair has a role among {roles} and content that is text "
                "or a list of content blocks",
                {"roles": ", ".join(PAIR_ROLES)},
            )
    elif not isinstance(value, str):
        raise PydanticCustomError("message", _SHAPES)
    try:
        convert_to_messages([value])
    # LangChain's last word (it reports a bad message with any of these)
    except (NotImplementedError, ValueError, TypeError, KeyError) as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise PydanticCustomError("message", "{why}", {"why": first}) from None
    return value


def _is_content(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str | dict) for v in value)
    )


def _first_problem(exc: ValidationError) -> PydanticCustomError:
    error = exc.errors()[0]
    loc = error["loc"]
    if loc[:1] == ("content",) and error["type"] != "missing":
        # one error per member of the union: say it once
        loc, message = ("content",), "content is text or a list of content blocks"
    else:
        message = error["msg"].removeprefix("Value error, ")
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
    text = f"{where.lstrip('.')}: {message}" if where else message
    return PydanticCustomError("message", "{problem}", {"problem": text})


#: One entry of ``input.messages``. The union is what the OpenAPI document states; the wrap
#: validator checks it (one clear error per message) and keeps the JSON as sent.
Message = Annotated[InputMessage | str | tuple[MessageRole, Blocks], WrapValidator(_check_message)]


@with_config(ConfigDict(extra="allow"))
class LeadAgentInput(TypedDict, total=False):
    """The lead agent's input: ``messages`` to append, other state channels as they are."""

    messages: list[Message]
