"""Benchmark: what a durable task costs: the file and PostgreSQL stores (at 1 and 2 workers)
beside the memory store, in one run.

Each configuration is ``toolnexus serve`` (the demo model: instant) in its own process(es):
``--store memory``, ``--store file:DIR`` (a fresh folder), ``--store postgresql://...`` and
``--store postgresql://... --workers 2``, on a private PostgreSQL cluster (Debian's postgresql
package, fsync off: a database's disk is not what is measured); and, for comparison, the official
a2a-sdk 1.3 server on its own ``DatabaseTaskStore`` (SQLAlchemy, asyncpg, a pool of 10 as ours;
its echo agent, tests/peers/sdk_server.py, as instant; JSON-RPC with its 0.3 compatibility on,
served by the same uvicorn stack; needs ``pip install -e '.[test,bench]'``). The load is
serve_bench.py's raw keep-alive client in this process, at concurrency ``--concurrency`` (64),
``--seconds`` each: send+poll (polled again at once: ``roundtrip``; polled as a client's watch
does, pauses from 10 ms growing by half: ``paced``), blocking sends, GetTask of a finished task
and card GETs, alternated over ``--repeat`` rounds, medians kept. Server CPU is that of the toolnexus processes (the supervisor's workers) and,
separately, of its database cluster's processes (not the other clusters on the machine), per task; the database's statements (round trips)
per task and per poll, counted by pg_stat_statements, with the costliest listed. Also: how long a cancel sent to one worker
takes to stop the run on another (two workers in this process, the time until the run is gone).

Both ways of polling are measured, each repetition all stores in turn (the order rotated), and
each durable store's CPU per task is set against the memory store's of the same repetition
(paired), their median and range printed. Which one a user meets: ``paced``, or fewer polls
still. A client polls with pauses: ours (``A2AClient.follow``, so ``toolnexus send``, the TUI and
the notebook) streams where the agent does, else polls at once and then after 1 s, 1.5 s, ... up
to 5 s; the official SDKs' clients stream or block rather than poll. ``paced`` (10 ms growing by
half) polls denser than any of them; ``roundtrip`` is the worst case, a client polling again the
moment an answer comes, kept because it measures what a poll costs. With two cores or more, the servers run on the last core and the
load on the others (``TOOLNEXUS_BENCH_PIN=0``: unpinned); the database is not pinned.

Run: python bench/pg_bench.py [--seconds 3] [--repeat 2] [--concurrency 64] [--no-sdk]
     [--only memory,postgresql]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from serve_bench import Conn, _cpu_seconds, _worker  # noqa: E402

from tests.postgres import Postgres, binaries  # noqa: E402


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += _cpu_seconds(pid)
        except OSError:
            pass
    return total


def _postgres_pids(pg: Postgres) -> list[int]:
    """Its cluster's processes (the postmaster and its children, the backends), as they are now:
    not other clusters running on the machine (other developers' tests)."""
    postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
    return [postmaster, *_children(postmaster)]


async def _statements(dsn: str, reset: bool) -> dict[str, int]:
    """The calls of each statement on database ``dsn`` since the last reset (then reset)."""
    import asyncpg

    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        rows = await connection.fetch(
            "SELECT query, calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database "
            "WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'"
        )
        if reset:
            await connection.execute("SELECT pg_stat_statements_reset()")
    finally:
        await connection.close()
    return {r["query"]: r["calls"] for r in rows}


async def _measure(
    url: str,
    op: str,
    concurrency: int,
    seconds: float,
    server: list[int],
    db: Callable[[], list[int]],
    dsn: str | None,
    label: str = "",
) -> dict[str, float]:
    host, port = url.split("//")[1].split(":")
    conns = [Conn(host, int(port)) for _ in range(concurrency)]
    for c in conns:
        await c.open()
    latencies: list[float] = []
    counts = {"ops": 0, "polls": 0}
    if dsn is not None:
        await _statements(dsn, reset=True)
    cpu0, db0, t0 = _cpu(server), _cpu(db()), time.perf_counter()
    stop_at = t0 + seconds
    await asyncio.gather(*(_worker(c, op, stop_at, latencies, counts) for c in conns))
    elapsed = time.perf_counter() - t0
    cpu, dbcpu = _cpu(server) - cpu0, _cpu(db()) - db0
    for c in conns:
        c.close()
    latencies.sort()
    n = max(counts["ops"], 1)  # none finished in time (a server starved by the machine's load)
    calls = await _statements(dsn, reset=True) if dsn is not None else {}
    for query, count in calls.items():
        _STATEMENTS.setdefault(f"{label} {op}", {}).setdefault(query, []).append(count / n)
    return {
        "per_s": n / elapsed,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "cpu_us": cpu / n * 1e6,
        "db_us": dbcpu / n * 1e6,
        "polls": counts["polls"] / n,
        "trips": sum(calls.values()) / n,
    }


_STATEMENTS: dict[str, dict[str, list[float]]] = {}
"""'<store> <op>' -> statement -> its calls per operation, one entry per measurement of a PostgreSQL store."""


async def _serve_sdk(dsn: str) -> None:
    """The official a2a-sdk server on its DatabaseTaskStore at ``dsn`` (run as ``--sdk-server DSN``),
    saying where and when it is ready as ``toolnexus serve --json`` does."""
    from a2a.server.tasks import DatabaseTaskStore
    from sqlalchemy.ext.asyncio import create_async_engine

    from tests.peers.sdk_server import sdk_server

    engine = create_async_engine(
        dsn.replace("postgresql://", "postgresql+asyncpg://", 1), pool_size=10, max_overflow=0
    )
    store = DatabaseTaskStore(engine)
    await store.initialize()
    async with sdk_server(compat=True, task_store=store) as url:
        print(
            json.dumps({"event": "started", "url": url}),
            json.dumps({"event": "ready"}),
            sep="\n",
            flush=True,
        )
        await asyncio.Event().wait()


STARTED_ON = sorted(os.sched_getaffinity(0))
"""The cores this process could run on when it started: the bench pins itself to the load's
cores before it starts the servers, so the cores are read once, not after (which left every
server on the load's core)."""


def _cores() -> tuple[set[int], set[int]] | None:
    """(the load's cores, the servers' core), or None when not pinned."""
    mine = STARTED_ON
    if len(mine) < 2 or os.environ.get("TOOLNEXUS_BENCH_PIN") == "0":
        return None
    return set(mine[:-1]), {mine[-1]}


def _pin(pids: list[int]) -> None:
    cores = _cores()
    for pid in pids if cores is not None else ():
        for thread in Path(f"/proc/{pid}/task").iterdir():
            try:
                os.sched_setaffinity(int(thread.name), cores[1])
            except OSError:
                pass


def _start(store: str, workers: int) -> tuple[subprocess.Popen[str], str]:
    args = [sys.executable, "-m", "toolnexus.cli", "serve", "--json", "--store", store]
    if workers == 0:  # the official SDK's server on its own database store
        args = [sys.executable, __file__, "--sdk-server", store]
    if workers > 1:
        args += ["--workers", str(workers)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    url, ready, up = "", 0, False
    while not (up and (workers == 1 or ready == workers)):
        event = json.loads(proc.stdout.readline())
        url = event.get("url", url) if event["event"] == "started" else url
        ready += event["event"] == "worker-ready"
        up = up or event["event"] == "ready"
    # drain its output so that it never blocks on a full pipe
    asyncio.get_running_loop().run_in_executor(None, lambda: [None for _ in proc.stdout])
    return proc, url


async def _cancel_latency(dsn: str, n: int = 20) -> list[float]:
    import toolnexus as tn

    handles = []
    for _ in range(2):
        tk = await tn.create_toolkit(builtins=False)
        handles.append(
            await tk.serve(
                "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="bench", store=dsn)
            )
        )
    one, two = handles
    out = []
    async with tn.A2AClient(one.url) as a, tn.A2AClient(two.url) as b:
        for _ in range(n):
            task = await a.send("slow 30")
            while task.id not in one.runner._runs:  # noqa: SLF001
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.05)
            await b.cancel(task.id)
            t0 = time.perf_counter()
            while task.id in one.runner._runs:  # noqa: SLF001
                await asyncio.sleep(0.0005)
            out.append((time.perf_counter() - t0) * 1000)
    for h in handles:
        await h.stop()
    return out


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def main(
    seconds: float,
    repeat: int,
    concurrency: int,
    sdk: bool = True,
    only: list[str] | None = None,
    cancel: bool = True,
) -> None:
    # the demo model instant, as this bench means it: since 5119dd1 it says its words 50 ms apart,
    # so a task took a second and a send+poll was its polls (7 a task on the memory store)
    os.environ["TOOLNEXUS_DEMO_PACE"] = "0"
    pg = Postgres(binaries(), settings=("shared_preload_libraries=pg_stat_statements",))
    folder = tempfile.mkdtemp(prefix="toolnexus-bench-")
    try:
        configs = [
            ("memory", "memory", 1),
            ("file", f"file:{folder}", 1),
            ("postgresql", pg.database(), 1),
            ("postgresql x2", pg.database(), 2),
        ]
        if sdk:
            configs.append(("a2a-sdk pg", pg.database(), 0))
        if only:
            configs = [c for c in configs if c[0] in only]
        cores = _cores()
        if cores is not None:
            os.sched_setaffinity(0, cores[0])
        rows: dict[tuple[str, str], list[dict[str, float]]] = {}
        for rep in range(repeat):
            print(f"repetition {rep + 1}: load average {_load()}", flush=True)
            k = rep % len(configs)
            for name, store, workers in configs[k:] + configs[:k]:
                proc, url = _start(store, workers)
                try:
                    server = [proc.pid, *_children(proc.pid)]
                    _pin(server)
                    db = (lambda: _postgres_pids(pg)) if store.startswith("postgresql") else list
                    dsn = store if store.startswith("postgresql") else None
                    for op in ("roundtrip", "paced", "blocking", "get", "card"):
                        rows.setdefault((name, op), []).append(
                            await _measure(url, op, concurrency, seconds, server, db, dsn, name)
                        )
                finally:
                    proc.send_signal(signal.SIGINT)
                    proc.wait(30)
        print(
            f"c={concurrency}, medians of {repeat}; polls and DB statements per operation; "
            f"load average at the end {_load()}"
        )
        print(
            f"{'store':14} {'op':10} {'tasks/s':>8} {'p99 ms':>7} {'CPU µs/task':>12} {'DB CPU µs/task':>15} "
            f"{'polls':>6} {'DB stmts':>9}"
        )
        for (name, op), runs in rows.items():
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(
                f"{name:14} {op:10} {med['per_s']:8.0f} {med['p99_ms']:7.1f} {med['cpu_us']:12.0f} "
                f"{med['db_us']:15.0f} {med['polls']:6.2f} {med['trips']:9.2f}"
            )
        print(
            "server CPU per task against the memory store's, paired by repetition: median "
            "(range); a user meets 'paced' (clients poll with pauses), 'roundtrip' is a client "
            "polling with none"
        )
        for name, _store, _workers in configs:
            if name == "memory" or ("memory", "paced") not in rows:
                continue
            cells = []
            for op in ("paced", "roundtrip", "blocking"):
                pairs = sorted(
                    r["cpu_us"] / m["cpu_us"]
                    for r, m in zip(rows[(name, op)], rows[("memory", op)], strict=True)
                )
                cells.append(
                    f"{op} {statistics.median(pairs):5.2f}x ({pairs[0]:.2f}-{pairs[-1]:.2f})"
                )
            print(f"  {name:14} " + "  ".join(cells))
        for key, statements in _STATEMENTS.items():
            if key.split()[-1] not in ("roundtrip", "blocking") or key.startswith("postgresql x2"):
                continue
            print(f"statements per {key} (median):")
            for query, per in sorted(statements.items(), key=lambda kv: -statistics.median(kv[1]))[
                :8
            ]:
                if statistics.median(per) >= 0.01:
                    print(f"  {statistics.median(per):6.2f}  {' '.join(query.split())[:110]}")
        if not cancel:
            return
        latencies = sorted(await _cancel_latency(pg.database()))
        print(
            f"cancel on one worker to the run stopped on the other: p50 {statistics.median(latencies):.1f} ms, "
            f"max {latencies[-1]:.1f} ms over {len(latencies)}"
        )
    finally:
        pg.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--no-sdk", action="store_true", help="leave out the official a2a-sdk server")
    ap.add_argument("--sdk-server", metavar="DSN", help=argparse.SUPPRESS)
    ap.add_argument(
        "--only",
        metavar="NAMES",
        help="only these configurations, comma-separated (memory,file,postgresql,"
        "'postgresql x2','a2a-sdk pg'); memory is kept for the ratios",
    )
    ap.add_argument("--no-cancel", action="store_true", help="leave out the cancel latency")
    a = ap.parse_args()
    if a.sdk_server:
        asyncio.run(_serve_sdk(a.sdk_server))
    else:
        names = ["memory", *a.only.split(",")] if a.only else None
        asyncio.run(main(a.seconds, a.repeat, a.concurrency, not a.no_sdk, names, not a.no_cancel))
