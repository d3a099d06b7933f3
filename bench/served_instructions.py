"""Benchmark (not a test): what a served request costs the server, counted in instructions.

Wall-clock pairs on this machine move 20-40 % run to run; an instruction count does not. Each
server of ``serve_bench.py --server KIND`` runs under ``valgrind --tool=callgrind`` with its
counting off; once it is up and warmed (``--warm`` requests of each op), counting is switched on
(``callgrind_control -i on``), exactly ``--count`` requests of one op are sent one after another
(so the server's work does not depend on timing), counting is switched off, the counts dumped and the server stopped.
``--concurrency N``: over N connections at once, each sending its share one after another (a loop
turn of the server then takes several requests, as serve_bench's concurrency makes it; the work
per request moves a little with how they fall into turns). The connections are opened, and
``get``'s tasks made, before the window.
Instructions per request = the window's total / ``--count``. Both kinds are run for each op, one
after the other, ``--repeat`` times; the spread between repeats is the measurement's noise (the
event loop's idle ticks during the window, mostly).

``--before DIR`` measures a change instead: this tree's ``toolnexus`` and the one in DIR (another
build, e.g. ``git archive OLD toolnexus | tar -x -C DIR``), each served as ``toolnexus``, one
after the other for every op and repeat; the ratio is this tree's over DIR's.

Ops: ``blocking`` (a 0.3 ``message/send``, blocking), ``blocking10`` (a 1.0 ``SendMessage``, its
message in 1.0's shapes, not returning immediately), ``get`` (``tasks/get`` of a finished task),
``card``.

``--store postgresql`` serves on a private PostgreSQL cluster (tests/postgres.py), a fresh database
for each server: a durable task's instructions, the database's own not counted.

Run: python bench/served_instructions.py [--kinds toolnexus,toolnexus-metrics] [--ops blocking,get,card]
     python bench/served_instructions.py --kinds bare,toolnexus --ops get --concurrency 64
     python bench/served_instructions.py --before DIR [--ops blocking,blocking10,get]
     python bench/served_instructions.py --before DIR --store postgresql --ops blocking --count 500
(about a minute a run under valgrind; needs valgrind's callgrind_control on PATH)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
BEFORE = "before"
"""The kind ``--before`` adds: ``toolnexus`` served from another build's package."""

from serve_bench import CARD, Conn, _send_body  # noqa: E402

from tests.postgres import Postgres, binaries  # noqa: E402


def _send10() -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {
                    "messageId": str(uuid.uuid4()),
                    "role": "ROLE_USER",
                    "parts": [{"text": "hello bench"}],
                },
            },
        }
    ).encode()


async def _session(
    url: str, op: str, warm: int, count: int, concurrency: int, counted: Callable[[bool], None]
) -> None:
    """``warm`` then ``count`` requests of ``op``, counting switched on (``counted(True)``) for the
    second only, over ``concurrency`` connections opened first, each sending its share one after
    another (at once: a loop turn of the server takes several requests, as serve_bench's
    concurrency makes it). For ``get``, each connection's task is made first, outside the window."""
    host, port = url.split("//", 1)[1].rstrip("/").split(":")
    conns = [Conn(host, int(port)) for _ in range(concurrency)]
    for conn in conns:
        await conn.open()
    finished = [await _finished(conn) if op == "get" else b"" for conn in conns]

    async def round_of(total: int) -> None:
        share, extra = divmod(total, concurrency)
        await asyncio.gather(
            *(
                _requests(conn, op, share + (i < extra), body)
                for i, (conn, body) in enumerate(zip(conns, finished, strict=True))
            )
        )

    await round_of(warm)
    counted(True)
    await round_of(count)
    counted(False)
    for conn in conns:
        conn.close()


async def _finished(conn: Conn) -> bytes:
    """A ``tasks/get`` of a task made now by a blocking send (finished when answered)."""
    done = json.loads(await conn.request("POST", "/", _send_body(True)))
    return json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": done["result"]["id"]}}
    ).encode()


async def _requests(conn: Conn, op: str, count: int, finished: bytes) -> None:
    for _ in range(count):
        if op == "card":
            await conn.request("GET", CARD)
        elif op == "get":
            await conn.request("POST", "/", finished)
        elif op == "blocking10":
            out = json.loads(await conn.request("POST", "/", _send10()))
            assert out["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", out
        else:
            out = json.loads(await conn.request("POST", "/", _send_body(True)))
            assert out["result"]["status"]["state"] == "completed", out


def _control(pid: int, *args: str) -> None:
    subprocess.run(
        ["callgrind_control", *args, str(pid)], check=True, capture_output=True, timeout=120
    )


def measure(
    kind: str,
    op: str,
    warm: int,
    count: int,
    before: str | None = None,
    store: str = "memory",
    concurrency: int = 1,
) -> float:
    """Instructions the server spent per request over ``count`` requests of ``op`` (kind
    ``before``: ``toolnexus`` from the package in ``before``; else from this tree), its tasks
    kept in ``store``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        code = before if kind == BEFORE else str(HERE.parent)
        env = {
            **os.environ,
            "PYTHONHASHSEED": "0",
            "PYTHONMALLOC": "malloc",
            "PYTHONPATH": code,
            "TOOLNEXUS_BENCH_STORE": store,
        }
        if kind == BEFORE:
            kind = "toolnexus"
        server = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                f"--callgrind-out-file={out}",
                sys.executable,
                str(HERE / "serve_bench.py"),
                "--server",
                kind,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            if not url.startswith("http"):
                raise RuntimeError(f"{kind} did not start under valgrind")
            asyncio.run(
                _session(
                    url,
                    op,
                    warm,
                    count,
                    concurrency,
                    lambda on: _control(server.pid, "-i", "on" if on else "off"),
                )
            )
            _control(server.pid, "--dump")
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        total = 0
        for dump in Path(tmp).glob("callgrind.out*"):
            found = re.search(r"^totals: (\d+)", dump.read_text(errors="replace"), re.M)
            total += int(found.group(1)) if found else 0
        return total / count


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kinds", default="toolnexus,toolnexus-metrics")
    ap.add_argument("--ops", default="blocking,get,card")
    ap.add_argument("--warm", type=int, default=200)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="connections sending at once, each its share of --count one after another",
    )
    ap.add_argument("--store", choices=("memory", "postgresql"), default="memory")
    ap.add_argument(
        "--before",
        metavar="DIR",
        help="measure this tree's toolnexus against the package in DIR (another build), paired",
    )
    a = ap.parse_args()
    kinds = [BEFORE, "toolnexus"] if a.before else a.kinds.split(",")
    before = str(Path(a.before).resolve()) if a.before else None
    print(
        f"instructions per request over {a.count} requests on {a.concurrency} connection(s), "
        f"after {a.warm} to warm"
    )
    print(
        f"{'op':<10}"
        + "".join(f"{k:>20}" for k in kinds)
        + (f"{'ratio':>9}" if len(kinds) == 2 else "")
    )
    pg = Postgres(binaries()) if a.store == "postgresql" else None
    try:
        for op in a.ops.split(","):
            for _ in range(a.repeat):
                got = [
                    measure(
                        k,
                        op,
                        a.warm,
                        a.count,
                        before,
                        pg.database() if pg else "memory",
                        a.concurrency,
                    )
                    for k in kinds
                ]
                ratio = f"{got[1] / got[0]:>9.3f}" if len(got) == 2 else ""
                print(f"{op:<10}" + "".join(f"{g:>20,.0f}" for g in got) + ratio, flush=True)
    finally:
        if pg is not None:
            pg.close()


if __name__ == "__main__":
    main()
