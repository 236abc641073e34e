"""The run lifecycle across two workers: cross-worker cancel latency, time to settle after faults.

    python bench/lifecycle_bench.py               # private PostgreSQL + Redis, two workers
    python bench/lifecycle_bench.py -n 30 --no-faults

Starts a private PostgreSQL cluster and Redis on spare ports (``tests/faults/cluster.py``),
a scripted model stub and two fawn workers A and B on them, then measures:

  * cancel latency: a run executing on A (its model call would take 60 s) is cancelled with
    ``wait=true`` through B (the cancel crosses workers: Redis pub/sub to A, A stops the run
    and finalizes it, the end is notified back to B), and the same through A (the owner) for
    the ratio; p50/p95/max over ``-n`` runs;
  * cancel to command killed: a run on A executes a bash command (``sleep 300``); from the
    cancel request (``wait=false``) through B, and through A, until its process is gone;
  * time to settle after each fault, from the moment the fault ends: Redis killed and
    restarted after 3 s, PostgreSQL stopped for 15 s (four 2 s runs in flight: every run is
    terminal), the owner SIGKILLed (four 60 s runs: every run it owned is terminal).

Results go to bench/results/lifecycle-<timestamp>.json. This is a benchmark: nothing asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.conftest import base_config
from tests.faults.cluster import Deployment, private_services
from tests.support.openai_stub import StubServerThread, run_in_thread


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


class Bench:
    def __init__(self, deployment: Deployment, stub: StubServerThread) -> None:
        self.deployment = deployment
        self.stub = stub
        self.http = httpx.AsyncClient(timeout=120)

    def url(self, worker: int) -> str:
        return self.deployment.workers[worker].url

    async def start_run(self, worker: int, delay: float) -> tuple[str, str]:
        key = f"b-{uuid.uuid4().hex[:10]}"
        self.stub.add_script(key, [{"content": "answer", "delay": delay}])
        tid = (await self.http.post(f"{self.url(worker)}/threads", json={})).json()["thread_id"]
        run = await self.http.post(
            f"{self.url(worker)}/threads/{tid}/runs",
            json={"assistant_id": "lead_agent", "input": _user(key)},
        )
        return tid, run.json()["run_id"]

    async def until_running(self, run_ids: list[str]) -> None:
        while True:
            rows = self.deployment.query(
                "SELECT count(*) FROM runs WHERE run_id = ANY(%s) AND status = 'running'", run_ids
            )
            if rows[0][0] == len(run_ids):
                return
            await asyncio.sleep(0.02)

    async def settled(self, owner_pid: int | None = None) -> float:
        """Seconds until no run is pending or running (of the worker with ``owner_pid``)."""
        start = time.monotonic()
        mine = "%" if owner_pid is None else f"%:{owner_pid}:%"
        while True:
            rows = self.deployment.query(
                "SELECT count(*) FROM runs WHERE status IN ('pending', 'running') "
                "AND coalesce(owner, '') LIKE %s",
                mine,
            )
            if not rows[0][0]:
                return time.monotonic() - start
            await asyncio.sleep(0.05)

    async def cancel_latency(self, through: int, n: int) -> list[float]:
        seconds = []
        for _ in range(n):
            tid, run_id = await self.start_run(0, 60.0)
            await self.until_running([run_id])
            await asyncio.sleep(0.05)
            start = time.perf_counter()
            answer = await self.http.post(
                f"{self.url(through)}/threads/{tid}/runs/{run_id}/cancel",
                params={"wait": "true", "action": "interrupt"},
            )
            seconds.append(time.perf_counter() - start)
            assert answer.status_code in (200, 202, 204), answer.text
        return seconds

    async def command_kill_latency(self, through: int, n: int) -> list[float]:
        """A run on A executes a bash command (``sleep``); cancel (``wait=false``) through
        ``through``: seconds from the cancel request until the command's process is gone."""
        seconds = []
        for _ in range(n):
            mark = f"fawnbench{uuid.uuid4().hex[:12]}"
            key = f"b-{uuid.uuid4().hex[:10]}"
            command = f"sleep 300; echo {mark}"
            call = {"name": "bash", "args": {"description": "wait", "command": command}}
            self.stub.add_script(key, [{"tool_calls": [call]}, {"content": "done"}])
            tid = (await self.http.post(f"{self.url(0)}/threads", json={})).json()["thread_id"]
            run = await self.http.post(
                f"{self.url(0)}/threads/{tid}/runs",
                json={"assistant_id": "lead_agent", "input": _user(key)},
            )
            run_id = run.json()["run_id"]
            await _until(lambda m=mark: bool(_processes(m)), step=0.01)  # type: ignore[misc]
            start = time.perf_counter()
            await self.http.post(
                f"{self.url(through)}/threads/{tid}/runs/{run_id}/cancel",
                params={"wait": "false", "action": "interrupt"},
            )
            await _until(lambda m=mark: not _processes(m), step=0.002)  # type: ignore[misc]
            seconds.append(time.perf_counter() - start)
            await self.settled()
        return seconds

    async def in_flight(self) -> list[str]:
        made = [await self.start_run(i % 2, 2.0) for i in range(4)]
        ids = [r for _, r in made]
        await self.until_running(ids)
        return ids

    async def fault_redis(self) -> float:
        await self.in_flight()
        self.deployment.redis.kill()
        await asyncio.sleep(3.0)
        self.deployment.redis.start()
        return await self.settled()

    async def fault_postgres(self) -> float:
        await self.in_flight()
        self.deployment.postgres.stop()
        await asyncio.sleep(15.0)
        self.deployment.postgres.start()
        return await self.settled()

    async def fault_sigkill(self) -> float:
        made = [await self.start_run(0, 60.0) for _ in range(4)]
        await self.until_running([r for _, r in made])
        pid = self.deployment.workers[0].pid
        self.deployment.workers[0].kill()
        settle = await self.settled(owner_pid=pid)
        self.deployment.workers[0].start()
        return settle


