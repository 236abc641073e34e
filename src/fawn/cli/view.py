"""Printing a run in a terminal: the answer as it streams, and compact lines for the rest."""

from __future__ import annotations

from typing import Any, TextIO

from fawn.cli.follow import describe_call

_DIM, _RED, _RESET = "\x1b[2m", "\x1b[31m", "\x1b[0m"
_TODO_MARK = {"completed": "[x]", "in_progress": "[>]"}
_TASK_WORDS = {
    "task_started": "started",
    "task_completed": "completed",
    "task_failed": "failed",
    "task_cancelled": "cancelled",
    "task_timed_out": "timed out",
}


class TerminalView:
    """Answer text to ``out``; tool calls, plans and sub-agent progress to ``notes``."""

    def __init__(self, out: TextIO, notes: TextIO, *, color: bool) -> None:
        self.out = out
        self.notes = notes
        self.color = color
        self._mid_line = False
        self.printed_text = False

    def text(self, delta: str) -> None:
        self.out.write(delta)
        self.out.flush()
        self._mid_line = not delta.endswith("\n")
        self.printed_text = True

    def tool_call(self, name: str, args: dict[str, Any]) -> None:
        self.note(f"→ {describe_call(name, args)}")

    def tool_result(self, name: str, status: str, content: str) -> None:
        if status == "error":
            first = content.strip().splitlines()[0] if content.strip() else "failed"
            self.note(f"✗ {name}: {first[:200]}", error=True)

    def todos(self, todos: list[dict[str, Any]]) -> None:
        self.note("plan:")
        for todo in todos:
            mark = _TODO_MARK.get(str(todo.get("status")), "[ ]")
            self.note(f"  {mark} {todo.get('content', '')}")

    def task(self, event: dict[str, Any]) -> None:
        word = _TASK_WORDS.get(str(event.get("type")))
        if word is None:
            return
        what = event.get("description") or event.get("task_id")
        detail = event.get("error") if word in ("failed", "timed out", "cancelled") else None
        self.note(
            f"sub-agent {what}: {word}" + (f" ({detail})" if detail else ""), error=bool(detail)
        )

    def note(self, line: str, *, error: bool = False) -> None:
        self.end_line()
        if self.color:
            line = f"{_RED if error else _DIM}{line}{_RESET}"
        self.notes.write(line + "\n")
        self.notes.flush()

    def end_line(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False
