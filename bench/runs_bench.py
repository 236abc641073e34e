"""Per-run overhead of a LangGraph-compatible server, against the in-process floor.

    python bench/runs_bench.py                       # starts a stub model and a fawn server
    python bench/runs_bench.py --base-url URL --assistant agent --server-pid PID

Measures, through the stock langgraph-sdk client:
  * thread create latency (p50/p95),
  * runs.wait latency (p50/p95) for a one-turn answer, and for a run with one bash tool call,
  * throughput: N runs over M threads at concurrency C (runs.wait),
  * time to the first SSE event of runs.stream,
  * the server's resident memory (when its pid is known),
and the floor: the same lead-agent graph, same kind of checkpointer (SQLite), same stub model,
invoked in-process with no HTTP. Ratios are printed side by side; results go to
bench/results/<timestamp>.json. This is a benchmark, not a test: nothing asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import yaml
from langgraph_sdk import get_client

# The scripted OpenAI stub lives in the test suite: make the repository root importable when
# this file runs as a script (``python bench/runs_bench.py``).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.openai_stub import StubServerThread, run_in_thread

ANSWER_KEY = "bench-answer"
BASH_KEY = "bench-bash"


def script_stub(stub: StubServerThread) -> None:
    stub.add_script(ANSWER_KEY, [{"content": "fine, thanks"}], title="Bench")
    stub.add_script(
        BASH_KEY,
        [
            {
                "tool_calls": [
                    {"name": "bash", "args": {"description": "echo", "command": "echo hi"}}
                ]
            },
            {"content": "done"},
        ],
        title="Bench",
    )


def model_config(stub_url: str) -> dict[str, Any]:
    return {
        "name": "stub",
        "use": "langchain_openai:ChatOpenAI",
        "model": "stub-model",
        "api_key": "bench",
        "base_url": stub_url,
        "max_retries": 0,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50_ms": round(percentile(samples, 0.5) * 1000, 2),
        "p95_ms": round(percentile(samples, 0.95) * 1000, 2),
        "mean_ms": round(statistics.fmean(samples) * 1000, 2),
    }


async def timed(n: int, op: Callable[[int], Awaitable[Any]]) -> list[float]:
    samples = []
    for i in range(n):
        start = time.perf_counter()
        await op(i)
        samples.append(time.perf_counter() - start)
    return samples


def user_input(key: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"{key} how are you?"}]}


async def bench_server(url: str, assistant: str, args: argparse.Namespace) -> dict[str, Any]:
    client = get_client(url=url, timeout=120)
    results: dict[str, Any] = {}
    for _ in range(5):  # warm up
        t = await client.threads.create()
        await client.runs.wait(t["thread_id"], assistant, input=user_input(ANSWER_KEY))

    results["thread_create"] = summary(await timed(args.n, lambda _: client.threads.create()))

    async def wait_samples(n: int, key: str) -> list[float]:
        # a fresh thread per run (as the floor does), created outside the timed section
        tids = [(await client.threads.create())["thread_id"] for _ in range(n)]
        return await timed(n, lambda i: client.runs.wait(tids[i], assistant, input=user_input(key)))

    results["runs_wait"] = summary(await wait_samples(args.n, ANSWER_KEY))
    if args.bash:
        results["runs_wait_bash"] = summary(await wait_samples(args.n // 2, BASH_KEY))

    async def first_event(_: int) -> float:
        t = await client.threads.create()
        start = time.perf_counter()
        first = None
        async for _part in client.runs.stream(
            t["thread_id"], assistant, input=user_input(ANSWER_KEY)
        ):
            if first is None:
                first = time.perf_counter() - start
        return first or 0.0

    ttfe = [await first_event(i) for i in range(args.n // 2)]
    results["time_to_first_event"] = summary(ttfe)

    threads = [(await client.threads.create())["thread_id"] for _ in range(args.threads)]
    sem = asyncio.Semaphore(args.concurrency)
    queues = {tid: asyncio.Lock() for tid in threads}

    async def one(i: int) -> None:
        tid = threads[i % len(threads)]
        async with sem, queues[tid]:
            await client.runs.wait(tid, assistant, input=user_input(ANSWER_KEY))

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(args.runs)))
    elapsed = time.perf_counter() - start
    results["throughput"] = {
        "runs": args.runs,
        "threads": args.threads,
        "concurrency": args.concurrency,
        "seconds": round(elapsed, 2),
        "runs_per_second": round(args.runs / elapsed, 1),
    }
    await client.aclose()
    return results


async def bench_floor(stub_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """The same graph, in-process: no HTTP, no run bookkeeping, no stream bridge."""
    from fawn.agent.context import RunContext
    from fawn.agent.lead import assemble_lead_agent
    from fawn.agent.models import ModelFactory
    from fawn.config import parse_config
    from fawn.sandbox.local import LocalSandboxProvider
    from fawn.store.checkpoints import open_checkpointer

    data_dir = Path(tempfile.mkdtemp(prefix="fawn-floor-"))
    config = parse_config({"data_dir": str(data_dir), "models": [model_config(stub_url)]}, {})
    results: dict[str, Any] = {}
    async with open_checkpointer(config.database, data_dir) as saver:
        sandbox = LocalSandboxProvider(data_dir, config.sandbox)
        agent = assemble_lead_agent(config, ModelFactory(config), saver, sandbox)

        async def invoke(key: str) -> None:
            tid = str(uuid.uuid4())
            await agent.graph.ainvoke(
                user_input(key),
                {"configurable": {"thread_id": tid}},
                context=RunContext(thread_id=tid, run_id=str(uuid.uuid4())),
            )

        for _ in range(5):
            await invoke(ANSWER_KEY)
        results["runs_wait"] = summary(await timed(args.n, lambda _: invoke(ANSWER_KEY)))
        if args.bash:
            results["runs_wait_bash"] = summary(
                await timed(args.n // 2, lambda _: invoke(BASH_KEY))
            )
        await sandbox.aclose()
    return results


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def start_fawn(stub_url: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = {"data_dir": str(workdir / "data"), "models": [model_config(stub_url)]}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fawn.cli.main",
            "serve",
            "--config",
            str(workdir / "config.yaml"),
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        stdout=(workdir / "server.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("fawn did not start; see " + str(workdir / "server.log"))


def ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b else float("nan")


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-url", help="benchmark this server instead of starting fawn")
    parser.add_argument("--assistant", default="lead_agent")
    parser.add_argument("--server-pid", type=int, help="pid of --base-url's server, for RSS")
    parser.add_argument("--stub-port", type=int, default=0, help="fixed port for the stub model")
    parser.add_argument("-n", type=int, default=200, help="samples for latency measurements")
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--no-bash", dest="bash", action="store_false", help="skip the bash-tool run"
    )
    parser.add_argument("--no-floor", dest="floor", action="store_false")
    args = parser.parse_args()

    stub = run_in_thread(port=args.stub_port)
    script_stub(stub)
    proc = None
    try:
        url, pid = args.base_url, args.server_pid
        if url is None:
            proc, url = start_fawn(stub.base_url, Path(tempfile.mkdtemp(prefix="fawn-bench-")))
            pid = proc.pid
        server = await bench_server(url, args.assistant, args)
        if pid:
            server["rss_mb"] = rss_mb(pid)
        report: dict[str, Any] = {"server": {"url": url, **server}, "stub_url": stub.base_url}
        if args.floor:
            floor = await bench_floor(stub.base_url, args)
            report["floor"] = floor
            report["ratios"] = {
                "runs_wait_p50": ratio(server["runs_wait"]["p50_ms"], floor["runs_wait"]["p50_ms"]),
                "runs_wait_p95": ratio(server["runs_wait"]["p95_ms"], floor["runs_wait"]["p95_ms"]),
            }
            if args.bash:
                report["ratios"]["runs_wait_bash_p50"] = ratio(
                    server["runs_wait_bash"]["p50_ms"], floor["runs_wait_bash"]["p50_ms"]
                )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
        stub.stop()
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    path = out / f"runs-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    print(f"saved {path}", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    asyncio.run(main())
