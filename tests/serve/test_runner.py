"""The server inside a host program: binding, stopping, threads, and no leaks."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import threading

import httpx
import pytest
from starlette.applications import Starlette

import toolnexus as tn
from toolnexus.serve.runner import AsgiServer, parse_addr


@pytest.mark.parametrize("addr, expected", [
    ("127.0.0.1:0", ("127.0.0.1", 0)), (":8080", ("127.0.0.1", 8080)), ("8081", ("127.0.0.1", 8081)),
    (None, ("127.0.0.1", 0)), (5, ("127.0.0.1", 5)), ("[::1]:9", ("::1", 9)), ("localhost", ("localhost", 0)),
])
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
        r = httpx.post(h.url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
            "message": {"kind": "message", "messageId": "m", "role": "user",
                        "parts": [{"kind": "text", "text": "from a thread"}]}}}, timeout=10)
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

    code = ("import gc; from toolnexus.serve.runner import serving_gc, GC_THRESHOLD; before = gc.get_freeze_count(); "
            "serving_gc(); print(before == 0, gc.get_freeze_count() > 10000, gc.get_threshold() == GC_THRESHOLD)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


def test_now_iso_is_the_one_timestamp_form_and_follows_the_clock():
    import time
    from datetime import datetime, timezone

    from toolnexus.a2a.model import iso_utc, now_iso

    for _ in range(3):
        before = iso_utc(datetime.now(timezone.utc))
        stamp = now_iso()
        after = iso_utc(datetime.now(timezone.utc))
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
