"""The middleware chain's order, declared as data and validated when the chain is built.

Each middleware class states where it sits with a :class:`Placement`: a :class:`Stage` (the
coarse band it belongs to) plus ``after``/``before`` constraints naming the middleware it
depends on. :func:`build_chain` derives the order from those declarations alone; the order
the middleware are passed in does not matter. It refuses declarations that cannot hold:
duplicate or undeclared middleware, constraints naming middleware that are not in the chain,
constraints that contradict the stages, cycles, and a one-member stage with two members.

Why the order matters (``create_agent`` semantics): ``before_agent``/``before_model`` hooks
run in chain order, ``after_model``/``after_agent`` hooks in reverse order, and
``wrap_model_call``/``wrap_tool_call`` wrappers nest with the first one outermost.

Like the tools, the middleware implement the async hooks only: drive the graph with
``ainvoke``/``astream``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, ClassVar

from langchain.agents.middleware import AgentMiddleware

from fawn.agent.context import RunContext
from fawn.agent.errors import AgentError
from fawn.agent.state import ThreadState


class Stage(IntEnum):
    """Coarse bands of the chain, outermost first."""

    #: Which model serves the call: wraps every other model-call wrapper.
    OUTERMOST = 0
    #: The user's turn as it enters the thread.
    INPUT = 10
    #: Thread resources: paths, sandbox, uploads.
    RESOURCES = 20
    #: Invariants of the message history before a model call.
    HISTORY = 30
    #: Error boundaries around model and tool calls.
    GUARDS = 40
    #: Keeping the conversation inside the context window.
    CONTEXT = 50
    #: Thread metadata derived from the conversation.
    BOOKKEEPING = 60
    #: Which tools this run may see and call.
    CAPABILITIES = 70
    #: Control over what a model turn is allowed to do next.
    CONTROL = 80
    #: The very end of the chain (its ``after_model`` runs first).
    LAST = 90


#: Stages that hold at most one middleware: "outermost" and "last" are positions, not bands.
SINGLE_MEMBER_STAGES: frozenset[Stage] = frozenset({Stage.OUTERMOST, Stage.LAST})


@dataclass(frozen=True, kw_only=True)
class Placement:
    """Who a middleware is (``name``, also its graph node prefix) and where it sits."""

    name: str
    stage: Stage
    after: frozenset[str] = field(default_factory=frozenset)
    before: frozenset[str] = field(default_factory=frozenset)


class ChainMiddleware(AgentMiddleware[ThreadState, RunContext]):
    """A middleware of the lead agent's chain: it declares its :class:`Placement`."""

    placement: ClassVar[Placement]

    @property
    def name(self) -> str:
        return self.placement.name


class ChainError(AgentError):
    """The middleware declarations do not describe a valid chain."""

    code = "invalid_middleware_chain"


class UndeclaredPlacement(ChainError):
    code = "undeclared_placement"


class DuplicateMiddleware(ChainError):
    code = "duplicate_middleware"


class MissingDependency(ChainError):
    code = "missing_dependency"


class ConstraintViolation(ChainError):
    code = "constraint_violation"


class OrderCycle(ChainError):
    code = "order_cycle"


def placement_of(middleware: AgentMiddleware[Any, Any]) -> Placement:
    placement = getattr(type(middleware), "placement", None)
    if not isinstance(placement, Placement):
        raise UndeclaredPlacement(
            f"{type(middleware).__name__} declares no placement; give it a class attribute "
            "`placement = Placement(name=..., stage=...)`"
        )
    return placement


def build_chain(middlewares: Iterable[ChainMiddleware]) -> list[ChainMiddleware]:
    """Order ``middlewares`` by their declared placements; raise `ChainError` if invalid."""
    by_name: dict[str, ChainMiddleware] = {}
    for middleware in middlewares:
        name = placement_of(middleware).name
        if name in by_name:
            raise DuplicateMiddleware(f"two middleware are named {name!r}")
        by_name[name] = middleware
    placements = {name: placement_of(m) for name, m in by_name.items()}
    _check_single_member_stages(placements.values())
    edges = _edges(placements)
    order = _topological(placements, edges)
    return [by_name[name] for name in order]


def _check_single_member_stages(placements: Iterable[Placement]) -> None:
    for stage in SINGLE_MEMBER_STAGES:
        members = sorted(p.name for p in placements if p.stage is stage)
        if len(members) > 1:
            raise ConstraintViolation(
                f"stage {stage.name} holds one middleware, but {members} all claim it"
            )


def _edges(placements: dict[str, Placement]) -> dict[str, set[str]]:
    """``first -> {seconds}`` from every declared constraint, each checked against stages."""
    edges: dict[str, set[str]] = {name: set() for name in placements}
    for name, placement in placements.items():
        pairs = [(dep, name, "after") for dep in placement.after]
        pairs += [(name, dep, "before") for dep in placement.before]
        for first, second, relation in pairs:
            other = second if first == name else first
            if other not in placements:
                raise MissingDependency(
                    f"{name!r} declares {relation} {other!r}, which is not in the chain "
                    f"(chain: {sorted(placements)})"
                )
            if placements[first].stage > placements[second].stage:
                raise ConstraintViolation(
                    f"{name!r} declares {relation} {other!r}, but {first!r} is in stage "
                    f"{placements[first].stage.name}, after {second!r}'s stage "
                    f"{placements[second].stage.name}"
                )
            edges[first].add(second)
    return edges


def _topological(placements: dict[str, Placement], edges: dict[str, set[str]]) -> list[str]:
    """Kahn's algorithm; ties go to the earlier stage, then the name (deterministic)."""
    indegree = dict.fromkeys(placements, 0)
    for seconds in edges.values():
        for second in seconds:
            indegree[second] += 1
    ready = [(placements[n].stage, n) for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(name)
        for second in edges[name]:
            indegree[second] -= 1
            if indegree[second] == 0:
                heapq.heappush(ready, (placements[second].stage, second))
    if len(order) < len(placements):
        cycle = _find_cycle({n for n, d in indegree.items() if d > 0}, edges)
        raise OrderCycle(f"the after/before constraints form a cycle: {' -> '.join(cycle)}")
    return order


def _find_cycle(stuck: set[str], edges: dict[str, set[str]]) -> list[str]:
    """A cycle among ``stuck`` (every one of them has an unprocessed predecessor in it)."""
    predecessors = {n: sorted(m for m in stuck if n in edges[m]) for n in stuck}
    path: list[str] = []
    node = min(stuck)
    while node not in path:
        path.append(node)
        node = predecessors[node][0]
    cycle = path[path.index(node) :]
    cycle.reverse()
    start = cycle.index(min(cycle))  # report it from its first name, deterministically
    cycle = cycle[start:] + cycle[:start]
    return [*cycle, cycle[0]]


def chain_names(chain: Sequence[AgentMiddleware[Any, Any]]) -> list[str]:
    """The names of ``chain`` in order (what the order test pins)."""
    return [m.name for m in chain]
