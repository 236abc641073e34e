"""Long histories (summarization, off by default) and per-run model options."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.agent.middleware.harness import make_harness, model_entry

LONG = "word " * 1500  # about 1,900 tokens by LangChain's approximate count


async def test_summarization_is_off_by_default(tmp_path: Path) -> None:
    h = make_harness(tmp_path, ["Noted.", "Still here."])

    await h.run(LONG)
    values = await h.run("next")

    assert [m.type for m in values["messages"]] == ["human", "ai", "human", "ai"]
    assert h.recorder.side_calls == []


async def test_older_messages_are_summarized_past_the_trigger(tmp_path: Path) -> None:
    h = make_harness(
        tmp_path,
        ["Noted.", "Still here."],
        models=[model_entry("summarizer", ["The user sent a long list of words."])],
        summarization={
            "enabled": True,
            "model_name": "summarizer",
            "trigger_tokens": 1000,
            "keep_messages": 2,
        },
    )

    await h.run(LONG)
    values = await h.run("next")

    assert [(m.type, m.text) for m in values["messages"]] == [
        (
            "human",
            "Here is a summary of the conversation to date:\n\nThe user sent a long list of words.",
        ),
        ("ai", "Noted."),
        ("human", "next"),
        ("ai", "Still here."),
    ]
    assert len(h.recorder.side_calls) == 1


async def test_unsupported_model_options_are_logged_with_the_run_id(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = make_harness(tmp_path, ["ok"])

    with caplog.at_level(logging.WARNING, logger="fawn.agent.middleware.model_selection"):
        await h.run("hi", thinking_enabled=True, reasoning_effort="high")

    assert [r.getMessage() for r in caplog.records] == [
        "run run-0: model 'main' does not support thinking; ignored",
        "run run-0: model 'main' does not support reasoning_effort; ignored",
    ]
