"""What the sandbox's hardening costs per bash call, side by side in one run.

    python bench/sandbox_bench.py            # -n calls per variant (default 200)

Three ways to run the same command (``true``) in a thread's bubblewrap sandbox, interleaved
call by call after a warm-up, on uvloop (the server's loop):

* **before**: how main ran it before the hardening — the event loop's subprocess spawn
  (``asyncio.create_subprocess_exec``), bubblewrap with the same namespaces and mounts but
  no seccomp filter, no ``prlimit``, no ``--disable-userns``, no size-capped tmpfs, as the
  server's own uid;
* **unhardened**: that same bubblewrap command line, started the way fawn now starts
  commands (``subprocess.Popen`` with ``close_fds``, awaited through a pidfd);
* **hardened**: ``LocalSandbox.execute`` as the server runs it — seccomp, ``prlimit``,
  ``--disable-userns``, capped ``/tmp`` and ``/dev/shm``, read-only ``/dev``, the host uid
  switch (when root), the thread's files measured (and handed over) before the command,
  the quota watch, the concurrency gate.

The bench process first fills ``--ballast-mib`` of memory (default 200, about a serving
fawn's RSS), since what a spawn costs can grow with the parent's memory.

Results go to bench/results/sandbox-<timestamp>.json. A benchmark, not a test: nothing asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvloop

from fawn.config.settings import SandboxSettings
from fawn.sandbox import LocalSandboxProvider
from fawn.sandbox.bwrap import Bind, BwrapSpec, build_argv, synthetic_etc
from fawn.sandbox.masking import HostPathMasker
from fawn.sandbox.paths import VIRTUAL_OUTPUTS, VIRTUAL_UPLOADS, VIRTUAL_WORKSPACE
from fawn.sandbox.process import Launch, run_process

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "dumb"}
# What build_argv now adds unconditionally, taken out again for the "before" command line.
_NEW_FLAGS = ("--disable-userns",)
_NEW_PAIRS = (("--tmpfs", "/dev/shm"), ("--remount-ro", "/dev"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(samples: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples]
    return {
        "p50_ms": round(statistics.median(ms), 3),
        "p90_ms": round(percentile(ms, 0.9), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


def plain_argv(
    provider: LocalSandboxProvider, paths: Any, fds: list[int], command: str
) -> list[str]:
    """The bubblewrap command line as main built it before the hardening."""
    spec = BwrapSpec(
        bwrap=provider._bwrap or "bwrap",
        system=provider._system,
        mounts=(
            Bind(str(paths.workspace), VIRTUAL_WORKSPACE, writable=True),
            Bind(str(paths.uploads), VIRTUAL_UPLOADS, writable=True),
            Bind(str(paths.outputs), VIRTUAL_OUTPUTS, writable=True),
        ),
        cwd=VIRTUAL_WORKSPACE,
        env={**ENV, "HOME": VIRTUAL_WORKSPACE},
        data_files=tuple(zip(fds, synthetic_etc(network=False), strict=True)),
    )
    argv = [arg for arg in build_argv(spec, command) if arg not in _NEW_FLAGS]
    out: list[str] = []
    for arg in argv:
        if out and (out[-1], arg) in _NEW_PAIRS:
            out.pop()
            continue
        out.append(arg)
    return out


def etc_pipes() -> list[int]:
    readers = []
    for content in synthetic_etc(network=False).values():
        reader, writer = os.pipe()
        os.write(writer, content.encode())
        os.close(writer)
        readers.append(reader)
    return readers


async def before(provider: LocalSandboxProvider, paths: Any, command: str) -> None:
    fds = etc_pipes()
    try:
        process = await asyncio.create_subprocess_exec(
            *plain_argv(provider, paths, fds, command),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=ENV,
            pass_fds=fds,
            start_new_session=True,
        )
        output, _ = await process.communicate()
        assert process.returncode == 0, output
    finally:
        for fd in fds:
            os.close(fd)


async def unhardened(provider: LocalSandboxProvider, paths: Any, command: str) -> None:
    fds = etc_pipes()
    try:
        launch = Launch(tuple(plain_argv(provider, paths, fds, command)), ENV, pass_fds=tuple(fds))
        result = await run_process(
            launch, time_limit=60, max_output_chars=20_000, mask=HostPathMasker([]).stream()
        )
        assert result.exit_code == 0, result
    finally:
        for fd in fds:
            os.close(fd)


async def measure(n: int, command: str) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="fawn-sandbox-bench-"))
    provider = LocalSandboxProvider(data_dir, SandboxSettings())
    sandbox = await provider.acquire("bench")
    for i in range(20):  # a workspace with a few files, as a thread has
        (sandbox.paths.workspace / f"file{i}.txt").write_text("x" * 1000)

    async def hardened() -> None:
        result = await sandbox.execute(command)
        assert result.exit_code == 0, result

    variants: dict[str, Callable[[], Awaitable[None]]] = {
        "before": lambda: before(provider, sandbox.paths, command),
        "unhardened": lambda: unhardened(provider, sandbox.paths, command),
        "hardened": hardened,
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(10):
        for run in variants.values():
            await run()
    for _ in range(n):
        for name, run in variants.items():
            start = time.perf_counter()
            await run()
            samples[name].append(time.perf_counter() - start)
    await provider.aclose()
    result: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    for base in ("before", "unhardened"):
        result[f"hardened_minus_{base}_p50_ms"] = round(
            result["hardened"]["p50_ms"] - result[base]["p50_ms"], 3
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="calls per variant")
    parser.add_argument("--command", default="true")
    parser.add_argument("--ballast-mib", type=int, default=200, help="memory held meanwhile")
    args = parser.parse_args()
    ballast = bytearray(args.ballast_mib << 20)
    for offset in range(0, len(ballast), 4096):
        ballast[offset] = 1
    result = {
        "command": args.command,
        "n": args.n,
        "ballast_mib": args.ballast_mib,
        "uid": os.geteuid(),
        "load_average": os.getloadavg(),
        "results": uvloop.run(measure(args.n, args.command)),
    }
    text = json.dumps(result, indent=2)
    print(text)
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / f"sandbox-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
