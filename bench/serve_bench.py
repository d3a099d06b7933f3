"""Benchmark: a served toolkit against the ceiling of its stack, in one run.

Two servers, each in its own process, on the same uvicorn settings (uvloop + httptools):

- ``toolnexus``: a toolkit served with an instant in-process model, memory store.
- ``bare``: a bare Starlette app that answers the same JSON-RPC calls from a dict: a non-blocking
  ``message/send`` gets ``submitted`` and the task completes on its first ``tasks/get`` (so both
  sides pay a send and a poll), a blocking send gets ``completed`` at once.

The load comes from a third process speaking raw HTTP/1.1 keep-alive on asyncio + uvloop (a
general-purpose client would be the bottleneck on two cores); the servers run on the last core
and the load on the others (``--no-pin``: all share every core). Measured per server: card GETs per
second, GetTask of a finished task per second, send-then-poll round trips per second and blocking sends per second at concurrency 1, 16
and 64, latency p50/p99, server CPU per operation (from /proc), and memory per retained task.

Run: python bench/serve_bench.py [--seconds 3] [--repeat 3] [--sdk] [--json out.json]
(``--sdk``: the official a2a-sdk server measured beside them, interleaved, and ours set against it.)
``--before DIR``: a change paired, in one run: the bare ceiling, DIR's toolnexus (another build, e.g.
``git worktree add --detach DIR main``) and this tree's, all three running, each workload (card and
GetTask at c=64 and 16, blocking sends at 16 and 64) measured on each in turn, the order rotated
each round; the medians of the paired ratios, and the system's share of each one's CPU.
Both servers tune the collector as ``toolnexus serve`` does (``serving_gc``; TOOLNEXUS_BENCH_GC=default
leaves Python's). (TOOLNEXUS_BENCH_RECORD_WIRE=1 serves with the inbound wire recorder on, as the TUI hosts servers;
--wire measures only its cost: the same server with the recorder off and on, alternating.)
(about 3 minutes; the servers are measured alternately and the medians reported, as a shared
machine's neighbours move single runs by 10-20%).
Also printed: memory per retained task (over --tasks, 20,000 by default) and the first call of a
tool with a schema against its tenth (bench/first_call.py's measurement).
Targets (issue 15), against bare in the same run: send + poll >= 0.75x at <= 1.5x CPU and p99 <=
1.5x; blocking >= 0.6x at <= 1.5x CPU and p99 <= 2x; GetTask of a finished task >= 0.85x; card
GET >= 0.9x; <= 1,000 B per retained task; the first call <= the tenth + 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CARD = "/.well-known/agent-card.json"
CONCURRENCY = (1, 16, 64)


# ---------------------------------------------------------------------------------------------
# the servers (run as: serve_bench.py --server toolnexus|bare)


def _bare_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from toolnexus import _json

    tasks: dict[str, dict[str, Any]] = {}
    card = _json.dumps(
        {
            "name": "bare",
            "description": "bare ceiling",
            "url": "http://127.0.0.1/",
            "version": "0",
            "protocolVersion": "0.3.0",
            "capabilities": {"streaming": False},
            "defaultInputModes": ["text"],
            "defaultOutputModes": ["text"],
            "skills": [],
        }
    )

    async def get_card(request: Request) -> Response:
        return Response(card, media_type="application/json")

    async def rpc(request: Request) -> Response:
        body = _json.loads(await request.body())
        rid, method, params = body.get("id"), body.get("method"), body.get("params") or {}
        if method == "message/send":
            msg = params["message"]
            tid, ctx = str(uuid.uuid4()), str(uuid.uuid4())
            task = {
                "kind": "task",
                "id": tid,
                "contextId": ctx,
                "status": {"state": "submitted"},
                "history": [{**msg, "taskId": tid, "contextId": ctx}],
                "_text": msg["parts"][0]["text"],
            }
            tasks[tid] = task
            if (params.get("configuration") or {}).get("blocking", True):
                _complete(task)
            result = {k: v for k, v in task.items() if k != "_text"}
        elif method == "tasks/get":
            task = tasks.get(params.get("id"))
            if task is None:
                return Response(
                    _json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": rid,
                            "error": {"code": -32001, "message": "Task not found"},
                        }
                    ),
                    media_type="application/json",
                )
            if task["status"]["state"] == "submitted":
                _complete(task)
            result = {k: v for k, v in task.items() if k != "_text"}
        else:
            return Response(
                _json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "error": {"code": -32601, "message": "Method not found"},
                    }
                ),
                media_type="application/json",
            )
        return Response(
            _json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}),
            media_type="application/json",
        )

    def _complete(task: dict[str, Any]) -> None:
        task["status"] = {"state": "completed", "timestamp": "2026-11-30T00:00:00.000000Z"}
        task["artifacts"] = [
            {
                "artifactId": "reply",
                "name": "reply",
                "parts": [{"kind": "text", "text": task["_text"]}],
            }
        ]

    return Starlette(routes=[Route(CARD, get_card), Route("/", rpc, methods=["POST"])])


async def _run_sdk() -> None:
    """The official a2a-sdk server (``--sdk``): tests/peers/sdk_server.py's echo agent on its
    InMemoryTaskStore, JSON-RPC with its 0.3 compatibility on (the bench speaks 0.3), served by
    the same uvicorn stack, the collector tuned as the others."""
    sys.path.insert(0, str(ROOT))
    from tests.peers.sdk_server import sdk_server
    from toolnexus.http.server import serving_gc

    async with sdk_server(compat=True) as url:
        if os.environ.get("TOOLNEXUS_BENCH_GC") != "default":
            serving_gc()
        print(url, flush=True)
        await asyncio.Event().wait()


async def _run_server(kind: str) -> None:
    import toolnexus as tn
    from toolnexus.http.server import AsgiServer, serving_gc

    # both on this process's uvloop; uvicorn's http="auto" picks httptools when it is installed
    if kind == "sdk":
        await _run_sdk()
        return
    if kind == "bare":
        server = AsgiServer(_bare_app(), "127.0.0.1:0")
        await server.start()
        url = server.url
    else:

        async def instant(request: dict[str, Any]) -> dict[str, Any]:
            return {"content": "ok", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}

        wire = kind == "toolnexus-wire" or os.environ.get("TOOLNEXUS_BENCH_RECORD_WIRE") == "1"
        watched = wire or kind == "toolnexus-watched"
        tk = await tn.create_toolkit(builtins=False)
        handle = await tk.serve(
            "127.0.0.1:0",
            client=tn.create_in_process_client(instant),
            # TOOLNEXUS_BENCH_STORE: a durable store's URL (served_instructions.py --store)
            a2a=tn.A2AConfig(
                name="bench",
                description="bench",
                store=os.environ.get("TOOLNEXUS_BENCH_STORE", "memory"),
            ),
            record_wire=wire,
            metrics=kind == "toolnexus-metrics",
        )
        url = handle.url
        if (
            watched
        ):  # as in the TUI: one reader takes every event off the bus (and reads nothing of it)

            async def drain() -> None:
                async for _ in handle.events.subscribe(max_queue=5000):
                    pass

            asyncio.ensure_future(drain())
    if (
        os.environ.get("TOOLNEXUS_BENCH_GC") != "default"
    ):  # both tuned as `toolnexus serve` tunes its process
        serving_gc()
    print(url, flush=True)
    await asyncio.Event().wait()


# ---------------------------------------------------------------------------------------------
# a lean HTTP/1.1 keep-alive client


class Conn:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader
        self.writer: asyncio.StreamWriter

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def request(self, method: str, path: str, body: bytes = b"") -> bytes:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        self.writer.write(head + body)
        status_and_headers = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in status_and_headers.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        if not status_and_headers.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(status_and_headers.split(b"\r\n")[0].decode())
        return await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


def _send_body(blocking: bool) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "configuration": {"blocking": blocking},
                "message": {
                    "kind": "message",
                    "messageId": str(uuid.uuid4()),
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hello bench"}],
                },
            },
        }
    ).encode()


PACE = (0.01, 1.5, 1.0)
"""The "paced" send+poll's pauses between polls: the first, its growth, the longest (the shape of
``A2AClient.watch``: a first poll at once, then pauses growing by half, here from 10 ms)."""


async def _worker(
    conn: Conn, op: str, stop_at: float, latencies: list[float], counts: dict[str, int]
) -> None:
    clock = time.perf_counter
    finished = b""
    if op == "get":  # GetTask of a finished task: one per connection, asked for again and again
        done = json.loads(await conn.request("POST", "/", _send_body(True)))
        finished = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tasks/get",
                "params": {"id": done["result"]["id"]},
            }
        ).encode()
    while clock() < stop_at:
        t0 = clock()
        if op == "card":
            await conn.request("GET", CARD)
        elif op == "get":
            out = json.loads(await conn.request("POST", "/", finished))
            assert out["result"]["status"]["state"] == "completed", out
        elif op == "blocking":
            out = json.loads(await conn.request("POST", "/", _send_body(True)))
            assert out["result"]["status"]["state"] == "completed", out
        else:  # send+poll: "roundtrip" polls again at once; "paced" as a client's watch does (PACE)
            out = json.loads(await conn.request("POST", "/", _send_body(False)))
            tid = out["result"]["id"]
            pause = PACE[0]
            while True:
                got = json.loads(
                    await conn.request(
                        "POST",
                        "/",
                        json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "id": 2,
                                "method": "tasks/get",
                                "params": {"id": tid},
                            }
                        ).encode(),
                    )
                )
                counts["polls"] += 1
                if got["result"]["status"]["state"] == "completed":
                    break
                if op == "paced":
                    await asyncio.sleep(pause)
                    pause = min(pause * PACE[1], PACE[2])
        latencies.append(clock() - t0)
        counts["ops"] += 1


def _cpu_seconds(pid: int) -> float:
    return sum(_cpu_split(pid))


def _cpu_split(pid: int) -> tuple[float, float]:
    """A process's CPU so far, (user, system) seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _measure(url: str, pid: int, op: str, concurrency: int, seconds: float) -> dict[str, Any]:
    host, port = url.removeprefix("http://").split(":")
    conns = [Conn(host, int(port)) for _ in range(concurrency)]
    await asyncio.gather(*(c.open() for c in conns))
    warm: list[float] = []
    wcounts = {"ops": 0, "polls": 0}
    await asyncio.gather(*(_worker(c, op, time.perf_counter() + 0.3, warm, wcounts) for c in conns))
    latencies: list[float] = []
    counts = {"ops": 0, "polls": 0}
    (user0, sys0), t0 = _cpu_split(pid), time.perf_counter()
    await asyncio.gather(
        *(_worker(c, op, time.perf_counter() + seconds, latencies, counts) for c in conns)
    )
    user1, sys1 = _cpu_split(pid)
    elapsed, cpu = time.perf_counter() - t0, user1 - user0 + sys1 - sys0
    for c in conns:
        c.close()
    latencies.sort()
    return {
        "op": op,
        "concurrency": concurrency,
        "ops": counts["ops"],
        "rate": counts["ops"] / elapsed,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "cpu_us_per_op": 1e6 * cpu / max(counts["ops"], 1),
        "sys_share": (sys1 - sys0) / cpu if cpu else 0.0,
        "polls_per_op": counts["polls"] / max(counts["ops"], 1) if op == "roundtrip" else None,
    }


