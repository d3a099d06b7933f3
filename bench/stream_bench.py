"""Benchmark: a model's stream relayed to A2A callers, against the ceiling and the official SDK.

An OpenAI-style streaming stub (``/v1/chat/completions``, SSE ``chat.completion.chunk`` as OpenAI
documents them: a role chunk, 20 content deltas 50 ms apart, a ``finish_reason`` chunk, a usage
chunk, ``[DONE]``) stamps each delta's text with the moment it is written (``@<monotonic ns>;``,
the system-wide monotonic clock, read back by the caller). Three relays, each its own process,
serve A2A 1.0 JSON-RPC ``SendStreamingMessage`` by asking the stub and forwarding its words:

- ``ceiling``: a bare Starlette SSE app that opens a streaming httpx request to the stub and
  forwards each delta as an ``artifactUpdate`` frame (and a final ``statusUpdate``), nothing else;
- ``sdk``: the official a2a-sdk 1.3 server (``DefaultRequestHandlerV2``,
  ``create_jsonrpc_routes``, its in-memory task store) whose executor relays the same stream with
  ``TaskUpdater.add_artifact(append=...)`` per delta;
- ``ours``: ``toolnexus serve --config {} --model openai:stub-model --base-url STUB --json``
  itself, in-process (``cli.main``): an empty toolkit, the stub its model, its uvloop, its
  collector tuning and its log of each task's moves (to a pipe the bench drains).

The relays share the last core (one at a time under load); the callers (raw HTTP/1.1 keep-alive
connections on uvloop, one per concurrent stream, starts spread over the first second) and the
stub share the others. For 1, 64, 96 and 512 concurrent streams, each repetition measures every
relay in turn (the order rotated each repetition, so a neighbour's load falls on all alike);
medians of the repetitions. Per relay and concurrency:

- time to first token (request written -> first stamped word read), p50;
- token delay p50/p99: a word's stamp -> the caller reading it;
- server CPU per delivered token: the relay process's utime+stime (/proc) over the run / words
  delivered;
- SSE frames per token (every ``data`` frame the callers read, states included);
- failed streams (an error, a cut, fewer than 20 words, no completed state);
- memory per open stream (``--memory``, separately: a fresh relay process, RSS while N slow
  streams are open minus its RSS idle, / N).

Across workers and hosts (issue 65 item 2): ``--workers N`` adds the relay ``workers``: the N
workers of ``toolnexus serve --workers N`` (each ``ours`` as above, started as its supervisor
starts one, but each on a listening socket of its own, so that the bench picks the worker a
request goes to) on one PostgreSQL database (a private cluster, tests/postgres.py), pinned with
the other relays; ``--hosts`` adds ``hosts``: two
such processes, each in a network namespace of its own (tests/hosts.py: its own address on a
bridge, as the host tests build them; needs root), the database in a third, the stub on the
bridge. Each stream of theirs is sent (``SendMessage``, returning at once) to one of them and
followed (``SubscribeToTask``) on the next, so that every word crosses from the worker running
the task to the one its caller listens on (``WorkerLink``: the follower asks, the runner
announces the words through the database). CPU per word: all of its processes', and with its
database's CPU counted too (the report says both, paired against ``ours``); ttft there is from the
subscribe. Behind nginx (``--hosts``) a subscribe that reached its host after the task had ended
is refused and the reply got with GetTask, as a client does ("subscribed too late": when the
subscribe was asked against the task's end, how long its answer took, how long its send took);
``--nginx-keepalive N`` gives nginx a pool of N kept connections to each host (the guide's config:
a new connection per request), and ``TOOLNEXUS_BENCH_NGINX_LOG=PATH`` keeps nginx's access log
(each request's upstream connect and header times) there. With ``--before DIR`` the relay ``workers-before``
is the same N workers served from DIR's build (its own database), paired with ``workers``;
with ``--local`` the relay ``workers-local`` is ``workers``' own processes, each stream sent
streaming to one and followed there (N processes on one core and a database, nothing crossing),
paired with ``workers``; with ``--processes`` the relay ``processes`` is N ``ours`` each on its
memory store, sharing nothing, each stream sent (streaming) to one (what N processes taking turns
on the one core cost, with no database and no link), paired with ``ours``. Each run also says
its processes' wake-ups a word (voluntary context switches: each a wait of the loop ended) and
preemptions a word (involuntary ones), and ``--json`` each process's CPU a word. ``--relay-cpu
PCT`` holds the relays' processes to PCT % of one core (a cgroup's quota): the starved share a loaded machine leaves them, on demand. For every relay the reply is put together as a
client does (an update that appends, one that replaces, a task's artifacts): a word missing from
it fails the stream, a word twice in it is counted ("words twice").

Targets (issue 53): at 64 and 96 streams, ours' p99 <= 100 ms and <= max(2x the ceiling's, 20
ms), CPU per token <= 1.5x the ceiling's and <= 1/3 of the SDK's; at 512, CPU per token <= 1.5x
the ceiling's and no stream fails.

Run: python bench/stream_bench.py [--seconds 4] [--repeat 3] [--streams 1,64,96,512]
     [--relays ceiling,sdk,ours] [--workers 4] [--hosts [--nginx-keepalive N]] [--memory]
     [--json out.json]   (~5 min; uptime is printed with
each repetition: this machine is shared)
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("TOOLNEXUS_BENCH_CODE") or str(ROOT))  # see --before
sys.path.insert(1, str(ROOT))
sys.path.insert(2, str(ROOT / "bench"))

from serve_bench import Conn  # noqa: E402

from tests.hosts import Network, Nginx  # noqa: E402
from tests.postgres import Postgres, binaries  # noqa: E402
from toolnexus.http.server import ConnectionShare, listening_socket  # noqa: E402

DELTAS = 20
GAP = 0.05
STREAMS = (1, 64, 96, 512)
RELAYS = (
    "ceiling",
    "sdk",
    "ours",
    "before",
    "workers",
    "workers-before",
    "workers-local",
    "processes",
    "hosts",
)
STAMP = re.compile(rb"@(\d+);")
APPEND = re.compile(rb'"append":\s*true')
SPREAD = ("workers", "workers-before", "workers-local", "hosts")
"""The relays of several ``toolnexus serve`` processes on one database (--workers, --hosts)."""
LOCAL = "workers-local"
"""--local: the processes of ``workers``, each stream sent (streaming) to one and followed there:
four processes on one core and one database, nothing crossing."""
PROCESSES = "processes"
"""--processes: N ``ours`` each on its memory store, nothing shared, each stream sent (streaming) to
one: what N processes taking the streams' turns on one core cost, without a database or a link."""
APART = (LOCAL, PROCESSES)
"""The relays whose streams are followed where they were sent (nothing crosses)."""
STREAM_TIMEOUT = 120.0


# ---------------------------------------------------------------------------------------------
# the model stub


def pacing(said: str) -> tuple[float, int]:
    """The gap and the count of words a user's text asks for (``gap=SECONDS count=N``)."""
    options = dict(p.split("=", 1) for p in said.split() if "=" in p)
    return float(options.get("gap", GAP)), int(options.get("count", DELTAS))


async def paced(gap: float, count: int) -> AsyncIterator[int]:
    """0 to ``count - 1``, the k-th ``k * gap`` seconds after the first on the loop's clock (a late
    word does not push the next ones back)."""
    loop = asyncio.get_running_loop()
    begun = loop.time()
    for k in range(count):
        wait = begun + k * gap - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        yield k


