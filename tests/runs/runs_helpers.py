"""Shared helpers for the run tests: matchers for dynamic values, expected message and state
shapes, scripted turns, and stream collection (SDK and raw SSE)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from langgraph_sdk.client import LangGraphClient

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ISO_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")


class Match:
    """Equal to any value the predicate accepts; ``repr`` names what it stands for."""

    def __init__(self, predicate: Callable[[Any], bool], description: str) -> None:
        self._predicate = predicate
        self._description = description

    def __eq__(self, other: object) -> bool:
        return bool(self._predicate(other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return self._description


def pattern(regex: str | re.Pattern[str], description: str | None = None) -> Match:
    compiled = re.compile(regex) if isinstance(regex, str) else regex
    return Match(
        lambda v: isinstance(v, str) and compiled.fullmatch(v) is not None,
        description or f"<{compiled.pattern}>",
    )


def instance(*types: type) -> Match:
    return Match(
        lambda v: isinstance(v, types) and not (bool not in types and isinstance(v, bool)),
        f"<{'|'.join(t.__name__ for t in types)}>",
    )


def containing(text: str) -> Match:
    return Match(lambda v: isinstance(v, str) and text in v, f"<str containing {text!r}>")


def superset(expected: dict[str, Any]) -> Match:
    """A dict holding at least these items (for LangChain's open-ended callback metadata)."""
    return Match(
        lambda v: isinstance(v, dict) and all(k in v and v[k] == x for k, x in expected.items()),
        f"<dict ⊇ {expected!r}>",
    )


ANY_UUID = pattern(UUID_RE, "<uuid>")
ANY_ISO = pattern(ISO_RE, "<iso-8601 +00:00>")
ANY_INT = instance(int)
ANY_STR = instance(str)
AI_ID = pattern(r"lc_run--[0-9a-f-]+", "<ai message id>")
USAGE = {
    "input_tokens": ANY_INT,
    "output_tokens": ANY_INT,
    "total_tokens": ANY_INT,
    "input_token_details": {},
    "output_token_details": {},
}


def user(content: str) -> dict[str, Any]:
    """A run input holding one user message."""
    return {"messages": [{"role": "user", "content": content}]}


def human(content: str, msg_id: Any = ANY_UUID) -> dict[str, Any]:
    return {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "human",
        "name": None,
        "id": msg_id,
    }


def ai(content: str, msg_id: Any = AI_ID) -> dict[str, Any]:
    """A finished AI message as it is stored in state (streamed from the stub)."""
    return {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {
            "finish_reason": "stop",
            "model_name": "stub-model",
            "model_provider": "openai",
        },
        "type": "ai",
        "name": "lead_agent",
        "id": msg_id,
        "tool_calls": [],
        "invalid_tool_calls": [],
        "usage_metadata": USAGE,
    }


TITLE = "Scripted Title"


def script(stub: Any, key: str, *turns: dict[str, Any]) -> None:
    """Register the conversation's turns, with a fixed answer to the title middleware."""
    stub.add_script(key, list(turns), title=TITLE)


Step = tuple[str, Any]


@dataclass(frozen=True)
class Lead:
    """What the lead agent's middleware chain writes around the model in a plain exchange (no
    tool calls), so tests can state whole expected states and event sequences. The chain is
    pinned here only: when it changes, this class changes (``tests/agent`` pins the order)."""

    data_dir: Path
    tid: str

    @classmethod
    def of(cls, server: Any, tid: str) -> Lead:
        return cls(Path(server.data_dir).resolve(), tid)

    def thread_data(self) -> dict[str, str]:
        """Virtual paths: no host path reaches a client."""
        base = "/mnt/user-data"
        return {f"{name}_path": f"{base}/{name}" for name in ("workspace", "uploads", "outputs")}

    def before_agent(self) -> list[Step]:
        return [
            ("model_selection.before_agent", None),
            ("input_sanitization.before_agent", None),
            ("sandbox.before_agent", {"sandbox": {"sandbox_id": f"local:{self.tid}"}}),
            ("thread_data.before_agent", {"thread_data": self.thread_data()}),
            ("uploads.before_agent", {"uploaded_files": []}),
        ]

    @staticmethod
    def before_model() -> list[Step]:
        return [
            ("clarification_pause.before_model", None),
            ("dangling_tool_call_repair.before_model", None),
            ("summarization.before_model", None),
        ]

    @staticmethod
    def after_model() -> list[Step]:
        return [
            ("clarification.after_model", None),
            ("loop_detection.after_model", None),
            ("subagent_limit.after_model", None),
        ]

    def steps(self, reply: Any, title: str | None = TITLE) -> list[Step]:
        """Every node of one exchange in execution order, with the update it returns."""
        return [
            *self.before_agent(),
            *self.before_model(),
            ("model", {"messages": [reply]}),
            *self.after_model(),
            ("title.after_agent", {"title": title} if title else None),
        ]

    def state(
        self, *messages: Any, title: str | None = None, prepared: bool = True
    ) -> dict[str, Any]:
        """The whole state values holding ``messages`` (``prepared``: once the before-agent
        hooks ran; ``title``: once the title middleware named the thread)."""
        values: dict[str, Any] = {"messages": list(messages), "artifacts": [], "viewed_images": {}}
        if prepared:
            values.update(
                sandbox={"sandbox_id": f"local:{self.tid}"},
                thread_data=self.thread_data(),
                uploaded_files=[],
            )
        if title:
            values["title"] = title
        return values


def apply(values: dict[str, Any], update: Any) -> dict[str, Any]:
    """A node's update applied to state values (messages append, other channels replace)."""
    if not update:
        return values
    merged = dict(values)
    for channel, value in update.items():
        merged[channel] = [*values.get("messages", []), *value] if channel == "messages" else value
    return merged


@dataclass(frozen=True)
class Expected:
    """The expected events of one exchange on a fresh thread, derived from the lead agent's
    steps (``Lead.steps``): each node runs in its own superstep."""

    lead: Lead
    run_id: str
    prompt: str
    reply: dict[str, Any]

    @property
    def steps(self) -> list[tuple[str, Any]]:
        return self.lead.steps(self.reply)

    @property
    def start(self) -> dict[str, Any]:
        return self.lead.state(human(self.prompt), prepared=False)

    def states(self) -> list[dict[str, Any]]:
        """State before each step, then the final state."""
        states = [self.start]
        for _, update in self.steps:
            states.append(apply(states[-1], update))
        return states

    def values(self, until: str | None = None) -> list[tuple[str, Any]]:
        """``values`` events; ``until``: only those before that node runs."""
        states = self.states()
        steps = self.steps[: self.index(until)] if until else self.steps
        changed = [states[i + 1] for i, (_, update) in enumerate(steps) if update]
        return [("values", v) for v in [self.start, *changed]]

    def updates(self, until: str | None = None) -> list[tuple[str, Any]]:
        """``updates`` events; ``until``: only those of the nodes before it."""
        steps = self.steps[: self.index(until)] if until else self.steps
        return [("updates", {node: update}) for node, update in steps]

    def index(self, node: str) -> int:
        return [name for name, _ in self.steps].index(node)

    def task_start(self, index: int) -> dict[str, Any]:
        node = self.steps[index][0]
        return {
            "id": ANY_UUID,
            "name": node,
            "input": self.states()[index],
            "triggers": [f"branch:to:{node}"],
            "metadata": {
                "ls_integration": "langchain_create_agent",
                "lc_agent_name": "lead_agent",
                "run_id": self.run_id,
            },
        }

    def task_result(self, index: int) -> dict[str, Any]:
        node, update = self.steps[index]
        return {
            "id": ANY_UUID,
            "name": node,
            "error": None,
            "result": update or {},
            "interrupts": [],
        }

    def tasks(self) -> list[tuple[str, Any]]:
        return [
            ("tasks", event)
            for i in range(len(self.steps))
            for event in (self.task_start(i), self.task_result(i))
        ]

    def checkpoint(self, step: int) -> dict[str, Any]:
        """The checkpoint written at the end of superstep ``step`` (-1: the input)."""
        config = {
            "configurable": {
                "checkpoint_ns": "",
                "thread_id": self.lead.tid,
                "run_id": self.run_id,
                "checkpoint_id": ANY_UUID,
            }
        }
        if step < 0:
            values, nxt = self.lead.state(prepared=False), ["__start__"]
        else:
            values = self.states()[step]
            nxt = [self.steps[step][0]] if step < len(self.steps) else []
        return {
            "config": config,
            "parent_config": config if step >= 0 else None,
            "values": values,
            "metadata": {"source": "input" if step < 0 else "loop", "step": step, "parents": {}},
            "next": nxt,
            "tasks": [{"id": ANY_UUID, "name": n, "interrupts": [], "state": None} for n in nxt],
        }

    def checkpoints(self) -> list[tuple[str, Any]]:
        return [("checkpoints", self.checkpoint(step)) for step in range(-1, len(self.steps) + 1)]

    def debug(self) -> list[tuple[str, Any]]:
        def event(step: int, kind: str, payload: Any) -> tuple[str, Any]:
            return ("debug", {"step": step, "timestamp": ANY_ISO, "type": kind, "payload": payload})

        events = [
            event(-1, "checkpoint", self.checkpoint(-1)),
            event(0, "checkpoint", self.checkpoint(0)),
        ]
        for i in range(len(self.steps)):
            events += [
                event(i + 1, "task", self.task_start(i)),
                event(i + 1, "task_result", self.task_result(i)),
                event(i + 1, "checkpoint", self.checkpoint(i + 1)),
            ]
        return events

    @property
    def model_step(self) -> int:
        return self.index("model") + 1


def slow_turn(words: int = 30, chunk_delay: float = 0.05) -> dict[str, Any]:
    """A turn that streams ``words`` chunks, ``chunk_delay`` apart."""
    return {"content": slow_text(words), "chunk_delay": chunk_delay}


def slow_text(words: int = 30) -> str:
    return " ".join(f"w{i}" for i in range(words))


@dataclass(frozen=True)
class Event:
    event: str
    data: Any
    id: str | None = None


async def collect(parts: AsyncIterator[Any]) -> list[Event]:
    return [Event(p.event, p.data, p.id) async for p in parts]


def names(events: list[Event]) -> list[str]:
    return [e.event for e in events]


def pairs(events: list[Event]) -> list[tuple[str, Any]]:
    return [(e.event, e.data) for e in events]


def metadata_event(run_id: str, thread_id: str) -> tuple[str, Any]:
    return ("metadata", {"run_id": run_id, "thread_id": thread_id, "attempt": 1})


def end_event(run_id: str, status: str = "success") -> tuple[str, Any]:
    return ("end", {"run_id": run_id, "status": status})


def assert_ids_increasing(events: list[Event]) -> None:
    ids = [int(e.id) for e in events if e.id is not None]
    assert ids == sorted(set(ids)), ids
    assert ids == list(range(ids[0], ids[0] + len(ids))), ids


async def new_thread(client: LangGraphClient) -> str:
    thread = await client.threads.create()
    return str(thread["thread_id"])


async def wait_status(
    client: LangGraphClient, thread_id: str, run_id: str, statuses: tuple[str, ...]
) -> dict[str, Any]:
    """Poll the run (a short, bounded loop) until its status is one of ``statuses``."""
    for _ in range(600):
        run = await client.runs.get(thread_id, run_id)
        if run["status"] in statuses:
            return dict(run)
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached {statuses}: {run['status']}")


async def wait_streaming(client: LangGraphClient, thread_id: str, run_id: str) -> None:
    """Return once the run's model has started streaming tokens (its modes carry messages)."""
    async for part in client.runs.join_stream(thread_id, run_id):
        if part.event.startswith("messages"):
            return
    raise AssertionError(f"run {run_id} ended before streaming a message")


# -- raw SSE -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One SSE block as written on the wire: fields in order, or a comment."""

    lines: tuple[str, ...]

    @property
    def comment(self) -> bool:
        return all(line.startswith(":") for line in self.lines)

    def field(self, name: str) -> str | None:
        for line in self.lines:
            key, _, value = line.partition(": ")
            if key == name:
                return value
        return None

    @property
    def event(self) -> str | None:
        return self.field("event")

    @property
    def data(self) -> Any:
        raw = self.field("data")
        return None if raw is None else orjson.loads(raw)


async def sse_frames(response: httpx.Response) -> AsyncIterator[Frame]:
    buffer = ""
    async for chunk in response.aiter_text():
        buffer += chunk
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            yield Frame(tuple(block.split("\n")))


def ai_invoked(content: str) -> dict[str, Any]:
    """A finished AI message from a non-streaming model call (no ``messages`` mode asked)."""
    return {
        "content": content,
        "additional_kwargs": {"refusal": None},
        "response_metadata": {
            "token_usage": {
                "completion_tokens": ANY_INT,
                "prompt_tokens": ANY_INT,
                "total_tokens": ANY_INT,
                "completion_tokens_details": None,
                "prompt_tokens_details": None,
            },
            "model_provider": "openai",
            "model_name": "stub-model",
            "system_fingerprint": None,
            "id": pattern(r"chatcmpl-[0-9a-f]+", "<completion id>"),
            "finish_reason": "stop",
            "logprobs": None,
        },
        "type": "ai",
        "name": "lead_agent",
        "id": pattern(r"lc_run--[0-9a-f-]+-0", "<ai message id>"),
        "tool_calls": [],
        "invalid_tool_calls": [],
        "usage_metadata": USAGE,
    }
