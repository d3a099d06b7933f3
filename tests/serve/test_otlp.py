"""A served agent exporting its spans over OTLP (the standard ``OTEL_EXPORTER_OTLP_*`` variables)
to a collector that is down, slow, or answers garbage: a real ``toolnexus serve`` with the real
OTLP/HTTP exporter, against collector stubs on loopback. Whatever the collector does, the agent
answers every request, holds what it reads from the collector within a bound, and stops."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

import toolnexus as tn

from ..helpers import Served, free_port, rss_mib
from ..peers import raw_on_loopback

pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.http", reason="pip install -e '.[test]' brings the exporter"
)

TRACED = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
EXPORT_TIMEOUT = 2  # seconds: OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, each export with its retries
Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(3600)  # takes the request, never answers


async def _endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n")
    writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = os.urandom(65536)
    while True:  # as fast as the agent reads
        writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        await writer.drain()


async def _trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100_000:
        writer.write(bytes([byte]))  # a byte at a time, each well within a read's timeout
        await writer.drain()
        await asyncio.sleep(0.2)


async def _html_error(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    body = b"<html><body><h1>502 Bad Gateway</h1></body></html>\x1b[31m"
    writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n")
    writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()


async def _junk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    body = os.urandom(5000)  # 200, and no protobuf in it
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n")
    writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()


@contextlib.asynccontextmanager
async def collector(answer: Answer | None) -> AsyncIterator[str]:
    """A collector's traces URL: ``answer`` for each request (its head read first); None: a port
    where nothing listens (every connection refused)."""
    if answer is None:
        yield f"http://127.0.0.1:{free_port()}/v1/traces"
        return

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await answer(reader, writer)

    async with raw_on_loopback(handle) as url:
        yield url + "/v1/traces"


async def _serve_against(answer: Answer | None) -> dict[str, float]:
    """``toolnexus serve`` exporting to such a collector: 20 traced blocking sends, then a wait
    for several exports' worth of time, then Ctrl-C. What it answered, how much it grew (MiB),
    whether it exited."""
    async with collector(answer) as url:
        env = {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url,
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": str(EXPORT_TIMEOUT),
        }
        async with Served(env=env) as served:
            await served.until(lambda lines: served.events("ready"), timeout=60)
            before = rss_mib(served.proc.pid)
            async with tn.A2AClient(served.events("started")[0]["url"], headers=TRACED) as peer:
                done = [await peer.send(f"hello {i}", blocking=True) for i in range(20)]
            await asyncio.sleep(3 * EXPORT_TIMEOUT)  # exports go out (or fail) meanwhile
            grown = rss_mib(served.proc.pid) - before
            served.proc.send_signal(signal.SIGINT)
            try:
                async with asyncio.timeout(60):  # a liveness bound, not a speed: it ends at all
                    await served.proc.wait()
                exited = 1.0
            except TimeoutError:
                exited = 0.0
    completed = sum(t.state.value == "completed" for t in done)
    return {"completed": completed, "grown": grown, "exited": exited}


async def test_a_collector_down_slow_or_answering_garbage_never_holds_the_agent():
    """Issue 49's untested surface. The exporter read a collector's answer whole, for as long as
    it came: an endless one grew the agent by 340 MiB in 13 s, one trickled a byte at a time held
    its exit past any bound; now an answer is read to 64 KiB and within the export's timeout."""
    behaviours = {
        "down": None,
        "silent": _silent,
        "endless": _endless,
        "trickle": _trickle,
        "html error": _html_error,
        "junk": _junk,
    }
    outcomes = dict(
        zip(
            behaviours,
            await asyncio.gather(*(_serve_against(b) for b in behaviours.values())),
            strict=True,
        )
    )
    held = {  # MiB grown: what 20 tasks cost, and nothing of any answer
        name: outcome
        for name, outcome in outcomes.items()
        if outcome["completed"] != 20 or not outcome["exited"] or outcome["grown"] >= 64
    }
    assert not held, outcomes