def _stub_app() -> Any:
    """OpenAI's chat completions, streamed. The user's text may say ``gap=SECONDS count=N``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    head = b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"stub-model","system_fingerprint":null,"choices":'

    def chunk(choices: str, more: str = "") -> bytes:
        return head + choices.encode() + more.encode() + b"}\n\n"

    role = chunk(
        '[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]'
    )
    finish = chunk('[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]')
    usage = chunk(
        "[]",
        f',"usage":{{"prompt_tokens":12,"completion_tokens":{DELTAS},"total_tokens":{12 + DELTAS}}}',
    )
    word_head = head + b'[{"index":0,"delta":{"content":" @'
    word_tail = b';"},"logprobs":null,"finish_reason":null}]}\n\n'

    async def completions(request: Request) -> StreamingResponse:
        body = json.loads(await request.body())
        gap, count = pacing(str(body["messages"][-1].get("content") or ""))

        async def events() -> Any:
            yield role
            async for _ in paced(gap, count):
                yield word_head + str(time.monotonic_ns()).encode() + word_tail
            yield finish
            yield usage
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


def _model_body(text: str) -> dict[str, Any]:
    return {
        "model": "stub-model",
        "messages": [{"role": "user", "content": text}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def _deltas(http: Any, stub: str, text: str) -> Any:
    """The text of each content delta of the stub's stream (httpx, line by line)."""
    from toolnexus import _json

    async with http.stream("POST", stub + "/chat/completions", json=_model_body(text)) as r:
        async for line in r.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            for choice in _json.loads(data).get("choices") or ():
                content = (choice.get("delta") or {}).get("content")
                if content:
                    yield content


# ---------------------------------------------------------------------------------------------
# the relays


def _ceiling_app(stub: str) -> Any:
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from toolnexus import _json

    http = httpx.AsyncClient(
        timeout=STREAM_TIMEOUT,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
    )

    async def rpc(request: Request) -> StreamingResponse:
        call = _json.loads(await request.body())
        rid, text = call["id"], call["params"]["message"]["parts"][0]["text"]
        task, context = str(uuid.uuid4()), str(uuid.uuid4())

        async def frames() -> Any:
            first = True
            async for piece in _deltas(http, stub, text):
                update = {
                    "taskId": task,
                    "contextId": context,
                    "artifact": {
                        "artifactId": "reply",
                        "name": "reply",
                        "parts": [{"text": piece}],
                    },
                    "append": not first,
                    "lastChunk": False,
                }
                first = False
                yield (
                    b"data: "
                    + _json.dumps(
                        {"jsonrpc": "2.0", "id": rid, "result": {"artifactUpdate": update}}
                    )
                    + b"\n\n"
                )
            done = {
                "taskId": task,
                "contextId": context,
                "status": {"state": "TASK_STATE_COMPLETED"},
            }
            yield (
                b"data: "
                + _json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"statusUpdate": done}})
                + b"\n\n"
            )

        return StreamingResponse(frames(), media_type="text/event-stream")

    return Starlette(routes=[Route("/", rpc, methods=["POST"])])


