"""Benchmark: a served task's lifecycle without HTTP, CPU per task.

Blocking ``message/send`` calls straight into the A2A endpoint (``A2AEndpoint.dispatch``: parse,
create, submitted -> working -> completed with an instant in-process model, the terminal save,
the rendered answer), in batches of --batch at once, on uvloop with the collector tuned as
``toolnexus serve`` tunes it. What an HTTP benchmark adds on top (uvicorn, the socket) is the same
for every request; this is the part that is the task's own, and it moves far less between runs on
a shared machine than a served benchmark does. Compare commits in one sitting:

    python bench/task_bench.py                      # this checkout
    PYTHONPATH=/path/to/other/checkout python bench/task_bench.py

Run: python bench/task_bench.py [--rounds 9] [--tasks 1920] [--batch 64]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any


async def _main(rounds: int, tasks: int, batch: int, metrics: bool) -> list[float]:
    import toolnexus as tn
    from toolnexus.http.server import serving_gc
    from toolnexus.protocol.dialects import Dialect
    from toolnexus.protocol.operations import OPERATIONS

    async def instant(request: dict[str, Any]) -> dict[str, Any]:
        return {"content": "ok", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}

    tk = await tn.create_toolkit(builtins=False)
    handle = await tk.serve(
        "127.0.0.1:0",
        client=tn.create_in_process_client(instant),
        a2a=tn.A2AConfig(name="bench", description="bench"),
        metrics=metrics,
    )
    serving_gc()
    endpoint = handle.a2a
    sent = 0

    async def one() -> None:
        nonlocal sent
        sent += 1
        params = {
            "configuration": {"blocking": True},
            "message": {
                "kind": "message",
                "messageId": f"m{sent}",
                "role": "user",
                "parts": [{"kind": "text", "text": "hello"}],
            },
        }
        out = await endpoint.dispatch(OPERATIONS["send"], params, Dialect.V03, sent, None)
        assert out["status"]["state"] == "completed", out

    per_task = []
    try:
        for _ in range(rounds):
            t0 = time.process_time()
            for _ in range(tasks // batch):
                await asyncio.gather(*(one() for _ in range(batch)))
            per_task.append((time.process_time() - t0) / (tasks // batch * batch) * 1e6)
    finally:
        await handle.stop()
    return per_task


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--tasks", type=int, default=1920, help="tasks per round")
    ap.add_argument("--batch", type=int, default=64, help="sends at once")
    ap.add_argument(
        "--metrics",
        choices=["on", "off"],
        default="off",
        help="the Prometheus metrics (default off)",
    )
    args = ap.parse_args()
    import uvloop

    per_task = uvloop.run(_main(args.rounds, args.tasks, args.batch, args.metrics == "on"))
    print(
        f"CPU per blocking task, no HTTP: min {min(per_task):.1f} µs, median {statistics.median(per_task):.1f} µs "
        f"({args.rounds} rounds of {args.tasks}, {args.batch} at once, metrics {args.metrics})"
    )


if __name__ == "__main__":
    main()