async def _memory_per_task(url: str, pid: int, n: int) -> float:
    host, port = url.removeprefix("http://").split(":")
    conns = [Conn(host, int(port)) for _ in range(16)]
    await asyncio.gather(*(c.open() for c in conns))
    await asyncio.sleep(0.5)
    before = _rss_kib(pid)

    async def fill(conn: Conn, k: int) -> None:
        for _ in range(k):
            await conn.request("POST", "/", _send_body(True))

    await asyncio.gather(*(fill(c, n // 16) for c in conns))
    await asyncio.sleep(0.5)
    for c in conns:
        c.close()
    return (_rss_kib(pid) - before) * 1024 / n


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


STARTED_ON = sorted(os.sched_getaffinity(0))
"""The cores this process could run on when it started: the bench pins itself to the load's
cores before it starts the servers, so the cores are read once, not after (which left every
server on the load's core)."""


def _cpus() -> tuple[set[int], set[int]] | None:
    """The cores for the load generator and for the servers: the last one for the servers, the
    rest for the load (as the issue's comparison ran); None with one core or with --no-pin."""
    mine = STARTED_ON
    if len(mine) < 2 or os.environ.get("TOOLNEXUS_BENCH_PIN") == "0":
        return None
    return set(mine[:-1]), {mine[-1]}


BEFORE = "before"
"""``--before DIR``'s kind: ``toolnexus`` served from the package in DIR (another build)."""


def _start(kind: str, before: str | None = None) -> tuple[subprocess.Popen[str], str]:
    env = None
    if kind == BEFORE:  # the same server, another build's toolnexus first on the path
        assert before is not None
        kind, env = "toolnexus", {**os.environ, "PYTHONPATH": before}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--server", kind],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    cpus = _cpus()
    if cpus is not None:
        os.sched_setaffinity(proc.pid, cpus[1])

    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        raise SystemExit(f"{kind} server did not start")
    return proc, url


async def _memory_only(tasks_for_memory: int) -> str:
    out = {}
    for kind in ("bare", "toolnexus"):
        proc, url = _start(kind)
        try:
            out[kind] = await _memory_per_task(url, proc.pid, tasks_for_memory)
        finally:
            proc.kill()
            proc.wait()
    return (
        f"memory per retained task over {tasks_for_memory:,} tasks (RSS): bare {out['bare']:,.0f} B, "
        f"toolnexus {out['toolnexus']:,.0f} B ({out['toolnexus'] / out['bare']:.2f}x)"
    )


async def _bench(
    seconds: float, tasks_for_memory: int, repeat: int, sdk: bool = False
) -> dict[str, Any]:
    """Each server measured ``repeat`` times, alternating (the order rotated each repetition), so
    that a noisy neighbour hits all; medians kept. ``sdk``: the official a2a-sdk's server too
    (its memory per task is not measured: 20,000 of its blocking sends take minutes)."""
    kinds = ("bare", "toolnexus", "sdk") if sdk else ("bare", "toolnexus")
    runs: dict[str, list[list[dict[str, Any]]]] = {kind: [] for kind in kinds}
    for rep in range(repeat):
        for kind in kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]:
            print(f"  {kind} (load average {_load()})", file=sys.stderr, flush=True)
            proc, url = _start(kind)
            try:
                rows = [
                    await _measure(url, proc.pid, "card", 64, seconds),
                    await _measure(url, proc.pid, "get", 64, seconds),
                ]
                for op in ("roundtrip", "blocking"):
                    for c in CONCURRENCY:
                        rows.append(await _measure(url, proc.pid, op, c, seconds))
                runs[kind].append(rows)
            finally:
                proc.kill()
                proc.wait()
    results: dict[str, Any] = {}
    for kind, all_rows in runs.items():
        rows = []
        for i, first in enumerate(all_rows[0]):
            same = [r[i] for r in all_rows]
            row = dict(first)
            for key in ("rate", "p50_ms", "p99_ms", "cpu_us_per_op"):
                row[key] = statistics.median(r[key] for r in same)
            row["runs"] = same
            rows.append(row)
        if kind == "sdk":
            results[kind] = {"rows": rows, "bytes_per_task": None}
            continue
        proc, url = _start(kind)  # a fresh process for memory
        try:
            results[kind] = {
                "rows": rows,
                "bytes_per_task": await _memory_per_task(url, proc.pid, tasks_for_memory),
            }
        finally:
            proc.kill()
            proc.wait()
    return results


def _first_call(runs: int) -> dict[str, float] | None:
    """The first and tenth call of a tool with a schema, medians over fresh interpreters."""
    from first_call import TOOL, run

    found = [r for r in (run(TOOL) for _ in range(runs)) if r]
    if not found:
        return None
    return {key: statistics.median(r[key] for r in found) for key in ("first", "tenth")}


def _against(results: dict[str, Any], other: str) -> list[str]:
    """Ours set against ``other`` (the bare ceiling, the official SDK), row by row."""
    them = {(r["op"], r["concurrency"]): r for r in results[other]["rows"]}
    o = other[:4]
    lines = [
        f"{'op':<10}{'c':>4}{o + '/s':>10}{'tn/s':>10}{'ratio':>8}{o + ' p50':>10}{'tn p50':>9}"
        f"{o + ' p99':>10}{'tn p99':>9}{'p99 x':>7}{o + ' µs':>9}{'tn µs':>8}{'cpu x':>7}"
    ]
    for r in results["toolnexus"]["rows"]:
        b = them[(r["op"], r["concurrency"])]
        lines.append(
            f"{r['op']:<10}{r['concurrency']:>4}{b['rate']:>10.0f}{r['rate']:>10.0f}{r['rate'] / b['rate']:>8.2f}"
            f"{b['p50_ms']:>9.2f}m{r['p50_ms']:>8.2f}m{b['p99_ms']:>9.2f}m{r['p99_ms']:>8.2f}m"
            f"{r['p99_ms'] / b['p99_ms']:>7.2f}{b['cpu_us_per_op']:>9.0f}{r['cpu_us_per_op']:>8.0f}"
            f"{r['cpu_us_per_op'] / b['cpu_us_per_op']:>7.2f}"
        )
    return lines


def _report(results: dict[str, Any]) -> str:
    lines = _against(results, "bare")
    if "sdk" in results:  # ours against the official SDK's server, the same rows
        lines += ["ours against the official a2a-sdk server:", *_against(results, "sdk")]
    lines.append(
        f"memory per retained task: bare {results['bare']['bytes_per_task'] / 1024:.1f} KiB, "
        f"toolnexus {results['toolnexus']['bytes_per_task'] / 1024:.1f} KiB"
    )
    first = results.get("first_call")
    if first:
        lines.append(
            f"first tool call with a schema: {first['first']:.2f} ms, the tenth {first['tenth']:.3f} ms "
            f"(target: first <= tenth + 50 ms; fresh interpreters, bench/first_call.py)"
        )
    polls = [r["polls_per_op"] for r in results["toolnexus"]["rows"] if r["op"] == "roundtrip"]
    lines.append(
        f"toolnexus polls per round trip: {', '.join(f'{p:.2f}' for p in polls)} (c={CONCURRENCY})"
    )
    return "\n".join(lines)


async def _paired_cost(
    kinds: tuple[str, ...],
    seconds: float,
    repeat: int,
    only: str | None = None,
    before: str | None = None,
    plan: list[tuple[str, int]] | None = None,
) -> str:
    """What one feature or change costs: the servers of ``kinds`` all running, each workload
    measured on one after the other (the order rotated each round), so that a neighbour's load
    moves every side of a comparison alike; each kind set against the first. ``--wire``: the
    inbound wire recorder (both watched by a bus reader, as the TUI's hosted servers are);
    ``--metrics``: the Prometheus metrics; ``--before DIR``: the bare ceiling, DIR's build and
    this tree's (also set against DIR's)."""
    plan = plan or [
        ("card", 64),
        ("get", 64),
        ("roundtrip", 1),
        ("roundtrip", 16),
        ("roundtrip", 64),
        ("blocking", 64),
    ]
    plan = [(op, c) for op, c in plan if only is None or op in only.split(",")]
    servers = {kind: _start(kind, before) for kind in kinds}
    runs: dict[str, list[list[dict[str, Any]]]] = {kind: [[] for _ in plan] for kind in kinds}
    try:
        for r in range(repeat):
            for i, (op, c) in enumerate(plan):
                turn = r % len(kinds)
                for kind in kinds[turn:] + kinds[:turn]:
                    proc, url = servers[kind]
                    runs[kind][i].append(await _measure(url, proc.pid, op, c, seconds))
    finally:
        for proc, _ in servers.values():
            proc.kill()
            proc.wait()
    pairs = [(kinds[0], k) for k in kinds[1:]] + ([(kinds[1], kinds[2])] if before else [])
    lines = [
        f"{'op':<10}{'c':>4}"
        + "".join(f"{k + ' /s':>15}{'µs':>6}{'sys':>5}" for k in kinds)
        + "".join(f"{f'{b}/{a} rate, cpu (pairs)':>34}" for a, b in pairs)
    ]
    for i, (op, c) in enumerate(plan):
        line = f"{op:<10}{c:>4}"
        for k in kinds:
            got = runs[k][i]
            line += (
                f"{statistics.median(m['rate'] for m in got):>15.0f}"
                f"{statistics.median(m['cpu_us_per_op'] for m in got):>6.0f}"
                f"{statistics.median(m['sys_share'] for m in got):>5.0%}"
            )
        for a, b in pairs:
            rates = sorted(
                y["rate"] / x["rate"] for x, y in zip(runs[a][i], runs[b][i], strict=True)
            )
            cpus = sorted(
                y["cpu_us_per_op"] / x["cpu_us_per_op"]
                for x, y in zip(runs[a][i], runs[b][i], strict=True)
            )
            line += (
                f"{statistics.median(rates):>10.2f}, {statistics.median(cpus):.2f}"
                f" ({cpus[0]:.2f}-{cpus[-1]:.2f})"
            ).rjust(34)
        lines.append(line)
    lines.append(
        "b/a: the medians of the paired ratios (each pair measured back to back), the CPU ratios' "
        "range in brackets; sys: the system's share of the CPU"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--server",
        choices=[
            "toolnexus",
            "toolnexus-watched",
            "toolnexus-wire",
            "toolnexus-metrics",
            "bare",
            "sdk",
        ],
    )
    ap.add_argument(
        "--sdk",
        action="store_true",
        help="the official a2a-sdk server beside them (the test extra's a2a-sdk)",
    )
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument(
        "--tasks", type=int, default=20000, help="tasks created to measure memory per task"
    )
    ap.add_argument(
        "--repeat", type=int, default=3, help="measure each server this many times (medians kept)"
    )
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument(
        "--memory-only", action="store_true", help="measure only the memory per retained task"
    )
    ap.add_argument(
        "--wire",
        action="store_true",
        help="measure only the inbound wire recorder's cost (off vs on)",
    )
    ap.add_argument(
        "--metrics",
        action="store_true",
        help="measure only the Prometheus metrics' cost (off vs on)",
    )
    ap.add_argument(
        "--before",
        metavar="DIR",
        help="paired: the bare ceiling, the toolnexus package in DIR (another build, e.g. a "
        "detached worktree of main) and this tree's, each workload on all three in turn",
    )
    ap.add_argument(
        "--only",
        metavar="OPS",
        help="with --wire, --metrics or --before: only these workloads (e.g. card,get)",
    )
    ap.add_argument(
        "--no-pin", action="store_true", help="let the servers and the load share every core"
    )
    args = ap.parse_args()
    import uvloop

    if args.server:
        uvloop.run(_run_server(args.server))
        return
    if args.no_pin:
        os.environ["TOOLNEXUS_BENCH_PIN"] = "0"
    cpus = _cpus()
    if cpus is not None:  # the load generator here, each server on the last core
        os.sched_setaffinity(0, cpus[0])
    if args.memory_only:
        print(uvloop.run(_memory_only(args.tasks)))
        return
    if args.wire or args.metrics:
        kinds = (
            ("toolnexus-watched", "toolnexus-wire")
            if args.wire
            else ("toolnexus", "toolnexus-metrics")
        )
        print(uvloop.run(_paired_cost(kinds, args.seconds, args.repeat, args.only)))
        return
    if args.before:
        plan = [("card", 64), ("get", 64), ("get", 16), ("blocking", 16), ("blocking", 64)]
        print(f"load average at start: {_load()}", flush=True)
        before = str(Path(args.before).resolve())
        print(
            uvloop.run(
                _paired_cost(
                    ("bare", BEFORE, "toolnexus"),
                    args.seconds,
                    args.repeat,
                    args.only,
                    before,
                    plan,
                )
            )
        )
        print(f"load average at end: {_load()}")
        return
    print(f"load average at start: {_load()}", file=sys.stderr, flush=True)
    results = uvloop.run(_bench(args.seconds, args.tasks, args.repeat, args.sdk))
    results["load"] = {"end": _load()}
    results["first_call"] = _first_call(args.repeat)
    print(_report(results))
    print(f"load average at end: {results['load']['end']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
