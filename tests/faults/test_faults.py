"""Faults injected into a live two-worker deployment (private PostgreSQL and Redis).

Every test ends with the same verdict: zero runs stuck (all terminal within a bound), zero
queued runs lost (none ended without having started), zero runs wrongly completed after a
rollback, zero streams ended without a terminal event (a client following a run, reconnecting
to the other worker when its connection drops as SDK clients do, always receives ``end``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from fawn.runs.ownership import OUTAGE_REASON
from tests.faults.cluster import LONG_OUTAGE, Deployment
from tests.support.openai_stub import StubServerThread

pytestmark = [pytest.mark.faults, pytest.mark.timeout(420)]

SETTLE_SECONDS = 90.0

#: the script key of each thread started by ``start_runs`` (the stub answers a thread by the
#: key in its first message: later runs of the thread get that script too)
KEYS: dict[str, str] = {}


@pytest.fixture
async def clients(deployment: Deployment) -> AsyncIterator[list[LangGraphClient]]:
    for worker in deployment.workers:  # a test that killed one restarts it; this is a guard
        if worker.port == 0 or _down(worker.url):
            worker.start()
    made = [get_client(url=w.url, timeout=60) for w in deployment.workers]
    try:
        yield made
    finally:
        for client in made:
            await client.aclose()


def _down(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=2).status_code != 200
    except httpx.HTTPError:
        return True


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def follow(
    clients: list[LangGraphClient], tid: str, run_id: str, first: int = 0
) -> list[str]:
    """Follow a run to its end from ``clients[first]``, reconnecting (from the last event id
    seen) to the next worker whenever a connection drops or ends before ``end``."""
    events: list[str] = []
    last = "0"
    deadline = time.monotonic() + SETTLE_SECONDS
    turn = first
    while time.monotonic() < deadline:
        client = clients[turn % len(clients)]
        try:
            async for part in client.runs.join_stream(tid, run_id, last_event_id=last):
                events.append(part.event)
                if part.id:
                    last = part.id
                if part.event == "end":
                    return events
        except (httpx.HTTPError, OSError):
            pass
        turn += 1
        await asyncio.sleep(0.2)
    return events


async def settled(deployment: Deployment) -> float:
    """Seconds until no run is pending or running (fails past ``SETTLE_SECONDS``)."""
    start = time.monotonic()
    while time.monotonic() - start < SETTLE_SECONDS:
        active = deployment.query(
            "SELECT count(*) FROM runs WHERE status IN ('pending', 'running')"
        )
        if not active[0][0]:
            return time.monotonic() - start
        await asyncio.sleep(0.2)
    stuck = deployment.query(
        "SELECT run_id, status, owner FROM runs WHERE status IN ('pending', 'running')"
    )
    raise AssertionError(f"runs stuck: {stuck}")


def assert_nothing_lost(deployment: Deployment) -> None:
    never_started = deployment.query(
        "SELECT run_id, status, error FROM runs WHERE status = 'error' AND started_at IS NULL"
    )
    assert never_started == []


async def statuses(deployment: Deployment, run_ids: list[str]) -> list[tuple[str, str | None]]:
    found = deployment.query(
        "SELECT run_id, status, error FROM runs WHERE run_id = ANY(%s)", run_ids
    )
    rows = {r[0]: (r[1], r[2]) for r in found}
    return [(rows[r][0], rows[r][1]) if r in rows else ("deleted", None) for r in run_ids]


async def start_runs(
    client: LangGraphClient, stub: StubServerThread, count: int, delay: float, **extra: Any
) -> list[tuple[str, str]]:
    """``count`` runs on fresh threads, each answering after ``delay`` s: (thread, run)."""
    made = []
    for _ in range(count):
        key = f"f-{uuid.uuid4().hex[:10]}"
        stub.add_script(key, [{"content": f"answer {key}", "delay": delay}])
        tid = (await client.threads.create())["thread_id"]
        KEYS[tid] = key
        run = await client.runs.create(tid, "lead_agent", input=user(key), **extra)
        made.append((tid, run["run_id"]))
    return made


def answer_quickly(stub: StubServerThread, made: list[tuple[str, str]]) -> None:
    """From now on the runs of these threads answer at once (the queued ones)."""
    for tid, _ in made:
        stub.add_script(KEYS[tid], [{"content": "answered", "delay": 0.1}])


async def until_asked(stub: StubServerThread, made: list[tuple[str, str]]) -> None:
    """Wait until the model stub has received the request of each of these threads' runs."""
    for _ in range(1200):
        if all(stub.requests_for(KEYS[tid]) for tid, _ in made):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the runs never called the model")


