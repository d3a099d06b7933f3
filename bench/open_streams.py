"""Benchmark: ten thousand slow streams held open by one ``toolnexus serve`` process (issue 65 item 3).

One server process, ``toolnexus serve`` itself (``cli.main``: its uvloop, collector tuning, raised
open-file limit and connection limit), serving an empty toolkit whose model is in-process: it says
``count`` words ``gap`` seconds apart, each stamped with the moment it is said (``@<monotonic
ns>;``, read back by the caller as ``stream_bench.py`` does). The model is in-process because a
model reached over HTTP holds a descriptor per stream too: 10,000 streams would need 20,000 of the
20,000 this machine allows a process (see ``http.server.connections_for``).

Pinned: the server on the last core, the callers on the others. Each round, one after the other
(a round per ``--repeat``, so the machine's load falls on each phase alike):

1. ``quiet``: 64 fast streams (a word every 50 ms, 20 words) back to back for ``--seconds``, from
   a caller process of their own (``stream_bench.py --load``): their p99 word delay, the server's
   CPU per word;
2. ``--open`` slow streams (a word every ``--gap`` seconds) opened by a second caller process,
   their starts spread over ``--ramp`` seconds, and held: the server's RSS then, minus its RSS
   before, per open stream;
3. ``loaded``: the same 64 fast streams while they are all open (once the server holds them all,
   up to :data:`OPEN_WAIT` seconds after the ramp: a server short of CPU leaves some in the
   kernel's accept queue, and a connection made then waits behind them, first in first out);
4. the slow streams run to their end: how many failed (an error, a cut, a word missing), their own
   p99 word delay.

Run: python bench/open_streams.py [--open 10000] [--gap 5] [--ramp 30] [--seconds 10] [--repeat 2]
     [--before DIR] [--json out.json]   (DIR: another build's toolnexus package, measured the
same way in the same round, for a paired before/after; ``git archive COMMIT toolnexus | tar -x -C
DIR``)

With ``--hold SECONDS``: no fast streams; the server's CPU while the slow streams are held, as a
share of a core and per slow word (with TOOLNEXUS_BENCH_PROFILE=PATH: a cProfile of that window,
CPU time, in PATH.open.PID). ``--gap 1000``: idle streams (what holding one costs: its pings, its
timers).

With ``--grpc``: the server serves the gRPC binding too, and the slow streams are gRPC calls
(``SendStreamingMessage``, grpcio and the official stubs), all on one channel of their caller
process: what a server holding gRPC streams does to its other streams (at most ``MAX_CONNECTIONS``,
1,000, gRPC calls at once: past that they are refused). The fast streams stay JSON-RPC over HTTP.
Their "open" count is then the calls whose first word came (a gRPC call holds no descriptor of its
own, so the server's descriptors say nothing of them).

With ``--nice -10`` (root): the server and the callers run ahead of the machine's other processes,
so that on a shared machine each has about its core to itself.

With TOOLNEXUS_BENCH_GCLOG=PATH: the server's collections while the slow streams are held alone
and while the fast streams run among them (how many, their CPU, the longest pause), from the
server's collector log (``stream_bench._profiled``), read after the loaded phase; and while the
slow streams end (read again once they have: the serving collector's last full collection, when
they fall under half its threshold, lands there).

With ``--tracemalloc N``: no bench; the server traces its allocations, N slow streams are opened,
and the largest allocation sites (by line, and by traceback of 12 frames) per open stream are
printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.request
from pathlib import Path
from typing import Any

import uvloop

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("TOOLNEXUS_BENCH_CODE") or str(ROOT))  # see --before
sys.path.insert(1, str(Path(__file__).resolve().parent))

import stream_bench as sb  # noqa: E402  # the callers, stamps and /proc readings, shared

FAST = "gap=0.05 count=20"


# ---------------------------------------------------------------------------------------------
# the server


async def _stamped(request: dict[str, Any]) -> Any:
    """The in-process model: ``count`` stamped words ``gap`` seconds apart (the user's text says
    ``gap=SECONDS count=N``), then its usage."""
    gap, count = sb.pacing(str(request["messages"][-1].get("content") or ""))
    async for _ in sb.paced(gap, count):
        yield f" @{time.monotonic_ns()};"
    yield {"usage": {"prompt_tokens": 12, "completion_tokens": count, "total_tokens": 12 + count}}


def _server(limit: int, trace: int, grpc: bool) -> None:
    """``toolnexus serve --json`` with the in-process model, its connection limit ``limit`` (and
    the gRPC binding, on a port of its own, with ``grpc``)."""
    import toolnexus.cli as cli
    import toolnexus.cli.serve as serve_command
    from toolnexus import create_in_process_client

    if trace:
        tracemalloc.start(12)

        def dump(*_: Any) -> None:
            Path(os.environ["TOOLNEXUS_BENCH_TRACE"]).write_bytes(
                pickle.dumps(tracemalloc.take_snapshot())
            )

        signal.signal(signal.SIGUSR1, dump)
    header = os.environ.get("TOOLNEXUS_BENCH_HEADER_TIMEOUT")  # --header-timeout
    if header:
        import toolnexus.serve.app as app

        app.serve.__kwdefaults__["header_timeout"] = float(header)
    serve_command.build_client = lambda *_, **__: create_in_process_client(_stamped, "stamped")  # type: ignore[assignment]  # the bench's model
    config = Path(tempfile.mkdtemp()) / "toolkit.json"
    config.write_text("{}")
    argv = ["serve", "--config", str(config), "--json", "--drain", "0"]
    if grpc:
        argv += ["--grpc", "127.0.0.1:0"]
    if not trace:
        sb._profiled("open")  # TOOLNEXUS_BENCH_PROFILE: cProfile (CPU time), see --hold
    sys.exit(cli.main([*argv, "--max-connections", str(limit)]))


def _start(
    code: str | None, limit: int, cores: set[int] | None, trace: str = "", grpc: bool = False
) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ)
    env.pop("TOOLNEXUS_BENCH_CODE", None)
    if code:
        env["TOOLNEXUS_BENCH_CODE"] = code
    if trace:
        env["TOOLNEXUS_BENCH_TRACE"] = trace
    proc = subprocess.Popen(
        [sys.executable, __file__, "--role", "server", "--limit", str(limit)]
        + (["--trace"] if trace else [])
        + (["--grpc"] if grpc else []),
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
        preexec_fn=sb._die_with_parent,
    )
    if cores is not None:
        os.sched_setaffinity(proc.pid, cores)
    _favour(proc.pid)
    assert proc.stdout is not None
    url = sb._url(proc)
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return proc, url


# ---------------------------------------------------------------------------------------------
# the callers, each phase a process of its own


NICE = 0
"""--nice: the niceness given the server and the callers (below 0: ahead of the machine's other
processes; root only)."""


def _favour(pid: int) -> None:
    if NICE:
        os.setpriority(os.PRIO_PROCESS, pid, NICE)


def _callers(
    url: str, n: int, seconds: float, text: str, spread: float, grpc: bool = False
) -> subprocess.Popen[str]:
    """``n`` callers streaming ``text`` for ``seconds`` (starts spread over ``spread``), in a
    process of their own; it prints their outcome as JSON when done. ``grpc`` (with ``seconds``
    0): each one gRPC call, all on one channel."""
    proc = _spawn_callers(url, n, seconds, text, spread, grpc)
    _favour(proc.pid)
    return proc


def _spawn_callers(
    url: str, n: int, seconds: float, text: str, spread: float, grpc: bool
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--role",
            "callers",
            "--url",
            url,
            "--open",
            str(n),
            "--seconds",
            str(seconds),
            "--text",
            text,
            "--ramp",
            str(spread),
        ]
        + (["--grpc"] if grpc else []),
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        preexec_fn=sb._die_with_parent,
    )


def _run_callers(args: argparse.Namespace) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sb.STREAM_TIMEOUT = 900.0  # a slow stream lasts minutes
    if args.seconds > 0:
        outcomes = uvloop.run(sb._streams(args.url, args.open, args.seconds, args.text, args.ramp))
    elif args.grpc:  # grpcio's asyncio runs on asyncio's own loop
        outcomes = asyncio.run(_once_grpc(args.url, args.open, args.text, args.ramp))
    else:
        outcomes = uvloop.run(_once(args.url, args.open, args.text, args.ramp))
    delays = sorted(d / 1e6 for o in outcomes for d in o.delays)
    ttfts = sorted(o.ttft / 1e6 for o in outcomes if o.ttft is not None)
    whys: dict[str, int] = {}
    for o in outcomes:
        if o.failed:
            whys[o.why[:80]] = whys.get(o.why[:80], 0) + 1
    print(
        json.dumps(
            {
                "streams": len(outcomes),
                "started": sum(o.ttft is not None for o in outcomes),  # a first word came
                "failed": sum(o.failed for o in outcomes),
                "why": whys,
                "words": len(delays),
                "p50_ms": sb._pct(delays, 0.5),
                "p99_ms": sb._pct(delays, 0.99),
                "p999_ms": sb._pct(delays, 0.999),  # a pause of the server's: ~0.1 % of words
                "max_ms": delays[-1] if delays else float("nan"),
                "ttft_p50_ms": sb._pct(ttfts, 0.5),
                "ttft_p99_ms": sb._pct(ttfts, 0.99),
            }
        ),
        flush=True,
    )


async def _once(url: str, n: int, text: str, spread: float) -> list[sb.Outcome]:
    """``n`` callers, each one stream of ``text`` on a connection of its own, the starts spread
    over ``spread`` seconds."""
    hostport = url.removeprefix("http://")
    host, port = hostport.split(":")

    async def caller(i: int) -> sb.Outcome:
        await asyncio.sleep(spread * i / n)
        try:
            conn = await sb._connect(host, int(port))
        except OSError as exc:
            failed = sb.Outcome()
            failed.failed, failed.why = True, f"connect: {exc}"
            return failed
        try:
            return await conn.stream(hostport, sb._send(text), sb._expected(text))
        finally:
            if conn.transport is not None:
                conn.transport.close()

    return await asyncio.gather(*(caller(i) for i in range(n)))


async def _once_grpc(url: str, n: int, text: str, spread: float) -> list[sb.Outcome]:
    """``n`` callers, each one gRPC stream of ``text`` (``SendStreamingMessage``), all on one
    channel to the gRPC port the card at ``url`` names, the starts spread over ``spread``
    seconds."""
    from toolnexus.protocol.grpc_binding import modules, target_of  # noqa: PLC0415  # optional extra: grpc, the --grpc callers' alone

    grpc, pb, pb_grpc = modules()
    card = json.loads(urllib.request.urlopen(url + "/.well-known/agent-card.json").read())
    target = next(
        target_of(i["url"]) for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"
    )
    expected = sb._expected(text)

    async def caller(stub: Any, i: int) -> sb.Outcome:
        await asyncio.sleep(spread * i / n)
        out, seen = sb.Outcome(), set()
        message = pb.Message(message_id=f"m{i}", role=pb.ROLE_USER, parts=[pb.Part(text=text)])
        sent = time.monotonic_ns()
        try:
            async for event in stub.SendStreamingMessage(pb.SendMessageRequest(message=message)):
                now = time.monotonic_ns()
                for stamp in sb.STAMP.findall(event.SerializeToString()):
                    if stamp not in seen:
                        seen.add(stamp)
                        out.delays.append(now - int(stamp))
                        out.words += 1
                        if out.ttft is None:
                            out.ttft = now - sent
        except grpc.aio.AioRpcError as exc:
            out.failed, out.why = True, f"{exc.code().name}: {exc.details()}"
            return out
        if out.words < expected:
            out.failed, out.why = True, f"{out.words} of {expected} words"
        return out

    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.A2AServiceStub(channel)
        return await asyncio.gather(*(caller(stub, i) for i in range(n)))


async def _fast(url: str, pid: int, seconds: float, cores: set[int] | None) -> dict[str, Any]:
    """The 64 fast streams: their outcome and the server's CPU per word meanwhile."""
    cpu0 = sb._cpu_seconds(pid)
    proc = _callers(url, 64, seconds, FAST, 1.0)
    if cores is not None:
        os.sched_setaffinity(proc.pid, cores)
    out, _ = await asyncio.to_thread(proc.communicate)
    row = json.loads(out)
    row["cpu_us_per_word"] = (sb._cpu_seconds(pid) - cpu0) / max(row["words"], 1) * 1e6
    return row