async def _until(check: Callable[[], bool], *, step: float, limit: float = 120.0) -> None:
    for _ in range(int(limit / step)):
        if check():
            return
        await asyncio.sleep(step)
    raise TimeoutError("the condition never held")


def _processes(mark: str) -> list[int]:
    """Pids whose command line contains ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(ms[max(0, int(len(ms) * 0.95) - 1)], 1),
        "max_ms": round(ms[-1], 1),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    stub = run_in_thread()
    root = Path(tempfile.mkdtemp(prefix="fawn-lifecycle-bench-"))
    try:
        with private_services(root) as (postgres, redis):
            deployment = Deployment(root, postgres, redis, base_config(stub, root / "x")).start()
            bench = Bench(deployment, stub)
            try:
                results: dict[str, Any] = {}
                if not args.faults_only:
                    other = _summary(await bench.cancel_latency(1, args.n))
                    owner = _summary(await bench.cancel_latency(0, args.n))
                    results["cancel_wait_through_other_worker"] = other
                    results["cancel_wait_through_owner"] = owner
                    results["ratio_p50"] = round(other["p50_ms"] / owner["p50_ms"], 2)
                    other = _summary(await bench.command_kill_latency(1, args.n))
                    owner = _summary(await bench.command_kill_latency(0, args.n))
                    results["cancel_to_command_killed_through_other_worker"] = other
                    results["cancel_to_command_killed_through_owner"] = owner
                if not args.no_faults:
                    results["settle_after_redis_restart_s"] = round(await bench.fault_redis(), 2)
                    results["settle_after_postgres_15s_s"] = round(await bench.fault_postgres(), 2)
                    results["settle_after_owner_sigkill_s"] = round(await bench.fault_sigkill(), 2)
                return results
            finally:
                await bench.http.aclose()
                deployment.stop()
    finally:
        stub.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=20, help="cancels per path")
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--faults-only", action="store_true")
    found = asyncio.run(main(parser.parse_args()))
    print(json.dumps(found, indent=2))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"lifecycle-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(found))
