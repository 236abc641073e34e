"""Thread titles: named after the first complete exchange, with a fallback."""

from __future__ import annotations

from pathlib import Path

from tests.agent.middleware.harness import make_harness, model_entry

LS = {"name": "ls", "args": {"description": "look", "path": "/mnt/user-data/workspace"}}


async def test_the_title_comes_from_the_title_model_after_the_first_answer(
    tmp_path: Path,
) -> None:
    h = make_harness(
        tmp_path,
        [{"tool_calls": [LS]}, "The workspace is empty."],
        models=[model_entry("titler", ['Title: "Checking the workspace."\nextra line'])],
        title={"model_name": "titler"},
    )

    first = await h.run("What is in my workspace?")
    second = await h.run("And now?")

    assert first["title"] == second["title"] == "Checking the workspace"
    assert len(h.recorder.side_calls) == 1  # asked once, after the final answer
    prompt = h.recorder.side_calls[0][0].text
    assert "User: What is in my workspace?" in prompt
    assert "Assistant: The workspace is empty." in prompt


async def test_a_failing_title_model_falls_back_to_the_users_text(tmp_path: Path) -> None:
    h = make_harness(
        tmp_path,
        ["Sure."],
        models=[model_entry("titler", [{"error": {"status": 500, "message": "down"}}])],
        title={"model_name": "titler", "max_chars": 16},
    )
    (h.uploads_dir() / "log.txt").write_text("boom")

    values = await h.run("Please   fix the flaky build on main")

    assert values["title"] == "Please fix the f"


async def test_no_title_is_written_when_titles_are_off(tmp_path: Path) -> None:
    h = make_harness(tmp_path, ["Sure."])

    values = await h.run("hello")

    assert values.get("title") is None
    assert h.recorder.side_calls == []
