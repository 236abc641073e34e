"""A command cancelled while it is being started does not outlive the call.

asyncio forks the command before it connects the pipes; a cancellation that lands in
between used to leave the command's tree running (asyncio killed only bwrap, the direct
child) and kept the cancelled call waiting until the command ended by itself. The cancel
is sent after a varying number of event-loop turns so that it lands on every point of the
start, whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal

import pytest

from fawn.sandbox import LocalSandbox
from tests.sandbox.sandbox_helpers import (
    ProviderFactory,
    processes_running,
    unique_sleep,
    wait_until,
)

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]


@pytest.mark.parametrize("turns", range(8))
async def test_a_cancel_during_the_start_leaves_nothing_running(
    make_provider: ProviderFactory, turns: int
) -> None:
    sandbox: LocalSandbox = await make_provider().acquire("t")
    # far longer than the generous wait below: a call that waits for the command is caught
    sleep = unique_sleep().replace("sleep 60.", "sleep 900.")
    task = asyncio.create_task(sandbox.execute(sleep))
    for _ in range(turns):
        await asyncio.sleep(0)
    task.cancel()

    try:
        done, _ = await asyncio.wait([task], timeout=120)
        assert done, "the cancelled call kept waiting for the command"
        assert task.cancelled() or task.exception() is None
        await wait_until(lambda: not processes_running(sleep), within=30.0)
    finally:
        for pid in processes_running(sleep):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