OPEN_WAIT = 30.0
"""Seconds the loaded phase waits after the ramp for every slow stream to be open (the accept
queue drained): the other streams are measured with all of them held, not queued behind them."""


LIMIT_SPARE = 1000
"""The server's connection limit is the slow streams and this many: the fast streams' connections,
each closed one counted until the server has seen it close."""

HELD = 5.0
"""Seconds the server's CPU is read with the slow streams alone open, before the loaded phase."""


def _connections(pid: int) -> int:
    """The server's open connections (its descriptors but the few it holds for itself)."""
    return len(os.listdir(f"/proc/{pid}/fd")) - 15


def _tcp() -> dict[str, int]:
    """The machine's TCP counters that say why connections broke (the whole machine's: shared)."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    names, values = lines[0].split(), lines[1].split()
    keep = ("ListenOverflows", "TCPAbortOnClose", "TCPAbortOnData")
    return {n: int(v) for n, v in zip(names, values, strict=True) if n in keep}


async def _round(
    name: str, url: str, pid: int, args: argparse.Namespace, cores: Any
) -> dict[str, Any]:
    side = cores[0] if cores else None
    await asyncio.sleep(1.0)
    quiet = await _fast(url, pid, args.seconds, side)
    idle = sb._rss_kib(pid)
    words = int((args.ramp + args.seconds + 10 + OPEN_WAIT + HELD) / args.gap) + 2
    text = f"gap={args.gap} count={words}"
    began, cpu0, tcp0 = time.monotonic(), sb._cpu_seconds(pid), _tcp()
    slow = _callers(url, args.open, 0, text, args.ramp, args.grpc)  # each caller one stream
    if side is not None:
        os.sched_setaffinity(slow.pid, side)
    await asyncio.sleep(args.ramp + 2.0)
    opening = sb._cpu_seconds(pid) - cpu0  # the starts, and the slow words so far
    ramped = time.monotonic()
    while not args.grpc and time.monotonic() - ramped < OPEN_WAIT and _connections(pid) < args.open:
        await asyncio.sleep(0.5)  # those still in the accept queue (a server short of CPU)
    backlog = time.monotonic() - ramped
    opened = _connections(pid)  # gRPC's calls: those whose first word came, known at their end
    held = sb._rss_kib(pid)
    cpu1, t1 = sb._cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(HELD)  # the slow streams alone
    held_share = (sb._cpu_seconds(pid) - cpu1) / (time.monotonic() - t1)
    t2 = time.monotonic()
    loaded = await _fast(url, pid, args.seconds, side)
    t3 = time.monotonic()
    pauses = await _pauses(pid)
    held = max(held, sb._rss_kib(pid))
    out, _ = await asyncio.to_thread(slow.communicate)
    t4 = time.monotonic()
    ending = await _pauses(pid)  # the collections while the slow streams ended
    slow_row = json.loads(out)
    slow_row["tcp"] = {k: v - tcp0[k] for k, v in _tcp().items()}
    if args.grpc:
        opened = slow_row["started"]
    row = {
        "server": name,
        "binding": "grpc" if args.grpc else "jsonrpc",
        "open": args.open,
        "idle_mib": idle / 1024,
        "kib_per_stream": (held - idle) / args.open,
        "quiet": quiet,
        "loaded": loaded,
        "slow": slow_row,
        "slow_seconds": time.monotonic() - began,
        "opening_cpu_s": opening,
        "opening_cpu_share": opening / (args.ramp + 2.0),
        "backlog_s": backlog,
        "held_cpu_share": held_share,
        "held_us_per_slow_word": held_share * args.gap / max(opened, 1) * 1e6,
        "open_when_loaded": opened,
        "gc_opening": _collector(pauses, began, t1),
        "gc_held": _collector(pauses, t1, t2),
        "gc_loaded": _collector(pauses, t2, t3),
        "gc_ending": _collector(ending, t3, t4),
        "load": sb._load(),
    }
    print(
        f"  {name:<7} {args.open} open: {row['kib_per_stream']:6.1f} KiB each (idle {idle / 1024:.0f} MiB); "
        f"fast p99 quiet {quiet['p99_ms']:.1f} ms, loaded {loaded['p99_ms']:.1f} ms (p99.9 {quiet['p999_ms']:.1f}, {loaded['p999_ms']:.1f} ms; first word p50 "
        f"{quiet['ttft_p50_ms']:.0f}, {loaded['ttft_p50_ms']:.0f} ms; streams {quiet['streams']}, "
        f"{loaded['streams']}); "
        f"CPU/word quiet {quiet['cpu_us_per_word']:.0f} µs, loaded {loaded['cpu_us_per_word']:.0f} µs; "
        f"server CPU while opening {row['opening_cpu_share']:.0%} of a core; "
        f"{opened} open {backlog:.1f} s after the ramp; held: {held_share:.1%} of a core, "
        f"{row['held_us_per_slow_word']:.0f} µs per slow word; "
        f"fast failed {quiet['failed']}+{loaded['failed']}; slow failed {slow_row['failed']}/{slow_row['streams']} "
        f"(p99 {slow_row['p99_ms']:.1f} ms) {slow_row['why'] or ''} {slow_row['tcp']}; "
        f"{_said(row['gc_opening'], 'opening')}{_said(row['gc_held'], 'held')}{_said(row['gc_loaded'], 'loaded')}{_said(row['gc_ending'], 'ending')}load {row['load']}",
        file=sys.stderr,
        flush=True,
    )
    return row


async def _pauses(pid: int) -> list[list[float]]:
    """With TOOLNEXUS_BENCH_GCLOG=PATH, the server's collections so far (``stream_bench._profiled``:
    generation, when on the monotonic clock, wall and CPU seconds), written on SIGUSR2."""
    gclog = os.environ.get("TOOLNEXUS_BENCH_GCLOG")
    if not gclog:
        return []
    path = Path(f"{gclog}.open")
    path.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR2)
    for _ in range(100):
        await asyncio.sleep(0.1)
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):  # not yet written, or half
            continue
    return []


def _collector(pauses: list[list[float]], began: float, ended: float) -> dict[str, Any]:
    """The collections between ``began`` and ``ended``: how many, their CPU (ms, and as a share of
    a core), the longest (on the wall clock, and by CPU), by generation and in all."""
    inside = [p for p in pauses if began <= p[1] <= ended]
    span = max(ended - began, 1e-9)
    return {
        "collections": len(inside),
        "cpu_ms": sum(p[3] for p in inside) * 1e3,
        "cpu_share": sum(p[3] for p in inside) / span,
        "longest_ms": max((p[2] for p in inside), default=0.0) * 1e3,
        "longest_cpu_ms": max((p[3] for p in inside), default=0.0) * 1e3,
        "by_generation": {
            g: [sum(1 for p in inside if p[0] == g), sum(p[3] for p in inside if p[0] == g) * 1e3]
            for g in (0, 1, 2)
        },
    }


def _said(gc_: dict[str, Any], phase: str) -> str:
    if not gc_["collections"]:
        return ""
    full = gc_["by_generation"][2]
    return (
        f"collector while {phase}: {gc_['collections']} collections, {gc_['cpu_ms']:.0f} ms CPU "
        f"({gc_['cpu_share']:.1%} of a core), longest {gc_['longest_ms']:.1f} ms "
        f"({gc_['longest_cpu_ms']:.1f} ms of CPU), "
        f"{full[0]} full ({full[1]:.0f} ms); "
    )


async def _bench(args: argparse.Namespace) -> list[dict[str, Any]]:
    cores = sb._cores()
    rows = []
    builds = [("ours", None)] + (
        [("before", str(Path(args.before).resolve()))] if args.before else []
    )
    for rep in range(args.repeat):
        print(f"repetition {rep + 1}: load average {sb._load()}", file=sys.stderr, flush=True)
        k = rep % len(builds)
        for name, code in builds[k:] + builds[:k]:
            proc, url = _start(
                code, args.open + LIMIT_SPARE, cores[1] if cores else None, grpc=args.grpc
            )
            try:
                sb_warm = _callers(url, 8, 1.0, FAST, 0.5)
                sb_warm.communicate()
                rows.append(await _round(name, url, proc.pid, args, cores))
            finally:
                proc.kill()
                proc.wait()
    return rows


async def _hold(args: argparse.Namespace) -> None:
    """``--hold SECONDS``: no fast streams. ``--open`` slow streams opened over ``--ramp`` and
    held; once all are open, the server's CPU over ``SECONDS``: its share of a core, and per slow
    word said meanwhile (``--gap`` apart each). With TOOLNEXUS_BENCH_PROFILE=PATH the server runs
    under cProfile (CPU time) and that window alone is written to PATH.open.PID."""
    builds = [("ours", None)] + (
        [("before", str(Path(args.before).resolve()))] if args.before else []
    )
    shares: dict[str, list[float]] = {name: [] for name, _ in builds}
    for rep in range(args.repeat):
        k = rep % len(builds)
        for name, code in builds[k:] + builds[:k]:
            shares[name].append(await _held(args, name, code))
    if args.before:
        pairs = sorted(a / b for a, b in zip(shares["ours"], shares["before"], strict=True))
        print(
            f"ours / before, CPU while held, paired by repetition: {', '.join(f'{r:.2f}' for r in pairs)}"
        )


async def _held(args: argparse.Namespace, name: str, code: str | None) -> float:
    profiled = bool(os.environ.get("TOOLNEXUS_BENCH_PROFILE"))  # else SIGUSR1 would end it
    cores = sb._cores()
    proc, url = _start(code, args.open + LIMIT_SPARE, cores[1] if cores else None)
    try:
        _callers(url, 8, 1.0, FAST, 0.5).communicate()
        await asyncio.sleep(1.0)
        cpu0, t0 = sb._cpu_seconds(proc.pid), time.monotonic()
        await asyncio.sleep(5.0)
        idle = (sb._cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - t0)
        words = int((args.ramp + args.hold + 20) / args.gap) + 2
        slow = _callers(url, args.open, 0, f"gap={args.gap} count={words}", args.ramp)
        if cores is not None:
            os.sched_setaffinity(slow.pid, cores[0])
        await asyncio.sleep(args.ramp + 5.0)
        for _ in range(120):  # all open (a profiled server starts them slower), or two minutes
            opened = len(os.listdir(f"/proc/{proc.pid}/fd"))
            if opened >= args.open:
                break
            await asyncio.sleep(1.0)
        await asyncio.sleep(2.0)
        if profiled:
            proc.send_signal(signal.SIGUSR1)  # the profile counts from here
        cpu0, t0, rss = sb._cpu_seconds(proc.pid), time.monotonic(), sb._rss_kib(proc.pid)
        await asyncio.sleep(args.hold)
        cpu, elapsed = sb._cpu_seconds(proc.pid) - cpu0, time.monotonic() - t0
        rss_end = sb._rss_kib(proc.pid)
        held_gc = _said(_collector(await _pauses(proc.pid), t0, t0 + elapsed), "held")
        if profiled:
            proc.send_signal(signal.SIGUSR1)  # ... to here
        said = args.open * elapsed / args.gap
        print(
            f"{name:<7} {args.open} slow streams, a word every {args.gap:g} s each ({said / elapsed:,.0f} "
            f"words/s), {opened} descriptors open, RSS {rss / 1024:.0f} MiB ({rss_end / 1024:.0f} MiB at "
            f"the end): the server's CPU "
            f"{cpu / elapsed:.1%} of a core ({cpu / said * 1e6:.0f} µs per slow word; idle before "
            f"them {idle:.1%}); {held_gc}load {sb._load()}",
            flush=True,
        )
        await asyncio.sleep(2.0)
        slow.kill()
        slow.wait()
        return cpu / elapsed
    finally:
        proc.kill()
        proc.wait()


async def _trace(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "snap")
        proc, url = _start(None, args.tracemalloc + 100, None, trace=path)
        try:
            _callers(url, 8, 1.0, FAST, 0.5).communicate()
            await asyncio.sleep(1.0)
            proc.send_signal(signal.SIGUSR1)
            await asyncio.sleep(2.0)
            before = pickle.loads(Path(path).read_bytes())
            slow = _callers(url, args.tracemalloc, 0, "gap=5 count=20", args.ramp)
            await asyncio.sleep(args.ramp + 3.0)
            for _ in range(120):  # all open, or two minutes
                if len(os.listdir(f"/proc/{proc.pid}/fd")) >= args.tracemalloc:
                    break
                await asyncio.sleep(1.0)
            print(f"{len(os.listdir(f'/proc/{proc.pid}/fd'))} descriptors open", flush=True)
            proc.send_signal(signal.SIGUSR1)
            await asyncio.sleep(3.0)
            after = pickle.loads(Path(path).read_bytes())
            slow.kill()
        finally:
            proc.kill()
            proc.wait()
    n = args.tracemalloc
    for key, limit in (("lineno", 30), ("traceback", 8)):
        stats = after.compare_to(before, key)
        total = sum(s.size_diff for s in stats)
        print(f"\n== by {key}: {total / n / 1024:.1f} KiB per open stream traced ==")
        for s in stats[:limit]:
            print(f"{s.size_diff / n:8.0f} B/stream {s.count_diff / n:6.1f} blocks  ", end="")
            if key == "lineno":
                print(s.traceback[0])
            else:
                print()
                for frame in s.traceback.format(most_recent_first=True)[:12]:
                    print("      " + frame)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", choices=["server", "callers"])
    ap.add_argument("--limit", type=int, default=20000)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--url", default="")
    ap.add_argument("--text", default=FAST)
    ap.add_argument("--open", type=int, default=10_000)
    ap.add_argument("--gap", type=float, default=5.0)
    ap.add_argument("--ramp", type=float, default=30.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--before", metavar="DIR")
    ap.add_argument("--tracemalloc", type=int, default=0, metavar="N")
    ap.add_argument("--hold", type=float, default=0, metavar="SECONDS", help="see _hold")
    ap.add_argument(
        "--header-timeout",
        type=float,
        help="serve with this header_timeout instead of http.server.HEADER_TIMEOUT (a diagnosis)",
    )
    ap.add_argument(
        "--nice",
        type=int,
        default=0,
        help="the server's and the callers' niceness (e.g. -10, as root: on a shared machine, "
        "ahead of the others' processes, as if each had its core)",
    )
    ap.add_argument(
        "--grpc",
        action="store_true",
        help="the slow streams as gRPC calls on one channel (at most 1,000: gRPC's limit)",
    )
    ap.add_argument("--json")
    args = ap.parse_args()
    global NICE
    NICE = args.nice
    if args.role == "server":
        _server(args.limit, args.trace, args.grpc)
        return
    if args.role == "callers":
        _run_callers(args)
        return
    cores = sb._cores()
    if cores is not None:
        os.sched_setaffinity(0, cores[0])
    if args.header_timeout:
        os.environ["TOOLNEXUS_BENCH_HEADER_TIMEOUT"] = str(args.header_timeout)
    print(f"load average at start: {sb._load()}", file=sys.stderr)
    if args.tracemalloc:
        uvloop.run(_trace(args))
        return
    if args.hold:
        uvloop.run(_hold(args))
        return
    rows = uvloop.run(_bench(args))
    print(json.dumps(rows, indent=1) if not args.json else "")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"load average at end: {sb._load()}")


if __name__ == "__main__":
    main()
