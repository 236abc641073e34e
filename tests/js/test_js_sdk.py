"""The JS SDK sweep: every thread, run and assistant method of ``@langchain/langgraph-sdk``
(pinned in ``tests/js/package-lock.json``) against a live fawn, through ``sweep.mjs``.

``.ci/run`` installs the SDK (``npm ci --prefix tests/js``); run by hand, this test does it
when ``node_modules`` is missing. It skips only when node itself is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.runs.runs_helpers import script, slow_turn
from tests.support.live import LiveServer

HERE = Path(__file__).parent
ASK = {
    "tool_calls": [
        {
            "name": "ask_clarification",
            "args": {"question": "Which colour?", "clarification_type": "missing_info"},
            "id": "call_ask",
        }
    ]
}

#: Every method the sweep calls (a method the SDK gains is added here and in sweep.mjs).
METHODS = [
    "assistants.search",
    "assistants.count",
    "assistants.get",
    "assistants.getGraph",
    "assistants.getSchemas",
    "assistants.getSubgraphs",
    "assistants.getVersions",
    "assistants.create",
    "assistants.update",
    "assistants.delete",
    "assistants.setLatest",
    "threads.create",
    "threads.create(supersteps)",
    "threads.get",
    "threads.update",
    "threads.search",
    "threads.count",
    "runs.wait",
    "runs.stream",
    "runs.stream(events)",
    "runs.create",
    "runs.get",
    "runs.list",
    "runs.join",
    "runs.joinStream",
    "runs.joinStream(lastEventId -1)",
    "runs.createBatch",
    "runs.stream(stateless)",
    "runs.wait(stateless)",
    "runs.cancel(wait, interrupt)",
    "runs.cancel(wait, rollback)",
    "runs.cancel",
    "runs.cancelMany",
    "runs.delete",
    "threads.getState",
    "threads.getState(checkpoint)",
    "threads.getHistory",
    "threads.getHistory(before Config)",
    "threads.updateState",
    "threads.patchState",
    "threads.joinStream",
    "threads.stream",
    "threads.stream(interrupt, respond)",
    "threads.copy",
    "threads.prune",
    "threads.delete",
]


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the JS SDK sweep needs it")
    return node


def _installed() -> None:
    if (HERE / "node_modules" / "@langchain" / "langgraph-sdk").is_dir():
        return
    npm = shutil.which("npm")
    assert npm is not None, "node without npm: install npm to fetch the JS SDK"
    done = subprocess.run(
        [npm, "ci", "--prefix", str(HERE), "--no-audit", "--no-fund"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.timeout(900)
def test_every_js_sdk_method_works(sqlite_server: LiveServer, stub: Any, key: str) -> None:
    node = _node()
    _installed()
    keys = {"plain": f"{key}-plain", "slow": f"{key}-slow", "ask": f"{key}-ask"}
    script(stub, keys["slow"], *[slow_turn(200, 0.05)] * 12)
    script(stub, keys["ask"], ASK, {"content": "Blue it is"})
    done = subprocess.run(
        [node, str(HERE / "sweep.mjs")],
        env={"FAWN_URL": sqlite_server.url, "FAWN_KEYS": json.dumps(keys), "PATH": ""},
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    failed = {r["method"]: r["detail"] for r in results if not r["ok"]}
    assert failed == {}
    assert [r["method"] for r in results] == METHODS