def _sdk_app(stub: str, url: str) -> Any:
    import httpx
    from a2a.helpers.proto_helpers import new_task_from_user_message
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.request_handlers import DefaultRequestHandlerV2
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import a2a_pb2 as pb
    from starlette.applications import Starlette

    http = httpx.AsyncClient(
        timeout=STREAM_TIMEOUT,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
    )

    class Relay(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: Any) -> None:
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            first = True
            async for piece in _deltas(http, stub, context.get_user_input()):
                await updater.add_artifact(
                    [pb.Part(text=piece)], artifact_id="reply", name="reply", append=not first
                )
                first = False
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: Any) -> None:
            await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()

    card = pb.AgentCard(
        name="sdk-relay",
        description="a model's stream relayed on the official a2a-sdk",
        version="1.0.0",
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=pb.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="relay", name="Relay", description="relays", tags=["relay"])],
    )
    handler = DefaultRequestHandlerV2(
        agent_executor=Relay(), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/"))


async def _serve(role: str, stub: str) -> None:
    from toolnexus.http.server import AsgiServer, serving_gc

    if role == "stub":  # on the bridge when the relays are hosts of their own (--hosts)
        bind = os.environ.get("TOOLNEXUS_BENCH_BIND", "127.0.0.1")
        server = AsgiServer(_stub_app(), f"{bind}:0", max_connections=4096)
        await server.start()
        url = server.url + "/v1"
    elif role == "ceiling":
        server = AsgiServer(_ceiling_app(stub), "127.0.0.1:0", max_connections=4096)
        await server.start()
        url = server.url
    elif role == "sdk":
        sock = listening_socket("127.0.0.1", 0)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = AsgiServer(_sdk_app(stub, url + "/"), sock=sock, max_connections=4096)
        await server.start()
    else:
        raise SystemExit(f"unknown role {role}")
    if os.environ.get("TOOLNEXUS_BENCH_GC") != "default":
        serving_gc()
    if role != "stub":
        _profiled(role)
    print(url, flush=True)
    await asyncio.Event().wait()


def _profiled(role: str) -> None:
    """With TOOLNEXUS_BENCH_PROFILE=PATH, this process runs under cProfile (CPU time), counted
    afresh from each odd SIGUSR1 and written to PATH.role.PID.K at the K-th even one (the bench
    signals its relays' processes around each measured run: PATH.runs says which run K was)."""
    gclog = os.environ.get("TOOLNEXUS_BENCH_GCLOG")  # the collector's pauses, on SIGUSR2
    if gclog:
        import gc

        pauses: list[tuple[int, float, float, float]] = []
        began = [0.0, 0.0]

        def watch(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                began[:] = time.perf_counter(), time.thread_time()
            else:  # (generation, when, wall seconds, CPU seconds)
                pauses.append(
                    (
                        info["generation"],
                        time.monotonic(),
                        time.perf_counter() - began[0],
                        time.thread_time() - began[1],
                    )
                )

        gc.callbacks.append(watch)
        signal.signal(
            signal.SIGUSR2, lambda *_: Path(f"{gclog}.{role}").write_text(json.dumps(pauses))
        )
    path = os.environ.get("TOOLNEXUS_BENCH_PROFILE")
    if path:
        import cProfile

        profiler = cProfile.Profile(time.process_time)  # CPU, not the wall: a shared core
        signals = [0]

        def dump(*_: Any) -> None:  # an odd signal starts afresh (after a warm-up)
            signals[0] += 1
            if signals[0] % 2:
                profiler.disable()
                profiler.clear()
                profiler.enable()
                return
            profiler.disable()
            profiler.dump_stats(f"{path}.{role}.{os.getpid()}.{signals[0] // 2}")

        signal.signal(signal.SIGUSR1, dump)
        profiler.enable()


def _ours(stub: str) -> None:
    """``toolnexus serve`` itself (its uvloop, collector tuning and log of task moves, printed as
    JSON lines to a pipe the bench drains), serving an empty toolkit with the stub as its model."""
    import tempfile

    from toolnexus.cli import main

    config = Path(tempfile.mkdtemp()) / "toolkit.json"
    config.write_text("{}")
    os.environ["TOOLNEXUS_BENCH_KEY"] = "bench"
    _profiled("ours")
    argv = ["serve", "--config", str(config), "--model", "openai:stub-model", "--base-url", stub]
    for flag, name in (("--store", "TOOLNEXUS_BENCH_STORE"), ("--host", "TOOLNEXUS_BENCH_HOST")):
        if os.environ.get(name):  # one of several workers (--workers, --hosts)
            argv += [flag, os.environ[name]]
    worker = os.environ.get("TOOLNEXUS_BENCH_WORKER")
    if worker:  # a worker of serve --workers, as its supervisor starts one (on a socket of its own)
        fd, index, share = worker.split()
        argv += ["--worker-fd", fd, "--worker-index", index, "--worker-share", share]
    sys.exit(main([*argv, "--api-key-env", "TOOLNEXUS_BENCH_KEY", "--json"]))


# ---------------------------------------------------------------------------------------------
# the callers


class Outcome:
    __slots__ = (
        "delays",
        "ttft",
        "frames",
        "words",
        "failed",
        "why",
        "dups",
        "resumed",
        "said",
        "late",
        "asked",
        "answered",
        "sent",
        "ended_at",
    )

    def __init__(self) -> None:
        self.delays: list[int] = []  # ns, stamp -> read
        self.ttft: int | None = None
        self.frames = 0
        self.words = 0
        self.failed = False
        self.why = ""
        self.dups = 0  # words twice in the reply as a client puts it together
        self.resumed = 0  # times its stream broke and it subscribed again (--restart)
        self.said = ""  # the message of a failed state it ended with
        self.late = 0  # its task ended before it subscribed: its reply got with GetTask
        self.asked = 0.0  # the wall clock when its (last) request was written
        self.answered = 0  # ns from then to the first bytes of the answer
        self.sent = 0  # ns the send (SendMessage) took, when it was sent elsewhere
        self.ended_at = 0.0  # a late one: the wall clock its task ended at (its status's time)


class Caller(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one streamed request at a time, its chunked SSE answer
    read as it comes, each stamped word timed as the bytes holding it arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.done: asyncio.Future[None] | None = None
        self.outcome = Outcome()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None and not self.done.done():
            self._fail(f"connection lost: {exc}")

    def _fail(self, why: str) -> None:
        self.outcome.failed, self.outcome.why = True, why
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    async def stream(
        self, host: str, body: bytes, expect: int = DELTAS, carry: Caller | None = None
    ) -> Outcome:
        """One stream; ``carry``: a stream of the same task that broke, whose reply this one goes
        on putting together (a subscribe again)."""
        assert self.transport is not None
        self.expect = expect
        self.outcome = out = Outcome() if carry is None else carry.outcome
        out.failed, out.why = False, ""
        self.raw, self.events, self.headed, self.need = b"", b"", False, -1
        self.seen: set[bytes] = set() if carry is None else carry.seen
        # the reply's words as a client puts them together
        self.text: list[bytes] = [] if carry is None else carry.text
        self.completed = False
        self.done = asyncio.get_running_loop().create_future()
        self.sent = time.monotonic_ns()
        out.asked, out.answered = time.time(), 0
        if self.closed:  # its worker went away since it was opened (--restart)
            out.failed, out.why = True, "connection lost: before the request"
            return out
        self.transport.write(
            b"POST / HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Type: application/json\r\n"
            b"Accept: text/event-stream\r\nA2A-Version: 1.0\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        try:
            await asyncio.wait_for(asyncio.shield(self.done), STREAM_TIMEOUT)
        except TimeoutError:
            self._fail("timed out")
            self.transport.close()
        return self.verdict()

    def verdict(self) -> Outcome:
        """The outcome, judged: failed unless every word came and the reply put together holds
        each once (a failed state it ended in: failed, saying so)."""
        out = self.outcome
        out.dups = len(self.text) - len(set(self.text))
        if not out.failed and out.said:
            out.failed, out.why = True, f"failed: {out.said}"
        elif not out.failed and (out.words != self.expect or not self.completed):
            out.failed, out.why = True, f"{out.words} words, completed={self.completed}"
        elif not out.failed and len(set(self.text)) != self.expect:
            out.failed, out.why = True, f"{len(set(self.text))} words in the reply put together"
        return out

    def ended(self, task: dict[str, Any]) -> Outcome:
        """A task that ended before this stream subscribed (a subscribe is refused then): as a
        client does, its reply taken from the task (GetTask), the words it brings counted."""
        out = self.outcome
        out.failed, out.why = False, ""
        out.late += 1
        self.text = STAMP.findall(json.dumps(task.get("artifacts", [])).encode())
        now = time.monotonic_ns()
        for stamp in self.text:
            if stamp not in self.seen:  # a word's delay: when the caller got it, now
                self.seen.add(stamp)
                out.delays.append(now - int(stamp))
                out.words += 1
        state = (task.get("status") or {}).get("state")  # (0.3's names: asked without a version)
        stamp = (task.get("status") or {}).get("timestamp")
        if stamp:
            out.ended_at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        self.completed = state in ("TASK_STATE_COMPLETED", "completed")
        if state in ("TASK_STATE_FAILED", "failed"):
            said = re.search(r'"text":\s*"([^"]*)"', json.dumps(task["status"]))
            out.said = said.group(1) if said else "(no message)"
        return self.verdict()

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        if self.done is None or self.done.done():
            return
        if not self.outcome.answered:
            self.outcome.answered = now - self.sent
        raw = self.raw + data
        if not self.headed:
            end = raw.find(b"\r\n\r\n")
            if end < 0:
                self.raw = raw
                return
            head, raw = raw[:end], raw[end + 4 :]
            if not head.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
                self._fail(
                    head.split(b"\r\n")[0].decode() + " " + raw[:200].decode(errors="replace")
                )
                return
            self.headed = True
        body = []
        while True:
            if self.need < 0:
                end = raw.find(b"\r\n")
                if end < 0:
                    break
                size = int(raw[:end].split(b";")[0], 16)
                raw = raw[end + 2 :]
                if size == 0:
                    self.raw = b""
                    self._events(b"".join(body), now)
                    self.done.set_result(None)
                    return
                self.need = size
            if len(raw) < self.need + 2:
                break
            body.append(raw[: self.need])
            raw = raw[self.need + 2 :]
            self.need = -1
        self.raw = raw
        if body:
            self._events(b"".join(body), now)

    def _events(self, data: bytes, now: int) -> None:
        events = (self.events + data).replace(b"\r\n", b"\n").split(b"\n\n")
        self.events = events.pop()
        out = self.outcome
        for event in events:
            if b"data:" not in event:
                continue
            out.frames += 1
            if b'"error"' in event:
                self._fail("error: " + event[:200].decode(errors="replace"))
                return
            stamps = STAMP.findall(event)
            if b'"artifactUpdate"' in event:  # appended to the reply, or the reply so far
                self.text = [*self.text, *stamps] if APPEND.search(event) else stamps
            elif b'"task":' in event:  # a task as it is (SubscribeToTask's first frame)
                task = json.loads(event.split(b"data:", 1)[1])["result"]["task"]
                self.text = STAMP.findall(json.dumps(task.get("artifacts", [])).encode())
            for stamp in stamps:
                if stamp not in self.seen:
                    self.seen.add(stamp)
                    out.delays.append(now - int(stamp))
                    out.words += 1
                    if out.ttft is None:
                        out.ttft = now - self.sent
            if b"TASK_STATE_COMPLETED" in event:
                self.completed = True
            elif b"TASK_STATE_FAILED" in event:  # its run stopped: what it says why
                said = re.search(rb'"text":\s*"([^"]*)"', event.split(b"TASK_STATE_FAILED", 1)[1])
                out.said = said.group(1).decode(errors="replace") if said else "(no message)"


def _expected(text: str) -> int:
    """How many words the stub says for this text (``count=N``)."""
    return int(dict(p.split("=", 1) for p in text.split() if "=" in p).get("count", DELTAS))


def _send(text: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {
                    "messageId": str(uuid.uuid4()),
                    "role": "ROLE_USER",
                    "parts": [{"text": text}],
                }
            },
        }
    ).encode()


def _send_now(text: str) -> bytes:
    """A send answered at once (the task, submitted), its words to be followed elsewhere."""
    body = json.loads(_send(text))
    body["method"] = "SendMessage"
    body["params"]["configuration"] = {"returnImmediately": True}
    return json.dumps(body).encode()


def _get(task_id: str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": task_id}}
    ).encode()


def _subscribe(task_id: str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}
    ).encode()


async def _connect(host: str, port: int) -> Caller:
    _, caller = await asyncio.get_running_loop().create_connection(Caller, host, port)
    return caller


async def _streams(
    url: str | list[str],
    n: int,
    seconds: float,
    text: str = "relay please",
    spread: float = 1.0,
    resume: bool = False,
    cross: bool = True,
) -> list[Outcome]:
    """``n`` callers streaming back to back for ``seconds`` (the starts spread over ``spread``
    seconds), each finishing the stream it is in; every stream's outcome. ``url`` a list (the
    workers of one agent): caller i sends to worker i and follows the task on worker i + 1 (not
    ``cross``: streams its send on worker i)."""
    urls = [url] if isinstance(url, str) else url
    outcomes: list[Outcome] = []
    end = time.monotonic() + seconds

    async def again(i: int, task_id: str, broken: Caller) -> Caller:
        """A followed stream that broke (its worker killed: --restart) subscribed again on the
        workers after, in turn, its reply put together on: as a client resubscribes."""
        for k in range(2, 2 + 2 * len(urls)):
            broken.outcome.resumed += 1
            hostport = urls[(i + k) % len(urls)].removeprefix("http://")
            host, port = hostport.split(":")
            try:
                conn = await _connect(host, int(port))
            except OSError:
                continue
            out = await conn.stream(hostport, _subscribe(task_id), broken.expect, broken)
            if conn.transport is not None:
                conn.transport.close()
            broken = conn
            if not out.why.startswith("connection lost"):
                break
        return broken

    async def fetched(task_id: str, caller: Caller) -> Outcome:
        """A task that ended before it was subscribed to: got (GetTask) as a client does."""
        there = urls[0].removeprefix("http://").split(":")
        conn = Conn(there[0], int(there[1]))
        try:
            await conn.open()
            answer = json.loads(await conn.request("POST", "/", _get(task_id)))
        finally:
            if hasattr(conn, "writer"):
                conn.close()
        return caller.ended(answer["result"])

    async def caller(i: int) -> None:
        await asyncio.sleep(spread * i / n)
        hostport = urls[(i + cross) % len(urls)].removeprefix("http://")
        host, port = hostport.split(":")
        sender = None
        if len(urls) > 1 and cross:
            there = urls[i % len(urls)].removeprefix("http://").split(":")
            sender = Conn(there[0], int(there[1]))
        conn: Caller | None = None
        while time.monotonic() < end:
            if conn is None or conn.closed:
                try:
                    conn = await _connect(host, int(port))
                    if sender is not None:
                        if hasattr(sender, "writer"):
                            sender.close()
                        await sender.open()
                except OSError as exc:
                    failed = Outcome()
                    failed.failed, failed.why = True, f"connect: {exc}"
                    outcomes.append(failed)
                    await asyncio.sleep(0.1)
                    continue
            body, task_id = _send(text), ""
            began = time.monotonic_ns()
            if sender is not None:
                try:
                    if sender.reader.at_eof():  # closed by its server while idle (its keep-alive
                        sender.close()  # timeout, 5 s: a subscribe under load may take longer):
                        await sender.open()  # a client opens another, as httpx's pool does
                    sent = json.loads(await sender.request("POST", "/", _send_now(text)))
                except (OSError, asyncio.IncompleteReadError, RuntimeError) as exc:
                    failed = Outcome()  # its worker killed (--restart): both opened again
                    failed.failed, failed.why = True, f"send: {type(exc).__name__}: {exc}"[:120]
                    outcomes.append(failed)
                    sender.close()
                    if conn.transport is not None:
                        conn.transport.close()
                    conn = None
                    continue
                task_id = sent["result"]["task"]["id"]
                body = _subscribe(task_id)
            took = time.monotonic_ns() - began
            got = conn
            out = await got.stream(hostport, body, _expected(text))
            out.sent = took if sender is not None else 0
            if resume and task_id and out.why.startswith("connection lost"):
                got = await again(i, task_id, got)
                out = got.outcome
            if task_id and "nothing to follow" in out.why:  # it ended before the subscribe
                out = await fetched(task_id, got)
            outcomes.append(out)
        if conn is not None and conn.transport is not None:
            conn.transport.close()
        if sender is not None:
            sender.close()

    await asyncio.gather(*(caller(i) for i in range(n)))
    return outcomes


# ---------------------------------------------------------------------------------------------
# measuring


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _switches(pid: int) -> tuple[int, int]:
    """A process's context switches so far, summed over its threads: (voluntary: it waited, so
    each is about a wake-up of its loop; involuntary: the core taken from it)."""
    got = [0, 0]
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    got[0] += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    got[1] += int(line.split()[1])
        except OSError:  # a thread gone meanwhile
            pass
    return got[0], got[1]


def _pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")


def _cpu_of(pids: list[int]) -> float:
    """The CPU seconds of these processes and their children (a database's backends)."""
    total = 0.0
    for pid in pids:
        for one in [pid, *_children(pid)]:
            try:
                total += _cpu_seconds(one)
            except OSError:  # gone meanwhile
                pass
    return total


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


async def _measure(
    relay: str,
    url: str | list[str],
    pids: list[int],
    n: int,
    seconds: float,
    stub_pid: int,
    db: list[int] = [],  # noqa: B006  # read only
) -> dict[str, Any]:
    profile = os.environ.get("TOOLNEXUS_BENCH_PROFILE")
    if profile:  # each process's profile of this run alone (see _profiled)
        for pid in pids:
            os.kill(pid, signal.SIGUSR1)
    each0 = [_cpu_seconds(pid) for pid in pids]
    switches0 = [_switches(pid) for pid in pids]
    db0, stub0, mine0, t0 = (
        _cpu_of(db),
        _cpu_seconds(stub_pid),
        time.process_time(),
        time.monotonic(),
    )
    outcomes = await _streams(url, n, seconds, cross=relay not in APART)
    elapsed = time.monotonic() - t0
    each = [_cpu_seconds(pid) - c for pid, c in zip(pids, each0, strict=True)]
    cpu = sum(each)
    switches = [
        [b - a for a, b in zip(s0, _switches(pid), strict=True)]
        for pid, s0 in zip(pids, switches0, strict=True)
    ]
    db_cpu = _cpu_of(db) - db0
    if profile:
        for pid in pids:
            os.kill(pid, signal.SIGUSR1)
            _PROFILED[pid] = _PROFILED.get(pid, 0) + 1
        with open(f"{profile}.runs", "a") as runs:
            runs.write(f"{relay} {n} {' '.join(f'{p}.{_PROFILED[p]}' for p in pids)}\n")
    load_side = (_cpu_seconds(stub_pid) - stub0 + time.process_time() - mine0) / elapsed
    delays = sorted(d for o in outcomes for d in o.delays)
    ttfts = sorted(o.ttft for o in outcomes if o.ttft is not None)
    words = sum(o.words for o in outcomes)
    failed = [o for o in outcomes if o.failed]
    late = [o for o in outcomes if o.late]
    after = sorted(o.asked - o.ended_at for o in late if o.ended_at)  # > 0: asked after its end
    return {
        "late_asked_after_end": sum(a > 0 for a in after),
        "late_asked_minus_end_ms": [1e3 * _pct(after, q) for q in (0.1, 0.5, 0.9)],
        "late_answer_ms": [
            _pct(sorted(o.answered / 1e6 for o in late), q) for q in (0.1, 0.5, 0.9)
        ],
        "late_send_ms": [_pct(sorted(o.sent / 1e6 for o in late), q) for q in (0.1, 0.5, 0.9)],
        "send_ms": [
            _pct(sorted(o.sent / 1e6 for o in outcomes if o.sent), q) for q in (0.5, 0.9, 0.99)
        ],
        "answer_ms": [
            _pct(sorted(o.answered / 1e6 for o in outcomes if o.answered), q)
            for q in (0.5, 0.9, 0.99)
        ],
        "relay": relay,
        "n": n,
        "streams": len(outcomes),
        "failed": len(failed),
        "why": sorted({o.why for o in failed})[:3],
        "failures": [  # each failed stream: why, when asked, its answer's and its send's times
            {
                "why": o.why,
                "asked": o.asked,
                "answered_ms": o.answered / 1e6,
                "sent_ms": o.sent / 1e6,
                "words": o.words,
            }
            for o in failed[:20]
        ],
        "words": words,
        "cpu_each_us_per_word": [1e6 * c / max(words, 1) for c in each],
        "wakeups_per_word": sum(v for v, _ in switches) / max(words, 1),
        "preempted_per_word": sum(i for _, i in switches) / max(words, 1),
        "words_per_s": words / elapsed,
        "ttft_ms": _pct(ttfts, 0.5) / 1e6,
        "p50_ms": _pct(delays, 0.5) / 1e6,
        "p99_ms": _pct(delays, 0.99) / 1e6,
        "cpu_us_per_word": 1e6 * cpu / max(words, 1),
        "db_us_per_word": 1e6 * db_cpu / max(words, 1),
        "dups": sum(o.dups for o in outcomes),
        "late": sum(o.late for o in outcomes),
        "cpu_share": cpu / elapsed,
        "frames_per_word": sum(o.frames for o in outcomes) / max(words, 1),
        "load_side_cpu": load_side,
    }


_PROFILED: dict[int, int] = {}
"""--profile: how many runs each relay process was profiled in."""


STARTED_ON = sorted(os.sched_getaffinity(0))
"""The cores this process could run on when it started: the bench pins itself to the load's
cores before it starts the servers, so the cores are read once, not after (which left every
server on the load's core)."""


def _cores() -> tuple[set[int], set[int]] | None:
    mine = STARTED_ON
    if len(mine) < 2 or os.environ.get("TOOLNEXUS_BENCH_PIN") == "0":
        return None
    return set(mine[:-1]), {mine[-1]}


BEFORE: str | None = None
"""--before: a folder holding another build's ``toolnexus`` package, served as the relay "before"."""


def _command(role: str, stub: str) -> list[str]:
    return [
        sys.executable,
        __file__,
        "--role",
        "ours" if role == "before" else role,
        "--stub",
        stub,
    ]


def _env(role: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TOOLNEXUS_BENCH_CODE", None)
    if role in ("before", "workers-before"):
        assert BEFORE, "--before names the folder of the build to compare"
        env["TOOLNEXUS_BENCH_CODE"] = BEFORE
    return env


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _start(
    role: str,
    stub: str = "",
    cores: set[int] | None = None,
    env: dict[str, str] | None = None,
    inside: list[str] | None = None,
    worker: tuple[socket.socket, int, int] | None = None,
) -> tuple[subprocess.Popen[str], str]:
    """``env``: more of its environment; ``inside``: the prefix that runs it in a host of its own;
    ``worker``: it is worker ``index`` of ``serve --workers`` on ``(socket, index, share)`` (the
    share: ``ConnectionShare.made``), as the supervisor starts one."""
    if worker is not None:
        sock, index, share = worker
        env = {**(env or {}), "TOOLNEXUS_BENCH_WORKER": f"{sock.fileno()} {index} {share}"}
    proc = subprocess.Popen(
        [*(inside or []), *_command("ours" if role in SPREAD else role, stub)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**_env(role), **(env or {})},
        preexec_fn=_die_with_parent,
        pass_fds=(worker[0].fileno(), worker[2]) if worker is not None else (),
    )
    if cores is not None:
        os.sched_setaffinity(proc.pid, cores)
    assert proc.stdout is not None
    url = _url(proc)
    if worker is not None:
        url = f"http://127.0.0.1:{worker[0].getsockname()[1]}"
    keep = os.environ.get("TOOLNEXUS_BENCH_RELAY_LOG")
    if keep and role in SPREAD:  # its log (JSON lines) kept in PATH.PID
        out = Path(f"{keep}.{proc.pid}")
        threading.Thread(target=_copy, args=(proc.stdout, out), daemon=True).start()
    else:
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # what else it prints
    return proc, url


def _copy(lines: Any, path: Path) -> None:
    with path.open("a") as out:
        for line in lines:
            out.write(line)
            out.flush()


def _url(proc: subprocess.Popen[str]) -> str:
    """The URL a relay says it serves at: its first line, or ``toolnexus serve``'s "started"."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("http://"):
            return line.strip()
        if line.startswith("{") and json.loads(line).get("event") == "started":
            return json.loads(line)["url"]
        if line.startswith("{") and json.loads(line).get("event") == "worker-ready":
            return ""  # where: the socket its supervisor gave it
    proc.kill()
    raise SystemExit(f"{proc.args} did not start")


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class CpuQuota:
    """--relay-cpu: a cgroup whose processes share ``percent`` % of one core at most (the CFS
    quota over 10 ms periods; cgroup v2's ``cpu.max``, or v1's cpu controller): the starved share
    of their core the relays get on a loaded machine, on demand (needs root)."""

    def __init__(self, percent: float) -> None:
        period = 10_000
        quota = max(1_000, int(period * percent / 100))
        if Path("/sys/fs/cgroup/cgroup.controllers").exists():
            self.path = Path(f"/sys/fs/cgroup/toolnexus-bench-{os.getpid()}")
            self.path.mkdir()
            (self.path / "cpu.max").write_text(f"{quota} {period}")
        else:
            self.path = Path(f"/sys/fs/cgroup/cpu/toolnexus-bench-{os.getpid()}")
            self.path.mkdir()
            (self.path / "cpu.cfs_period_us").write_text(str(period))
            (self.path / "cpu.cfs_quota_us").write_text(str(quota))

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def close(self) -> None:
        try:
            self.path.rmdir()  # (empty once its processes are gone)
        except OSError as exc:
            print(f"--relay-cpu: {self.path} left: {exc}", file=sys.stderr)


class Relays:
    """The relays of one run: each its processes, the URL(s) it serves at, and the processes of
    its database (the several-worker relays); :meth:`close` stops all."""

    def __init__(self, args: argparse.Namespace, cores: tuple[set[int], set[int]] | None) -> None:
        relay_cores = cores[1] if cores else None
        self.got: dict[str, tuple[list[subprocess.Popen[str]], list[str], list[int]]] = {}
        self.net: Network | None = None
        self.nginx: Nginx | None = None
        self.databases: list[Postgres] = []
        self.sockets: list[socket.socket] = []  # the workers' (--workers), one each
        # how to start each worker again on its socket, as its supervisor does (--restart)
        self.again: dict[str, list[Callable[[], tuple[subprocess.Popen[str], str]]]] = {}
        bind: dict[str, str] = {}
        if "hosts" in args.relays:  # the stub on the bridge: the hosts reach it there
            self.net = Network()
            bind["TOOLNEXUS_BENCH_BIND"] = self.net.gateway
        self.stub, stub_url = _start("stub", cores=cores[0] if cores else None, env=bind)
        self.stub_url = stub_url
        for relay in args.relays:
            if relay == LOCAL:  # the processes of workers, nothing crossing
                self.got[relay] = self.got["workers"]
                continue
            if relay == PROCESSES:  # N processes sharing nothing
                started = [_start("ours", stub_url, relay_cores) for _ in range(args.workers)]
                self.got[relay] = ([p for p, _ in started], [u for _, u in started], [])
                continue
            if relay not in SPREAD:
                proc, url = _start(relay, stub_url, relay_cores)
                self.got[relay] = ([proc], [url], [])
                continue
            bins = binaries()
            if bins is None:
                raise SystemExit("--workers and --hosts need PostgreSQL (Debian's postgresql)")
            workers: list[tuple[subprocess.Popen[str], str]] = []
            if relay != "hosts":  # workers (of --before's build: workers-before)
                pg = Postgres(bins)
                self.databases.append(pg)
                dsn = pg.database()
                share = ConnectionShare.made(args.workers)
                for index in range(args.workers):
                    sock = listening_socket("127.0.0.1", 0)
                    self.sockets.append(sock)
                    env = {"TOOLNEXUS_BENCH_STORE": dsn}
                    again = functools.partial(  # (sock: a default, bound now)
                        _start, relay, stub_url, relay_cores, env, worker=(sock, index, share)
                    )
                    self.again.setdefault(relay, []).append(again)
                    workers.append(again())
            else:
                assert self.net is not None
                hosts = [self.net.host(11), self.net.host(12)]
                there = self.net.host(3)
                pg = Postgres(bins, host=there.addr, inside=there.cmd(), clients=self.net.cidr)
                self.databases.append(pg)
                dsn = pg.database()
                for host in hosts:
                    env = {"TOOLNEXUS_BENCH_STORE": dsn, "TOOLNEXUS_BENCH_HOST": host.addr}
                    workers.append(_start(relay, stub_url, relay_cores, env, host.cmd()))
                # the balancer in a host of its own, a port for each host through it
                ups = [u.removeprefix("http://") for _, u in workers]
                self.nginx = Nginx(
                    self.net.host(2), 8080, ups, each=True, keepalive=args.nginx_keepalive
                )
                workers = [(p, u) for (p, _), u in zip(workers, self.nginx.urls, strict=True)]
            postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
            self.got[relay] = ([p for p, _ in workers], [u for _, u in workers], [postmaster])
        self.quota = CpuQuota(args.relay_cpu) if args.relay_cpu else None
        for procs, _, _ in self.got.values():
            for proc in procs if self.quota is not None else ():
                self.quota.add(proc.pid)

    def restart(self, relay: str, index: int) -> None:
        """Worker ``index`` of ``relay`` killed (SIGKILL) and started again on its socket."""
        procs = self.got[relay][0]
        procs[index].kill()
        procs[index].wait()
        procs[index] = self.again[relay][index]()[0]
        if self.quota is not None:
            self.quota.add(procs[index].pid)

    def url(self, relay: str) -> str | list[str]:
        urls = self.got[relay][1]
        return urls if relay in SPREAD or relay == PROCESSES else urls[0]

    def close(self) -> None:
        for proc in [self.stub, *(p for procs, _, _ in self.got.values() for p in procs)]:
            proc.kill()
            proc.wait()
        for sock in self.sockets:
            sock.close()
        if self.quota is not None:
            self.quota.close()
        if self.nginx is not None:
            keep = os.environ.get("TOOLNEXUS_BENCH_NGINX_LOG")
            if keep:  # its access log (each request's times) kept there, its errors beside
                Path(keep).write_text((self.nginx.root / "access.log").read_text())
                Path(keep + ".errors").write_text(self.nginx.errors())
            self.nginx.close()
        for pg in self.databases:
            pg.close()
        if self.net is not None:
            self.net.close()


async def _bench(args: argparse.Namespace) -> dict[str, Any]:
    cores = _cores()
    relays = Relays(args, cores)
    runs: list[dict[str, Any]] = []
    try:
        for relay in relays.got:
            # warm: imports, each worker's pool grown to what the run needs, first tasks
            await _streams(relays.url(relay), min(max(args.streams), 64), 2.0)
        for rep in range(args.repeat):
            print(f"repetition {rep + 1}: load average {_load()}", file=sys.stderr, flush=True)
            for n in args.streams:
                order = list(relays.got)
                k = rep % len(order)
                for relay in order[k:] + order[:k]:
                    procs, _, db = relays.got[relay]
                    row = await _measure(
                        relay,
                        relays.url(relay),
                        [p.pid for p in procs],
                        n,
                        args.seconds,
                        relays.stub.pid,
                        db,
                    )
                    row["rep"], row["load"] = rep, _load()
                    runs.append(row)
                    print(
                        f"  {relay:<8}{n:>4}: {row['words_per_s']:7.0f} words/s  ttft {row['ttft_ms']:7.1f} ms  "
                        f"p50 {row['p50_ms']:7.1f}  p99 {row['p99_ms']:7.1f} ms  {row['cpu_us_per_word']:6.0f} µs/word  "
                        f"(database {row['db_us_per_word']:.0f})  {row['frames_per_word']:.2f} frames/word  "
                        f"failed {row['failed']}/{row['streams']}  words twice {row['dups']}  "
                        f"subscribed too late {row['late']}  "
                        + (
                            f"(asked after the end {row['late_asked_after_end']}, asked - end "
                            f"p10/50/90 {row['late_asked_minus_end_ms']} ms, answered in "
                            f"{row['late_answer_ms']} ms, their sends took {row['late_send_ms']} "
                            f"ms)  "
                            if row["late"]
                            else ""
                        )
                        + f"sends p50/90/99 {row['send_ms']} ms, answers {row['answer_ms']} ms  "
                        + (f"why {row['why']}  " if row["failed"] else "")
                        + f"relay cpu {row['cpu_share']:.0%}  load side {row['load_side_cpu']:.0%}  "
                        f"wake-ups/word {row['wakeups_per_word']:.2f}  preempted/word "
                        f"{row['preempted_per_word']:.2f}",
                        file=sys.stderr,
                        flush=True,
                    )
                    await asyncio.sleep(0.5)
    finally:
        relays.close()
    return {"runs": runs}


async def _restart(args: argparse.Namespace) -> list[dict[str, Any]]:
    """--restart: the streams of ``workers`` (each followed on another worker than its runner's)
    while one worker is killed (SIGKILL) a third into the run and started again on its socket,
    as ``serve --workers``' supervisor does. A caller whose stream broke subscribes again on the
    next workers, putting the reply together on; a task whose runner was killed fails once its
    lease lapses, and its stream says so. Each repetition: how the streams ended, the words
    missing from a reply that completed, the words twice."""
    rows = []
    for rep in range(args.repeat):
        relays = Relays(args, _cores())
        try:
            urls = relays.url("workers")
            assert isinstance(urls, list)
            await _streams(urls, min(max(args.streams), 64), 2.0)  # warm
            victim = rep % len(urls)

            async def kill() -> float:
                await asyncio.sleep(args.seconds / 3)
                relays.restart("workers", victim)  # noqa: B023  # awaited in this iteration
                return time.monotonic()

            killer = asyncio.ensure_future(kill())
            for n in args.streams:
                outcomes = await _streams(urls, n, args.seconds, resume=True)
                await killer
                whole = [o for o in outcomes if not o.failed]
                said = [o for o in outcomes if o.why.startswith("failed: ")]
                sends = [o for o in outcomes if o.why.startswith("send: ")]
                other = [o for o in outcomes if o.failed and o not in said and o not in sends]
                row = {
                    "rep": rep,
                    "n": n,
                    "streams": len(outcomes),
                    "whole": len(whole),
                    "resumed_whole": sum(1 for o in whole if o.resumed),
                    "said_why": len(said),
                    "why": sorted({o.why for o in said}),
                    "sends_failed": len(sends),
                    "other_failed": len(other),
                    "other_why": sorted({o.why for o in other})[:5],
                    "words_twice": sum(o.dups for o in outcomes),
                    "load": _load(),
                }
                rows.append(row)
                print(
                    f"  restart (worker {victim} killed) {n:>4}: {row['streams']} streams, "
                    f"{row['whole']} whole ({row['resumed_whole']} after subscribing again), "
                    f"{row['said_why']} failed saying why {row['why']}, {row['sends_failed']} "
                    f"sends unanswered, {row['other_failed']} other {row['other_why']}, words "
                    f"twice {row['words_twice']}; load {row['load']}",
                    file=sys.stderr,
                    flush=True,
                )
                break  # one kill a repetition
        finally:
            relays.close()
    return rows


async def _memory(args: argparse.Namespace) -> list[dict[str, Any]]:
    """RSS per open stream: a fresh relay process for each count, idle after a warm-up, then N
    slow streams (a word every 300 ms) open at once."""
    cores = _cores()
    stub, stub_url = _start("stub", cores=cores[0] if cores else None)
    rows = []
    try:
        for n in args.streams:
            for relay in [r for r in args.relays if r not in SPREAD]:  # one process each
                proc, url = _start(relay, stub_url, cores[1] if cores else None)
                try:
                    await _streams(url, 4, 0.5, "gap=0.01 count=20")
                    await asyncio.sleep(1.0)
                    idle = _rss_kib(proc.pid)
                    slow = asyncio.ensure_future(
                        _streams(url, n, 0.1, "gap=0.3 count=12", spread=0.0)
                    )
                    await asyncio.sleep(2.0)  # all open, a few words in
                    held = 0
                    for _ in range(5):
                        held = max(held, _rss_kib(proc.pid))
                        await asyncio.sleep(0.1)
                    outcomes = await slow
                    rows.append(
                        {
                            "relay": relay,
                            "n": n,
                            "kib_per_stream": (held - idle) / n,
                            "idle_mib": idle / 1024,
                            "failed": sum(o.failed for o in outcomes),
                        }
                    )
                    print(
                        f"  memory {relay:<8}{n:>4}: {(held - idle) / n:7.1f} KiB per open stream (idle {idle / 1024:.0f} MiB)",
                        file=sys.stderr,
                        flush=True,
                    )
                finally:
                    proc.kill()
                    proc.wait()
    finally:
        stub.kill()
        stub.wait()
    return rows


def _instructions(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Instructions per delivered word, counted by callgrind in the relay process (wall-clock
    pairs move 20-40 % here; an instruction count does not): each relay under ``valgrind
    --tool=callgrind`` with counting off, warmed, then counting on for ``--count`` streams (2 at
    a time, a word every 200 ms: slow enough that every relay keeps up under valgrind, so each
    word is its own frame), off, dumped."""
    import tempfile

    rows = []
    stub, stub_url = _start("stub")
    try:
        for _ in range(args.repeat):
            for relay in [r for r in args.relays if r not in SPREAD]:  # one process each
                with tempfile.TemporaryDirectory() as tmp:
                    out = Path(tmp) / "callgrind.out"
                    env = {**_env(relay), "PYTHONHASHSEED": "0", "PYTHONMALLOC": "malloc"}
                    proc = subprocess.Popen(
                        [
                            "valgrind",
                            "--tool=callgrind",
                            "--instr-atstart=no",
                            f"--callgrind-out-file={out}",
                            *_command(relay, stub_url),
                        ],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL,
                        text=True,
                        env=env,
                        preexec_fn=_die_with_parent,
                    )
                    try:
                        url = _url(proc)
                        assert proc.stdout is not None
                        threading.Thread(target=proc.stdout.read, daemon=True).start()
                        text = f"gap=0.2 count={args.words}"

                        def control(*what: str) -> None:
                            subprocess.run(
                                ["callgrind_control", *what, str(proc.pid)],  # noqa: B023  # called in this iteration
                                check=True,
                                capture_output=True,
                                timeout=300,
                            )

                        import uvloop

                        uvloop.run(_streams(url, 2, 0.1, text, spread=0.0))
                        control("-i", "on")
                        outcomes = uvloop.run(_count_streams(url, 2, args.count, text))
                        control("-i", "off")
                        control("--dump")
                    finally:
                        proc.send_signal(signal.SIGTERM)
                        try:
                            proc.wait(timeout=120)
                        except subprocess.TimeoutExpired:
                            proc.kill()
                            proc.wait()
                    total = 0
                    keep = os.environ.get("TOOLNEXUS_BENCH_KEEP")  # a folder to keep the dumps in
                    for dump in Path(tmp).glob("callgrind.out*"):
                        if keep:
                            Path(keep, f"{relay}.{dump.name}").write_bytes(dump.read_bytes())
                        found = re.search(r"^totals: (\d+)", dump.read_text(errors="replace"), re.M)
                        total += int(found.group(1)) if found else 0
                words = sum(o.words for o in outcomes)
                row = {
                    "relay": relay,
                    "instructions_per_word": total / max(words, 1),
                    "frames_per_word": sum(o.frames for o in outcomes) / max(words, 1),
                    "failed": sum(o.failed for o in outcomes),
                    "streams": len(outcomes),
                }
                rows.append(row)
                print(
                    f"  {relay:<8}{row['instructions_per_word']:>12,.0f} instructions per word, "
                    f"{row['frames_per_word']:.2f} frames per word, failed {row['failed']}/{row['streams']}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        stub.kill()
        stub.wait()
    return rows


async def _count_streams(url: str, concurrency: int, count: int, text: str) -> list[Outcome]:
    """Exactly ``count`` streams, ``concurrency`` at a time."""
    host, port = url.removeprefix("http://").split(":")
    left = [count]
    outcomes: list[Outcome] = []

    async def caller() -> None:
        conn = await _connect(host, int(port))
        while left[0] > 0:
            left[0] -= 1
            if conn.closed:
                conn = await _connect(host, int(port))
            outcomes.append(await conn.stream(f"{host}:{port}", _send(text), _expected(text)))
        if conn.transport is not None:
            conn.transport.close()

    await asyncio.gather(*(caller() for _ in range(concurrency)))
    return outcomes


def _report(runs: list[dict[str, Any]], memory: list[dict[str, Any]]) -> str:
    keys = sorted(
        {(r["relay"], r["n"]) for r in [*runs, *memory]}, key=lambda k: (k[1], RELAYS.index(k[0]))
    )
    lines = [
        f"{'relay':<9}{'N':>4}{'words/s':>9}{'ttft':>9}{'p50':>8}{'p99':>8}{'µs/word':>9}{'+db':>6}"
        f"{'frames/w':>9}{'failed':>8}{'KiB/stream':>11}"
    ]
    mem = {(m["relay"], m["n"]): m["kib_per_stream"] for m in memory}

    def med(rows: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    for relay, n in keys:
        rows = [r for r in runs if r["relay"] == relay and r["n"] == n]
        kib = mem.get((relay, n))
        if not rows:
            lines.append(f"{relay:<9}{n:>4}{'':>74}{kib:>11.1f}")
            continue
        lines.append(
            f"{relay:<9}{n:>4}{med(rows, 'words_per_s'):>9.0f}{med(rows, 'ttft_ms'):>7.1f}ms"
            f"{med(rows, 'p50_ms'):>6.1f}ms{med(rows, 'p99_ms'):>6.1f}ms{med(rows, 'cpu_us_per_word'):>9.0f}"
            f"{med(rows, 'db_us_per_word'):>6.0f}{med(rows, 'frames_per_word'):>9.2f}{sum(r['failed'] for r in rows):>4}/{sum(r['streams'] for r in rows):<4}"
            f"{'' if kib is None else f'{kib:>11.1f}'}"
        )
    lines.append(
        "medians of the repetitions (failed: summed); ttft: request -> first word; p50/p99: a word's "
        "stamp -> read by its caller; µs/word: the relay's CPU / words delivered; +db: its database's "
        "CPU / words delivered (workers, hosts)"
    )
    for n in sorted({r["n"] for r in runs}):
        got = {relay: [r for r in runs if r["relay"] == relay and r["n"] == n] for relay in RELAYS}
        for after, before, what in (
            ("ours", "before", ""),
            ("workers", "workers-before", ""),
            ("workers", LOCAL, " (what crossing costs, the same processes)"),
            (
                LOCAL,
                PROCESSES,
                " (what the database and the link cost N processes, nothing crossing)",
            ),
        ):
            if got[after] and got[before]:
                pairs = sorted(
                    a["cpu_us_per_word"] / b["cpu_us_per_word"]
                    for a, b in zip(got[after], got[before], strict=True)
                )
                lines.append(
                    f"N={n}: {after}/{before} CPU per word{what}, paired: median "
                    f"{statistics.median(pairs):.2f} ({pairs[0]:.2f}-{pairs[-1]:.2f})"
                )
        for spread in (*SPREAD, PROCESSES):
            if got[spread] and got["ours"]:
                pairs = sorted(
                    a["cpu_us_per_word"] / b["cpu_us_per_word"]
                    for a, b in zip(got[spread], got["ours"], strict=True)
                )
                whole = sorted(  # the database's CPU counted with its processes' (issue 65)
                    (a["cpu_us_per_word"] + a["db_us_per_word"]) / b["cpu_us_per_word"]
                    for a, b in zip(got[spread], got["ours"], strict=True)
                )
                lines.append(
                    f"N={n}: {spread}/ours CPU per word, paired: median {statistics.median(pairs):.2f} "
                    f"({pairs[0]:.2f}-{pairs[-1]:.2f}); with the database's "
                    f"({med(got[spread], 'db_us_per_word'):.0f} µs a word) "
                    f"{statistics.median(whole):.2f} ({whole[0]:.2f}-{whole[-1]:.2f}); "
                    f"p99 {med(got[spread], 'p99_ms'):.1f} ms "
                    f"(ours {med(got['ours'], 'p99_ms'):.1f}); words twice "
                    f"{sum(r['dups'] for r in got[spread])}; subscribed too late "
                    f"{sum(r['late'] for r in got[spread])}"
                )
        if not all(got[r] for r in RELAYS[:3]):
            continue
        ceiling, sdk, ours = (
            {k: med(got[x], k) for k in ("p99_ms", "cpu_us_per_word")} for x in RELAYS[:3]
        )
        lines.append(
            f"N={n}: ours/ceiling CPU {ours['cpu_us_per_word'] / ceiling['cpu_us_per_word']:.2f}x, "
            f"ours/sdk CPU {ours['cpu_us_per_word'] / sdk['cpu_us_per_word']:.2f}x, p99 ours {ours['p99_ms']:.1f} ms "
            f"vs max(2x ceiling, 20) = {max(2 * ceiling['p99_ms'], 20):.1f} ms"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", choices=["stub", *RELAYS])
    ap.add_argument("--stub", default="")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--streams", default=",".join(map(str, STREAMS)))
    ap.add_argument("--relays", default="ceiling,sdk,ours")
    ap.add_argument(
        "--before",
        metavar="DIR",
        help="also serve the relay 'before': ours from the toolnexus package in DIR (e.g. "
        "git archive COMMIT toolnexus | tar -x -C DIR), measured beside the others; with "
        "--workers, 'workers-before' too: the N workers of that build",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="also the relay 'workers': N toolnexus serve processes on one PostgreSQL database, "
        "each stream sent to one and followed on the next",
    )
    ap.add_argument(
        "--local",
        action="store_true",
        help=f"with --workers: also the relay '{LOCAL}': the same N workers, each stream sent "
        "(streaming) to one and followed there, nothing crossing (what N processes on one core "
        "cost, apart from crossing); --workers 1 --local: one worker on PostgreSQL (the store's "
        "cost alone), its streams sent then followed there (workers) or streamed (workers-local)",
    )
    ap.add_argument(
        "--processes",
        action="store_true",
        help=f"with --workers N: also the relay '{PROCESSES}': N toolnexus serve processes each "
        "on its memory store, sharing nothing, each stream sent (streaming) to one (what N "
        "processes on one core cost, without a database or a link)",
    )
    ap.add_argument(
        "--hosts",
        action="store_true",
        help="also the relay 'hosts': two toolnexus serve processes each in a network namespace "
        "of its own, the database in a third, each stream sent to one and followed on the other "
        "(needs root)",
    )
    ap.add_argument(
        "--nginx-keepalive",
        type=int,
        default=0,
        metavar="N",
        help="with --hosts: nginx keeps a pool of N idle connections to each host (the guide's "
        "config: none, a new connection per request)",
    )
    ap.add_argument(
        "--restart",
        action="store_true",
        help="instead: with --workers N, the first of --streams streams across the workers for "
        "--seconds while one worker is killed and started again; how each stream ended, words "
        "missing or twice",
    )
    ap.add_argument(
        "--relay-cpu",
        type=float,
        default=0,
        metavar="PCT",
        help="the relays' processes together get at most PCT %% of one core (a cgroup's CPU "
        "quota; needs root): the starved share a loaded machine leaves them, on demand",
    )
    ap.add_argument("--memory", action="store_true", help="also measure memory per open stream")
    ap.add_argument("--memory-only", action="store_true")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per word under callgrind instead (--count streams per relay)",
    )
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument(
        "--words", type=int, default=DELTAS, help="with --instructions: words per stream"
    )
    ap.add_argument(
        "--load",
        metavar="URL",
        help="only be the callers: --streams N streams to the A2A agent at URL for --seconds "
        "(text: --text), then print their word delays as JSON (bench/tui_bench.py --stream)",
    )
    ap.add_argument("--text", default="relay please")
    ap.add_argument("--json", help="also write every run to this file")
    args = ap.parse_args()
    import uvloop

    if args.role == "ours":
        _ours(args.stub)
    if args.role:
        uvloop.run(_serve(args.role, args.stub))
        return
    args.streams = [int(n) for n in args.streams.split(",")]
    if args.load:
        outcomes = uvloop.run(_streams(args.load, args.streams[0], args.seconds, args.text))
        delays = sorted(d / 1e6 for o in outcomes for d in o.delays)
        print(
            json.dumps(
                {
                    "streams": len(outcomes),
                    "failed": sum(o.failed for o in outcomes),
                    "words": len(delays),
                    "p50_ms": _pct(delays, 0.5),
                    "p99_ms": _pct(delays, 0.99),
                }
            )
        )
        return
    args.relays = [r for r in args.relays.split(",") if r]
    args.relays += [
        r
        for r, on in (
            ("workers", args.workers > 1 or (args.workers == 1 and args.local)),
            ("hosts", args.hosts),
        )
        if on
    ]
    if args.local and "workers" in args.relays:
        args.relays.insert(args.relays.index("workers") + 1, LOCAL)
    if args.processes:
        if args.workers < 1:
            raise SystemExit("--processes needs --workers N (how many processes)")
        args.relays.append(PROCESSES)
    if args.before:
        global BEFORE
        BEFORE = str(Path(args.before).resolve())
        if "before" not in args.relays:
            args.relays.append("before")
        if "workers" in args.relays:  # the workers of both builds, paired
            args.relays.append("workers-before")
    cores = _cores()
    if cores is not None:
        os.sched_setaffinity(0, cores[0])
    print(f"load average at start: {_load()}", file=sys.stderr)
    if args.restart:
        if args.workers < 2:
            raise SystemExit("--restart needs --workers N (2 or more)")
        args.relays = ["workers"]
        rows = uvloop.run(_restart(args))
        if args.json:
            Path(args.json).write_text(json.dumps({"restart": rows}, indent=1))
        return
    if args.instructions:
        rows = _instructions(args)
        for relay in args.relays:
            got = [r["instructions_per_word"] for r in rows if r["relay"] == relay]
            print(f"{relay:<9}" + "  ".join(f"{g:,.0f}" for g in got) + " instructions per word")
        if args.json:
            Path(args.json).write_text(json.dumps({"instructions": rows}, indent=1))
        return
    runs = [] if args.memory_only else uvloop.run(_bench(args))["runs"]
    memory = uvloop.run(_memory(args)) if args.memory or args.memory_only else []
    print(_report(runs, memory))
    print(f"load average at end: {_load()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "memory": memory}, indent=1))


if __name__ == "__main__":
    main()