async def until_running(deployment: Deployment, run_ids: list[str]) -> None:
    for _ in range(600):
        rows = await statuses(deployment, run_ids)
        if all(s == "running" for s, _ in rows):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not all running: {await statuses(deployment, run_ids)}")


async def create_refused(url: str, tid: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(
            f"{url}/threads/{tid}/runs", json={"assistant_id": "lead_agent", "input": user("x")}
        )


def assert_503(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    body = response.json()
    assert body["retryable"] is True and body["code"] in {
        "store_unavailable",
        "stream_unavailable",
    }


# -- Redis killed and restarted ----------------------------------------------------------------


async def test_redis_killed_and_restarted(
    deployment: Deployment, clients: list[LangGraphClient], stub: StubServerThread
) -> None:
    a, b = clients
    made = await start_runs(a, stub, 3, 4.0) + await start_runs(b, stub, 3, 4.0)
    ids = [r for _, r in made]
    await until_running(deployment, ids)
    followers = [asyncio.create_task(follow(clients, t, r, i)) for i, (t, r) in enumerate(made)]
    await asyncio.sleep(0.5)
    deployment.redis.kill()
    refused = await create_refused(deployment.workers[0].url, made[0][0])
    await asyncio.sleep(3.0)
    deployment.redis.start()
    print(f"settle after redis restart: {await settled(deployment):.2f} s")
    assert_503(refused)
    assert await statuses(deployment, ids) == [("success", None)] * len(ids)
    for events in await asyncio.gather(*followers):
        assert events[-1] == "end", events
    assert_nothing_lost(deployment)
    ghost = deployment.query("SELECT count(*) FROM runs WHERE thread_id = %s", made[0][0])
    assert ghost == [(1,)]


# -- PostgreSQL stopped within the tolerance, and for longer than the lease ---------------------


async def test_postgres_stopped_15_seconds_kills_nothing(
    deployment: Deployment, clients: list[LangGraphClient], stub: StubServerThread
) -> None:
    a, b = clients
    made = await start_runs(a, stub, 2, 3.0) + await start_runs(b, stub, 2, 3.0)
    tid = made[0][0]
    key = f"f-{uuid.uuid4().hex[:10]}"
    stub.add_script(key, [{"content": "queued", "delay": 0.5}])
    queued = [
        (await a.runs.create(tid, "lead_agent", input=user(key), multitask_strategy="enqueue"))[
            "run_id"
        ]
        for _ in range(2)
    ]
    await until_running(deployment, [r for _, r in made])
    followers = [asyncio.create_task(follow(clients, t, r, i)) for i, (t, r) in enumerate(made)]
    deployment.postgres.stop()
    refused = await create_refused(deployment.workers[1].url, made[1][0])
    await asyncio.sleep(15.0)
    deployment.postgres.start()
    print(f"settle after a 15 s PostgreSQL outage: {await settled(deployment):.2f} s")
    assert_503(refused)
    ids = [r for _, r in made] + queued
    assert await statuses(deployment, ids) == [("success", None)] * len(ids)
    for events in await asyncio.gather(*followers):
        assert events[-1] == "end", events
    # stale pooled connections are replaced, not reported: every request gets through
    codes = await asyncio.gather(
        *(clients[i % 2].threads.get(t) for i, (t, _) in enumerate(made * 5))
    )
    assert len(codes) == len(made) * 5
    assert_nothing_lost(deployment)


async def test_postgres_stopped_longer_than_the_lease(
    deployment: Deployment, clients: list[LangGraphClient], stub: StubServerThread
) -> None:
    """Nobody could renew, so nobody is declared dead: each owner stops its own runs once the
    outage passes its tolerance and settles them when back; queued runs then run."""
    a, b = clients
    made = await start_runs(a, stub, 2, 60.0) + await start_runs(b, stub, 2, 60.0)
    tid = made[0][0]
    key = f"f-{uuid.uuid4().hex[:10]}"
    stub.add_script(key, [{"content": "queued", "delay": 0.2}])
    queued = (
        await b.runs.create(tid, "lead_agent", input=user(key), multitask_strategy="enqueue")
    )["run_id"]
    await until_running(deployment, [r for _, r in made])
    followers = [asyncio.create_task(follow(clients, t, r, i)) for i, (t, r) in enumerate(made)]
    deployment.postgres.stop()
    answer_quickly(stub, made)
    await asyncio.sleep(LONG_OUTAGE)
    deployment.postgres.start()
    print(f"settle after a {LONG_OUTAGE:g} s PostgreSQL outage: {await settled(deployment):.2f} s")
    assert await statuses(deployment, [r for _, r in made]) == [("error", OUTAGE_REASON)] * 4
    assert await statuses(deployment, [queued]) == [("success", None)]
    states = deployment.query("SELECT state FROM workers WHERE state <> 'stopped'")
    assert sorted(s for (s,) in states) == ["active", "active"]
    for events in await asyncio.gather(*followers):
        assert events[-2:] == ["error", "end"], events
    assert_nothing_lost(deployment)


# -- a worker killed, a worker drained ----------------------------------------------------------


async def test_owner_sigkilled_its_queued_runs_run_on_the_peer(
    deployment: Deployment, clients: list[LangGraphClient], stub: StubServerThread
) -> None:
    a, b = clients
    made = await start_runs(a, stub, 3, 12.0)  # a run the peer claimed finishes in 12 s
    key = f"f-{uuid.uuid4().hex[:10]}"
    stub.add_script(key, [{"content": "queued", "delay": 0.2}])
    queued = [
        (await a.runs.create(t, "lead_agent", input=user(key), multitask_strategy="enqueue"))[
            "run_id"
        ]
        for t, _ in made
    ]
    ids = [r for _, r in made]
    await until_running(deployment, ids)
    followers = [asyncio.create_task(follow([b], t, r)) for t, r in made]
    await asyncio.sleep(0.5)
    killed = str(deployment.workers[0].pid)
    owners = dict(deployment.query("SELECT run_id, owner FROM runs WHERE run_id = ANY(%s)", ids))
    deployment.workers[0].kill()
    answer_quickly(stub, made)
    print(f"settle after SIGKILL: {await settled(deployment):.2f} s")
    # the killed worker's runs end ``error`` (orphaned); one its peer had claimed finishes
    expected = ["error" if owners[r].split(":")[1] == killed else "success" for r in ids]
    assert "error" in expected
    assert [s for s, _ in await statuses(deployment, ids)] == expected
    assert await statuses(deployment, queued) == [("success", None)] * 3
    owners = deployment.query("SELECT DISTINCT owner FROM runs WHERE run_id = ANY(%s)", queued)
    assert len(owners) == 1
    for events, status in zip(await asyncio.gather(*followers), expected, strict=True):
        assert events[-2:] == (["error", "end"] if status == "error" else ["values", "end"])
    assert_nothing_lost(deployment)  # the next test's ``clients`` restarts the worker


async def test_sigterm_mid_run_drains(
    deployment: Deployment, clients: list[LangGraphClient], stub: StubServerThread
) -> None:
    a, b = clients
    short = await start_runs(a, stub, 2, 1.0)  # finish within runs.drain_seconds (3 s)
    long = await start_runs(a, stub, 1, 60.0)  # stopped when the drain time is over
    key = f"f-{uuid.uuid4().hex[:10]}"
    stub.add_script(key, [{"content": "queued", "delay": 0.2}])
    queued = [
        (await a.runs.create(t, "lead_agent", input=user(key), multitask_strategy="enqueue"))[
            "run_id"
        ]
        for t, _ in short + long
    ]
    await until_running(deployment, [r for _, r in short + long])
    followers = [asyncio.create_task(follow(clients, t, r)) for t, r in short + long]
    await until_asked(stub, long)  # "running" may still be before the model call
    answer_quickly(stub, long)  # its queued run, once the drain has stopped the long one
    await asyncio.to_thread(deployment.workers[0].stop)  # SIGTERM, then waits for the exit
    print(f"settle after SIGTERM: {await settled(deployment):.2f} s")
    assert await statuses(deployment, [r for _, r in short]) == [("success", None)] * 2
    assert [s for s, _ in await statuses(deployment, [r for _, r in long])] == ["error"]
    assert await statuses(deployment, queued) == [("success", None)] * 3
    for events in await asyncio.gather(*followers):
        assert events[-1] == "end", events
    assert_nothing_lost(deployment)  # the next test's ``clients`` restarts the worker


# -- a mixed-strategy load with bursts ---------------------------------------------------------


async def test_mixed_strategy_load_with_bursts(
    deployment: Deployment, clients: list[LangGraphClient], stub: StubServerThread
) -> None:
    """Per thread: three queued runs, then a burst of three ``rollback`` runs, then a burst of
    two ``interrupt`` runs, each burst sent at once through both workers."""
    threads = 8
    key = f"f-{uuid.uuid4().hex[:10]}"
    # the queued runs are the conversation's first three answers; every later one (the
    # bursts') lasts long enough that the next burst always finds the last run of the
    # previous one active, however loaded the machine (a run that ended before the next
    # admission is rightly a success)
    quick, slow = {"content": "load answer", "delay": 0.6}, {"content": "load answer", "delay": 4}
    stub.add_script(key, [quick, quick, quick, slow])
    tids = [(await clients[i % 2].threads.create())["thread_id"] for i in range(threads)]

    async def create(i: int, tid: str, label: str, strategy: str) -> tuple[str, str]:
        run = await clients[i % 2].runs.create(
            tid, "lead_agent", input=user(f"{key} {label}"), multitask_strategy=strategy
        )
        return run["run_id"], label

    async def one_thread(t: int, tid: str) -> dict[str, list[tuple[str, str]]]:
        queued = [await create(t + i, tid, f"q{i}", "enqueue") for i in range(3)]
        await clients[0].runs.join(tid, queued[-1][0])
        rolled = await asyncio.gather(*(create(t + i, tid, f"r{i}", "rollback") for i in range(3)))
        await asyncio.sleep(0.2)
        interrupted = await asyncio.gather(
            *(create(t + i, tid, f"i{i}", "interrupt") for i in range(2))
        )
        return {"queued": queued, "rolled": list(rolled), "interrupted": list(interrupted)}

    started = time.monotonic()
    plans = await asyncio.gather(*(one_thread(t, tid) for t, tid in enumerate(tids)))
    print(
        f"settle after the load: {await settled(deployment):.2f} s "
        f"({time.monotonic() - started:.1f} s in all, {threads * 8} runs)"
    )
    wrongly_completed = 0
    for tid, plan in zip(tids, plans, strict=True):
        assert [s for s, _ in await statuses(deployment, [r for r, _ in plan["queued"]])] == [
            "success"
        ] * 3
        rows = deployment.query(
            "SELECT run_id, status, seq FROM runs WHERE thread_id = %s ORDER BY seq", tid
        )
        last = rows[-1]
        assert last[1] == "success"
        for run_id, status, _ in rows[:-1]:
            if run_id not in {r for r, _ in plan["queued"]} and status == "success":
                wrongly_completed += 1
        state = await clients[1].threads.get_state(tid)
        texts = [m["content"] for m in state["values"]["messages"] if m["type"] == "human"]
        rolled_back = {
            label for (run_id, label) in plan["rolled"] if run_id not in {r[0] for r in rows}
        }
        assert not [t for t in texts if t.split()[-1] in rolled_back], texts
    assert wrongly_completed == 0
    assert_nothing_lost(deployment)
