"""The first admin adopts what the single user of a server without authentication left:
threads owned by ``default`` (everything written before owners existed, or while
``auth.mode`` was ``none``) become the admin's, and their files move under the admin's
directory. Runs only when the first admin is created: until then no signed-in caller can
reach those threads, so none of them is in use."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from fawn.sandbox.paths import SINGLE_USER, ThreadPaths
from fawn.store.scope import DEFAULT_USER
from fawn.store.threads import ThreadRepository

log = logging.getLogger(__name__)


async def adopt_single_user_threads(
    threads: ThreadRepository, data_dir: Path, admin_id: str
) -> int:
    """Give every ``default`` thread to ``admin_id``; the number adopted."""
    adopted = await threads.reassign(DEFAULT_USER, admin_id)
    if adopted:
        await asyncio.to_thread(_move_dirs, data_dir, adopted, admin_id)
        log.info("the first admin adopted %d thread(s) of the single-user server", len(adopted))
    return len(adopted)


def _move_dirs(data_dir: Path, thread_ids: list[str], owner: str) -> None:
    for thread_id in thread_ids:
        source = ThreadPaths.for_thread(data_dir, thread_id, SINGLE_USER).thread_dir
        target = ThreadPaths.for_thread(data_dir, thread_id, owner).thread_dir
        if not source.is_dir() or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
