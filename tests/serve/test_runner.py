"""The server inside a host program: binding, stopping, threads, and no leaks."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import threading
from datetime import UTC

import httpx
import pytest
from starlette.applications import Starlette

import toolnexus as tn
from toolnexus.http.server import AsgiServer, parse_addr


@pytest.mark.parametrize(
    "addr, expected",
    [
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        (":8080", ("127.0.0.1", 8080)),
        ("8081", ("127.0.0.1", 8081)),
        (None, ("127.0.0.1", 0)),
        (5, ("127.0.0.1", 5)),
        ("[::1]:9", ("::1", 9)),
        ("localhost", ("localhost", 0)),
    ],
)
def test_parse_addr(addr, expected):
    assert parse_addr(addr) == expected


@pytest.mark.parametrize("addr", ["127.0.0.1:99999", "127.0.0.1:http"])
def test_bad_addresses(addr):
    with pytest.raises(ValueError):
        parse_addr(addr)


async def test_default_bind_is_loopback_and_handle_url_has_no_trailing_slash():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig()) as h:
        assert h.url.startswith("http://127.0.0.1:") and not h.url.endswith("/")
        assert h.card_url == h.url + "/.well-known/agent-card.json"
        assert h.running
    assert not h.running


async def test_bind_error_is_an_oserror_and_the_host_lives_on():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(a2a=tn.A2AConfig()) as first:
        with pytest.raises(OSError):
            await tk.serve(f"127.0.0.1:{first.port}", a2a=tn.A2AConfig())
        with pytest.raises(OSError):
            await tk.serve("203.0.113.7:0", a2a=tn.A2AConfig())  # not an address of this machine
        async with httpx.AsyncClient() as http:
            assert (await http.get(first.card_url)).status_code == 200


async def test_a_failing_startup_is_an_exception_not_system_exit():
    import contextlib

    @contextlib.asynccontextmanager
    async def broken(app):
        raise RuntimeError("lifespan broke")
        yield

    server = AsgiServer(Starlette(lifespan=broken))
    with pytest.raises(RuntimeError, match="failed to start"):
        await server.start()
    assert not server.running


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_100_start_stop_cycles_leak_nothing():
    tk = await tn.create_toolkit(builtins=False)
    async with httpx.AsyncClient() as http:
        async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig()) as warm:
            await http.get(warm.card_url)
    gc.collect()
    fds, threads, tasks = _open_fds(), threading.active_count(), len(asyncio.all_tasks())
    ports = []
    for _ in range(100):
        h = await tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig())
        ports.append(h.port)
        await h.stop()
        await h.stop()  # twice is fine
    gc.collect()
    assert _open_fds() <= fds
    assert threading.active_count() == threads
    assert len(asyncio.all_tasks()) == tasks
    with socket.socket() as s:  # the last port is free again
        s.bind(("127.0.0.1", ports[-1]))


def test_serve_in_thread_for_code_without_a_loop():
    import asyncio as aio

    tk = aio.run(tn.create_toolkit(builtins=False))
    threads = threading.active_count()
    with tk.serve_in_thread(client=tn.demo_client(), a2a=tn.A2AConfig(name="threaded")) as h:
        card = httpx.get(h.card_url).json()
        assert card["name"] == "threaded"
        r = httpx.post(
            h.url + "/",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {
                    "message": {
                        "kind": "message",
                        "messageId": "m",
                        "role": "user",
                        "parts": [{"kind": "text", "text": "from a thread"}],
                    }
                },
            },
            timeout=10,
        )
        assert r.json()["result"]["status"]["state"] == "completed"
        tasks = h.call(h.handle.tasks())
        assert [t.request for t in tasks] == ["from a thread"]
    assert threading.active_count() == threads
    with pytest.raises(OSError):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            tk.serve_in_thread(f"127.0.0.1:{s.getsockname()[1]}", a2a=tn.A2AConfig())
    assert threading.active_count() == threads


def test_serving_gc_sets_start_up_aside_and_collects_the_young_less_often():
    """``toolnexus serve`` tunes its own process's collector (run in a fresh interpreter here:
    the test process keeps Python's)."""
    import subprocess
    import sys

    code = (
        "import gc; from toolnexus.http.server import serving_gc, GC_THRESHOLD; before = gc.get_freeze_count(); "
        "serving_gc(); print(before == 0, gc.get_freeze_count() > 10000, gc.get_threshold() == GC_THRESHOLD)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["True", "True", "True"]


def test_now_iso_is_the_one_timestamp_form_and_follows_the_clock():
    import time
    from datetime import datetime

    from toolnexus.protocol.model import iso_utc, now_iso

    for _ in range(3):
        before = iso_utc(datetime.now(UTC))
        stamp = now_iso()
        after = iso_utc(datetime.now(UTC))
        assert before <= stamp <= after and len(stamp) == len(before) and stamp.endswith("Z")
        time.sleep(0.4)  # across a second boundary at least once


def test_the_mcp_sdk_is_imported_off_the_loop():
    """Serving MCP the first time imports the MCP SDK (most of a second of pydantic models): in a
    thread, so that the loop a TUI or a kernel shares keeps running. Checked in a fresh interpreter
    with an audit hook that notes which thread imports ``mcp``."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import asyncio, sys, threading
        import toolnexus as tn
        assert "mcp" not in sys.modules
        importers = []
        sys.addaudithook(lambda event, args: event == "import" and args[0] == "mcp"
                         and importers.append(threading.get_ident()))

        async def main():
            tk = await tn.create_toolkit(builtins=False)
            handle = await tk.serve(mcp=True)
            await handle.stop()

        asyncio.run(main())
        print(len(importers) > 0, threading.main_thread().ident not in importers)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]


class _Writes:
    """Records what a connection's real transport is asked to write, then writes it."""

    def __init__(self, transport):
        self.transport, self.calls = transport, []

    def write(self, data):
        self.calls.append(bytes(data))
        self.transport.write(data)

    def __getattr__(self, name):
        return getattr(self.transport, name)


def _watch_writes(server: AsgiServer) -> list[_Writes]:
    """The write calls of every connection the server holds now (the _OneWrite of each)."""
    found = []
    for protocol in server._server.server_state.connections:
        one = protocol._tn_one
        one._transport = _Writes(one._transport)
        found.append(one._transport)
    return found


async def _raw(port: int, head: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)
    await writer.drain()
    return reader, writer


async def test_a_whole_response_leaves_in_one_write_and_a_stream_as_it_comes():
    """A response with a Content-Length (a JSON-RPC answer, the card, a HEAD of it) goes out in one
    system call, head and body together; a streamed one (SSE) sends its head at once and each
    event as it happens; an Expect: 100-continue is answered before the body is sent."""
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig()) as h:
        reader, writer = await _raw(
            h.port, b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
        )
        head = await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
        [watched] = _watch_writes(h._server)
        call = (
            b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message",'
            b'"messageId":"m1","role":"user","parts":[{"kind":"text","text":"greet Ada"}]}}}'
        )
        for request in (
            b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
            b"HEAD /.well-known/agent-card.json HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
            b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(call), call),
        ):
            watched.calls.clear()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            body = b"" if request.startswith(b"HEAD") else await reader.readexactly(length)
            assert head.startswith(b"HTTP/1.1 200") and len(watched.calls) == 1, watched.calls
            assert watched.calls[0] == head + body
            if request.startswith(b"POST"):
                assert b'"state":"completed"' in body
        writer.close()

        # Expect: 100-continue: the interim answer is not held back waiting for a body
        head = (
            b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"expect: 100-continue\r\ncontent-length: %d\r\n\r\n" % len(call)
        )
        reader, writer = await _raw(h.port, head)
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)).startswith(
            b"HTTP/1.1 100"
        )
        writer.write(call)
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)).startswith(
            b"HTTP/1.1 200"
        )
        writer.close()

        # a stream: its head and first event arrive while the task still runs
        stream = call.replace(b"message/send", b"message/stream").replace(b"greet Ada", b"slow 3")
        reader, writer = await _raw(
            h.port,
            b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json"
            b"\r\ncontent-length: %d\r\n\r\n%s" % (len(stream), stream),
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
        assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
        first = await asyncio.wait_for(reader.readuntil(b"\n\n"), 2)
        assert b'"submitted"' in first or b'"working"' in first
        writer.close()

        # pipelined: a slow POST, then GET, HEAD, GET sent with it: four whole answers, in order
        slow = call.replace(b"greet Ada", b"slow 0.3")
        card = b" /.well-known/agent-card.json HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
        reader, writer = await _raw(
            h.port,
            b"POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json"
            b"\r\ncontent-length: %d\r\n\r\n%s"
            % (len(slow), slow)
            + b"GET"
            + card
            + b"HEAD"
            + card
            + b"GET"
            + card,
        )
        bodies = []
        for method in ("POST", "GET", "HEAD", "GET"):
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            assert head.startswith(b"HTTP/1.1 200")
            bodies.append(
                b"" if method == "HEAD" else await asyncio.wait_for(reader.readexactly(length), 5)
            )
        assert (
            b'"state":"completed"' in bodies[0]
            and bodies[1] == bodies[3]
            and bodies[1].startswith(b'{"name"')
        )
        writer.close()


async def test_only_a_head_is_held_and_a_long_body_in_parts_arrives_whole():
    parts = short_first = [b"a" * 100, b"b" * 70_000, b"c" * 10, b"d" * 80_000]
    long_first = [b"e" * 70_000, b"f" * 5]

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        parts = long_first if scope["path"] == "/c" else short_first
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", b"%d" % sum(map(len, parts)))],
            }
        )
        for i, part in enumerate(parts):
            await send(
                {"type": "http.response.body", "body": part, "more_body": i < len(parts) - 1}
            )
            await asyncio.sleep(0)

    server = AsgiServer(app, "127.0.0.1:0")
    await server.start()
    try:
        reader, writer = await _raw(server.port, b"GET /a HTTP/1.1\r\nhost: x\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and await reader.readexactly(
            sum(map(len, parts))
        ) == b"".join(parts)
        [watched] = _watch_writes(server)
        writer.write(b"GET /b HTTP/1.1\r\nhost: x\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert await reader.readexactly(sum(map(len, parts))) == b"".join(parts)
        # its head with the first part, then each part as written (never held)
        assert [len(c) for c in watched.calls] == [len(head) + 100, 70_000, 10, 80_000]
        watched.calls.clear()
        writer.write(b"GET /c HTTP/1.1\r\nhost: x\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert await reader.readexactly(70_005) == b"".join(long_first)
        assert [len(c) for c in watched.calls] == [
            len(head),
            70_000,
            5,
        ]  # a long part is not copied to join it
        writer.close()
    finally:
        await server.stop()


async def test_without_httptools_the_h11_protocol_serves_as_guarded():
    """`pip install toolnexus[tui]` brings no httptools: uvicorn's h11 protocol, guarded the same
    way, writes as uvicorn does (the one-write transport needs httptools' cycle)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from toolnexus.http.server import HEADER_TIMEOUT, _guarded

    async def app(scope, receive, send):
        if scope["type"] == "http":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-length", b"2")],
                }
            )
            await send({"type": "http.response.body", "body": b"ok"})

    server = AsgiServer(app, "127.0.0.1:0", http=_guarded(H11Protocol, HEADER_TIMEOUT))
    await server.start()
    try:
        async with httpx.AsyncClient() as http:
            assert [(await http.get(server.url + "/x")).text for _ in range(3)] == ["ok"] * 3
            assert (await http.head(server.url + "/x")).headers["content-length"] == "2"
            [protocol] = server._server.server_state.connections  # the client's kept-alive one
            assert isinstance(protocol, H11Protocol) and protocol._tn_one is None
    finally:
        await server.stop()
