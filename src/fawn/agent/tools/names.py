"""The lead agent's tool names, and the groups the middleware shows or hides per run.

The names and arguments are DeerFlow's, so prompts and skills written for it carry over.
"""

from __future__ import annotations

BASH = "bash"
LS = "ls"
READ_FILE = "read_file"
WRITE_FILE = "write_file"
STR_REPLACE = "str_replace"
GLOB = "glob"
GREP = "grep"
PRESENT_FILES = "present_files"
VIEW_IMAGE = "view_image"
ASK_CLARIFICATION = "ask_clarification"
WRITE_TODOS = "write_todos"
TASK = "task"

#: Tools that work in the thread's sandbox (commands and files).
SANDBOX_TOOLS: frozenset[str] = frozenset(
    {BASH, LS, READ_FILE, WRITE_FILE, STR_REPLACE, GLOB, GREP}
)
#: Offered only when the run is in plan mode (``RunContext.is_plan_mode``).
PLAN_MODE_TOOLS: frozenset[str] = frozenset({WRITE_TODOS})
#: Offered only when the run has ``subagent_enabled``.
SUBAGENT_TOOLS: frozenset[str] = frozenset({TASK})
#: Never given to a sub-agent: no nesting, no questions to the user, no deliverables of its
#: own (the lead presents files).
LEAD_ONLY_TOOLS: frozenset[str] = frozenset({TASK, ASK_CLARIFICATION, PRESENT_FILES})
#: Offered only when the run's model accepts images.
VISION_TOOLS: frozenset[str] = frozenset({VIEW_IMAGE})
