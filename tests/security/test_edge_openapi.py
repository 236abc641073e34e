"""schemathesis over ``/openapi.json`` with every check: the document says what the server
does (statuses, error bodies, request schemas that accept what is accepted and refuse what
is refused).

Bounded for CI: a fixed seed, ``MAX_EXAMPLES`` cases per operation, one worker, no
shrinking, and the example, coverage and fuzzing phases: a few minutes on two loaded cores. On failure the whole report is shown
(each failure comes with a curl line to reproduce it).

Deliberate exclusions (in :data:`CONFIG`):

- ``positive_data_acceptance`` on ``POST /threads`` and ``POST /threads/{thread_id}/state``:
  state values are checked channel by channel by the agent's reducers (``title`` is text,
  ``todos`` a list of ``{content, status}``...); the document lists the writable channels
  but not each one's shape, so a schema-valid update can still be refused with a 422 that
  names the channel.
- The stateful phase (chains of linked calls) is left out for time: each chain starts and
  waits for runs, which took over ten minutes here. It found one false positive while it
  ran: it links ``POST /runs/batch`` to the thread of a stateless run, and a stateless
  run's thread is deleted when the run ends, by design.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.live import LiveServer

MAX_EXAMPLES = 4
SEED = 1

CONFIG = """
[[operations]]
include-path-regex = "^/threads(/\\\\{thread_id\\\\}/state)?$"
include-method = "POST"
checks.positive_data_acceptance.enabled = false
"""


@pytest.mark.timeout(900)
def test_schemathesis_finds_nothing(make_server: Callable[..., LiveServer], tmp_path: Path) -> None:
    live = make_server()
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    cli = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert cli is not None, "schemathesis is a dev dependency (pip install -e '.[dev]')"
    result = subprocess.run(
        [
            cli,
            "--config-file",
            str(config),
            "run",
            f"{live.url}/openapi.json",
            "--checks",
            "all",
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            str(SEED),
            "--workers",
            "1",
            "--no-shrink",
            "--generation-database",
            "none",
            "--no-color",
            "--request-timeout",
            "60",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-20_000:] + result.stderr[-5_000:]
