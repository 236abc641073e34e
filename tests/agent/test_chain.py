"""The middleware chain: its pinned order, and the declarations build_chain refuses."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from fawn.agent.lead import lead_middleware, subagent_middleware
from fawn.agent.middleware.chain import (
    ChainMiddleware,
    ConstraintViolation,
    DuplicateMiddleware,
    MissingDependency,
    OrderCycle,
    Placement,
    Stage,
    UndeclaredPlacement,
    build_chain,
    chain_names,
)
from fawn.agent.models import ModelFactory
from fawn.agent.subagents.types import builtin_types
from fawn.config.settings import AppConfig
from fawn.sandbox.local import LocalSandboxProvider
from tests.agent.middleware.harness import make_harness, model_entry

LEAD_CHAIN = [
    "model_selection",
    "input_sanitization",
    "sandbox",
    "thread_data",
    "uploads",
    "clarification_pause",
    "dangling_tool_call_repair",
    "model_error_handling",
    "tool_error_handling",
    "tool_result_sanitization",
    "tool_output_budget",
    "dynamic_context",
    "summarization",
    "title",
    "read_before_write",
    "subagent_limit",
    "todo_list",
    "tool_policy",
    "view_image",
    "loop_detection",
    "terminal_response",
    "token_budget",
    "finish_reasons",
    "system_message_coalescing",
    "clarification",
]

#: A sub-agent runs the lead's controls without the thread resources, title and
#: clarification, and with its turn limit.
SUBAGENT_CHAIN = [
    "model_selection",
    "input_sanitization",
    "model_error_handling",
    "tool_error_handling",
    "tool_result_sanitization",
    "tool_output_budget",
    "dynamic_context",
    "read_before_write",
    "subagent_limit",
    "todo_list",
    "tool_policy",
    "view_image",
    "loop_detection",
    "terminal_response",
    "token_budget",
    "finish_reasons",
    "system_message_coalescing",
    "turn_limit",
]


def _lead_chain(tmp_path: Path) -> list[ChainMiddleware]:
    config = AppConfig.model_validate(
        {"data_dir": str(tmp_path), "models": [model_entry("main", ["hi"])]}
    )
    return lead_middleware(
        config, ModelFactory(config), LocalSandboxProvider(tmp_path, config.sandbox)
    )


def test_the_lead_chain_order_is_pinned(tmp_path: Path) -> None:
    assert chain_names(_lead_chain(tmp_path)) == LEAD_CHAIN


def test_the_subagent_chain_order_is_pinned(tmp_path: Path) -> None:
    config = AppConfig.model_validate({"data_dir": str(tmp_path)})
    sandbox = LocalSandboxProvider(tmp_path, config.sandbox)
    for kind in builtin_types(config.subagents):
        chain = subagent_middleware(config, ModelFactory(config), sandbox, kind)
        assert chain_names(chain) == SUBAGENT_CHAIN


def test_controls_switched_off_leave_the_chain(tmp_path: Path) -> None:
    config = AppConfig.model_validate(
        {
            "data_dir": str(tmp_path),
            "controls": {"read_before_write": False, "dynamic_context": False},
        }
    )
    chain = lead_middleware(
        config, ModelFactory(config), LocalSandboxProvider(tmp_path, config.sandbox)
    )
    assert chain_names(chain) == [
        n for n in LEAD_CHAIN if n not in {"read_before_write", "dynamic_context"}
    ]


def test_the_order_comes_from_the_declarations_not_the_list(tmp_path: Path) -> None:
    chain = _lead_chain(tmp_path)
    for seed in range(5):
        shuffled = list(chain)
        random.Random(seed).shuffle(shuffled)
        assert chain_names(build_chain(shuffled)) == LEAD_CHAIN


def test_the_compiled_graph_runs_the_hooks_in_chain_order(tmp_path: Path) -> None:
    graph = make_harness(tmp_path, ["hi"]).agent.graph.get_graph()
    nodes = [n for n in graph.nodes if "." in n]
    position = {name: LEAD_CHAIN.index(name) for name in LEAD_CHAIN}

    def hooks(kind: str) -> list[str]:
        return [n.split(".")[0] for n in nodes if n.endswith(f".{kind}")]

    for kind in ("before_agent", "before_model", "after_model", "after_agent"):
        names = hooks(kind)
        assert names == sorted(names, key=position.__getitem__), kind
    assert hooks("before_agent") == [
        "model_selection",
        "input_sanitization",
        "sandbox",
        "thread_data",
        "uploads",
    ]


def _middleware(
    name: str,
    stage: Stage = Stage.CONTROL,
    *,
    after: set[str] | None = None,
    before: set[str] | None = None,
) -> ChainMiddleware:
    placement = Placement(
        name=name,
        stage=stage,
        after=frozenset(after or ()),
        before=frozenset(before or ()),
    )
    cls = type(f"Toy_{name}", (ChainMiddleware,), {"placement": placement})
    instance: ChainMiddleware = cls()
    return instance


def test_constraints_order_within_a_stage_and_ties_go_by_name() -> None:
    chain = build_chain(
        [
            _middleware("c"),
            _middleware("a", after={"b"}),
            _middleware("b"),
            _middleware("z", Stage.INPUT),
        ]
    )
    assert chain_names(chain) == ["z", "b", "a", "c"]


def test_a_cycle_is_refused_and_named() -> None:
    with pytest.raises(OrderCycle, match=re.escape("a -> b -> c -> a")):
        build_chain(
            [
                _middleware("a", before={"b"}),
                _middleware("b", before={"c"}),
                _middleware("c", before={"a"}),
                _middleware("d", after={"a"}),
            ]
        )


def test_a_missing_dependency_is_refused() -> None:
    with pytest.raises(MissingDependency, match="'a' declares after 'ghost'"):
        build_chain([_middleware("a", after={"ghost"})])


def test_a_constraint_against_the_stages_is_refused() -> None:
    with pytest.raises(ConstraintViolation, match="'early' declares after 'late'"):
        build_chain([_middleware("early", Stage.INPUT, after={"late"}), _middleware("late")])


def test_a_single_member_stage_holds_one() -> None:
    with pytest.raises(ConstraintViolation, match="stage LAST holds one middleware"):
        build_chain([_middleware("x", Stage.LAST), _middleware("y", Stage.LAST)])


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(DuplicateMiddleware, match="'a'"):
        build_chain([_middleware("a"), _middleware("a", Stage.INPUT)])


def test_a_middleware_without_placement_is_refused() -> None:
    class Undeclared(ChainMiddleware):
        pass

    with pytest.raises(UndeclaredPlacement, match="Undeclared declares no placement"):
        build_chain([Undeclared()])
