"""The served agent against hostile callers: DNS rebinding, poisoned params, other credentials'
tasks, idle and trickling connections."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import httpx

import toolnexus as tn

from ..serve.wire import v03_message, v10_message

V10 = {"A2A-Version": "1.0"}


def _rpc(method: str, params: dict, id: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


async def test_dns_rebinding_is_refused_on_every_route():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=True, mcp=True) as h,
        httpx.AsyncClient() as http,
    ):
        send = _rpc("message/send", {"message": v03_message("hello")})
        foreign_host = {"host": f"attacker.example:{h.port}"}
        foreign_origin = {"origin": "http://attacker.example"}
        for path in ("/", "/mcp"):
            r = await http.post(h.url + path, json=send, headers=foreign_host)
            assert r.status_code == 421 and "attacker.example" in r.json()["error"]
            assert (
                await http.post(h.url + path, json=send, headers=foreign_origin)
            ).status_code == 403
            assert (
                await http.post(h.url + path, json=send, headers={"origin": "null"})
            ).status_code == 403
        assert (await http.get(h.card_url, headers=foreign_host)).status_code == 421
        assert not await h.tasks()  # nothing ran
        # this machine's own names and origins pass
        for headers in (
            {},
            {"host": f"localhost:{h.port}"},
            {"origin": h.url},
            {"origin": f"http://localhost:{h.port}"},
        ):
            r = await http.post(h.url + "/", json=send, headers=headers)
            assert r.status_code == 200 and "result" in r.json(), headers
        assert (
            await http.get(h.card_url, headers={"host": f"127.0.0.1:{h.port + 1}"})
        ).status_code == 421


async def test_allowed_hosts_extend_the_check():
    tk = await tn.create_toolkit(builtins=False)
    cfg = tn.A2AConfig(
        allowed_hosts=["agent.internal"], allowed_origins=["https://console.internal"]
    )
    async with tk.serve(client=tn.demo_client(), a2a=cfg) as h, httpx.AsyncClient() as http:
        assert (await http.get(h.card_url, headers={"host": "agent.internal"})).status_code == 200
        assert (
            await http.get(h.card_url, headers={"origin": "https://console.internal"})
        ).status_code == 200
        assert (await http.get(h.card_url, headers={"host": "other.internal"})).status_code == 421


async def test_forwarded_headers_never_rewrite_who_the_caller_is():
    """A caller that says it is someone else (X-Forwarded-For/-Proto) is still the socket's peer,
    on the wire log as anywhere (uvicorn would believe it from 127.0.0.1 by default)."""
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="fwd"), record_wire=True) as h,
        httpx.AsyncClient() as http,
    ):
        r = await http.get(
            h.card_url, headers={"x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https"}
        )
        assert r.status_code == 200
        for _ in range(200):
            seen = [
                e
                for e in h.events.history()
                if isinstance(e, tn.TrafficEvent) and e.direction == "in"
            ]
            if seen:
                break
            await asyncio.sleep(0.01)
        assert seen[0].peer.startswith("127.0.0.1:") and seen[0].url.startswith("http://127.0.0.1:")


def _deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"k": value}
    return value


async def test_over_deep_params_are_refused_and_listing_keeps_working(tmp_path: Path):
    tk = await tn.create_toolkit(builtins=False)
    store = tmp_path / "tasks"
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(store=f"file:{store}")) as h,
        httpx.AsyncClient() as http,
    ):
        r = (
            await http.post(
                h.url, json=_rpc("message/send", {"message": v03_message("x", metadata=_deep(300))})
            )
        ).json()
        assert r["error"]["code"] == -32602 and "deeper than 64 levels" in r["error"]["message"]
        fine = (
            await http.post(
                h.url,
                json=_rpc(
                    "message/send",
                    {
                        "message": v03_message("ok", metadata=_deep(20)),
                        "configuration": {"blocking": True},
                    },
                ),
            )
        ).json()
        assert fine["result"]["status"]["state"] == "completed"
        listed = (await http.post(h.url, json=_rpc("ListTasks", {}), headers=V10)).json()
        assert [t["id"] for t in listed["result"]["tasks"]] == [fine["result"]["id"]]
    # a poisoned record on disk (an older version wrote it, or a hand): reported, skipped, never fatal
    record = json.loads(next(store.glob("*.json")).read_text())
    record["id"], record["metadata"] = "poison", _deep(300)
    (store / "poison.json").write_text(json.dumps(record))
    (store / "garbage.json").write_text("{not json")
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(store=f"file:{store}")) as h,
        httpx.AsyncClient() as http,
    ):
        listed = (await http.post(h.url, json=_rpc("ListTasks", {}), headers=V10)).json()
        assert [t["id"] for t in listed["result"]["tasks"]] == [fine["result"]["id"]]
        got = (await http.post(h.url, json=_rpc("GetTask", {"id": "poison"}), headers=V10)).json()
        assert got["error"]["code"] == -32001


async def test_each_credential_sees_only_its_own_tasks():
    seen: list[list[str]] = []

    def model(request: dict) -> str:  # what the model is shown of the conversation
        users = [m["content"] for m in request["messages"] if m["role"] == "user"]
        seen.append(users)
        return "approve-me" if users[-1] == "ask" else f"heard {len(users)}"

    tk = await tn.create_toolkit(builtins=False)
    client = tn.create_in_process_client(model)
    alice, bob = (
        {"authorization": "Bearer alice-tok", **V10},
        {"authorization": "Bearer bob-tok", **V10},
    )
    cfg = tn.A2AConfig(auth=tn.Auth.bearer("alice-tok", "bob-tok"))
    async with tk.serve(client=client, a2a=cfg) as h, httpx.AsyncClient() as http:

        async def call(who, method, params):
            return (await http.post(h.url, json=_rpc(method, params), headers=who)).json()

        mine = (await call(alice, "SendMessage", {"message": v10_message("secret plans")}))[
            "result"
        ]["task"]
        await asyncio.sleep(0.1)
        for method, params in (
            ("GetTask", {"id": mine["id"]}),
            ("CancelTask", {"id": mine["id"]}),
            ("SubscribeToTask", {"id": mine["id"]}),
            ("SendMessage", {"message": v10_message("more", taskId=mine["id"])}),
        ):
            r = await call(bob, method, params)
            assert r["error"]["code"] == -32001, (method, r)
        assert (await call(bob, "ListTasks", {}))["result"]["tasks"] == []
        assert [t["id"] for t in (await call(alice, "ListTasks", {}))["result"]["tasks"]] == [
            mine["id"]
        ]
        got = (await call(alice, "GetTask", {"id": mine["id"]}))["result"]
        assert got["id"] == mine["id"] and got["status"]["state"] == "TASK_STATE_COMPLETED"
        # finished tasks' answers are kept rendered: never handed to another caller
        assert (await call(bob, "GetTask", {"id": mine["id"]}))["error"]["code"] == -32001
        assert (await call(alice, "GetTask", {"id": mine["id"]}))["result"] == got
        # bob naming alice's context starts a conversation of his own: he never hears her messages
        seen.clear()
        r = await call(
            bob,
            "SendMessage",
            {
                "message": v10_message("what did she say?", contextId=mine["contextId"]),
                "configuration": {"returnImmediately": False},
            },
        )
        assert r["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert seen == [["what did she say?"]]
        assert len((await call(bob, "ListTasks", {}))["result"]["tasks"]) == 1
        assert len((await call(alice, "ListTasks", {}))["result"]["tasks"]) == 1
    # one shared token: today's behaviour, every caller sees every task
    async with (
        tk.serve(client=client, a2a=tn.A2AConfig(auth=tn.Auth.bearer("team-tok"))) as h,
        httpx.AsyncClient() as http,
    ):
        team = {"authorization": "Bearer team-tok", **V10}
        made = (
            await http.post(
                h.url, json=_rpc("SendMessage", {"message": v10_message("hi")}), headers=team
            )
        ).json()
        got = (
            await http.post(
                h.url, json=_rpc("GetTask", {"id": made["result"]["task"]["id"]}), headers=team
            )
        ).json()
        assert "result" in got


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    return s


def _closed_by_peer(s: socket.socket) -> bool:
    try:
        return s.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


async def test_idle_and_slow_header_connections_are_closed():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=True, header_timeout=0.4) as h:
        idle = [_connect(h.port) for _ in range(40)]
        slow = [_connect(h.port) for _ in range(40)]
        for s in slow:
            s.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\n")
        cut: set[int] = set()
        for _ in range(8):  # slowloris: a header line now and then, never the end of the head
            await asyncio.sleep(0.15)
            for i, s in enumerate(slow):
                if i not in cut:
                    try:
                        s.sendall(b"X-a: b\r\n")
                    except (BrokenPipeError, ConnectionResetError):  # the server closed it: wanted
                        cut.add(i)
        await asyncio.sleep(0.6)
        loop = asyncio.get_running_loop()
        results = await loop.run_in_executor(
            None,
            lambda: (
                [_closed_by_peer(s) for s in idle]
                + [i in cut or _closed_by_peer(s) for i, s in enumerate(slow)]
            ),
        )
        assert all(results), f"{results.count(False)} of {len(results)} connections still open"
        for s in idle + slow:
            s.close()
        async with httpx.AsyncClient() as http:  # normal service, keep-alive across the interval
            for _ in range(3):
                assert (await http.get(h.card_url)).status_code == 200
                await asyncio.sleep(0.3)


async def test_a_stream_outlives_the_header_timeout_and_its_connection_is_watched_after():
    """The slow-client guard does not watch a connection while its answer (a stream) is written,
    so a stream lasts as long as it lasts; when it ends the guard watches again: a request head
    trickled on the same connection afterwards is cut off."""

    async def slow(request: dict[str, Any]) -> Any:
        for word in ("one ", "two ", "three"):
            await asyncio.sleep(0.5)  # 1.5 s: more than two of the guard's 0.4 s intervals
            yield word

    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.create_in_process_client(slow), a2a=True, header_timeout=0.4
    ) as h:
        reader, writer = await asyncio.open_connection("127.0.0.1", h.port)
        body = json.dumps(_rpc("message/stream", {"message": v03_message("hi")})).encode()
        writer.write(
            f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{h.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        seen = b""
        while b"0\r\n\r\n" not in seen:  # the stream's chunked body, to its end
            got = await asyncio.wait_for(reader.read(65536), 10)
            assert got, f"the stream was cut: {seen[-300:]!r}"
            seen += got
        assert b'"state":"completed"' in seen and seen.count(b"artifact-update") >= 3
        writer.write(b"GET /.well-known/agent-card.json HTTP/1.1\r\n")  # then a slowloris

        async def trickle() -> None:
            for _ in range(40):
                await asyncio.sleep(0.1)
                writer.write(b"X-a: b\r\n")
                await writer.drain()

        dribble = asyncio.ensure_future(trickle())
        try:  # closed (uvicorn's keep-alive timer is off once bytes arrive: the guard's doing)
            assert await asyncio.wait_for(reader.read(), 10) == b""
        except ConnectionResetError:
            pass
        assert not dribble.done()  # cut while it still trickled (4 s of it)
        dribble.cancel()
        await asyncio.gather(dribble, return_exceptions=True)
        writer.close()


async def test_too_many_connections_get_503():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=True, max_connections=8) as h:
        held = [_connect(h.port) for _ in range(8)]
        await asyncio.sleep(0.1)
        async with httpx.AsyncClient() as http:
            assert (await http.get(h.card_url)).status_code == 503
            for s in held:
                s.close()
            await asyncio.sleep(0.2)
            assert (await http.get(h.card_url)).status_code == 200


async def test_a_trickled_body_is_cut_off():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=True, header_timeout=0.4) as h:
        reader, writer = await asyncio.open_connection("127.0.0.1", h.port)
        writer.write(
            f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{h.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: 100\r\n\r\n{{".encode()
        )
        await writer.drain()

        async def trickle() -> None:
            for _ in range(40):
                await asyncio.sleep(0.1)
                writer.write(b" ")
                await writer.drain()

        dribble = asyncio.ensure_future(trickle())
        try:  # closed, no answer to a body that never ends (a reset is closed too)
            assert await asyncio.wait_for(reader.read(), 10) == b""
        except ConnectionResetError:
            pass
        assert not dribble.done()  # cut while it still trickled (its 40 bytes take 4 s)
        dribble.cancel()
        await asyncio.gather(dribble, return_exceptions=True)
        writer.close()
        assert not await h.tasks()
        async with httpx.AsyncClient() as http:  # a body that arrives is served as ever
            r = await http.post(h.url, json=_rpc("message/send", {"message": v03_message("hi")}))
            assert r.json()["result"]["status"]["state"] == "completed"


def test_ids_are_v4_uuids_never_repeated_by_threads_or_a_forked_worker():
    """Ids come 64 to one read of the secure source: threads taking them at once never share one,
    and a forked child (a worker of --workers) never hands out what its parent still holds."""
    import os
    import threading
    import uuid

    from toolnexus.protocol.model import new_id

    first = new_id()
    assert uuid.UUID(first).version == 4 and str(uuid.UUID(first)) == first
    taken: list[list[str]] = [[] for _ in range(8)]
    threads = [
        threading.Thread(target=lambda out: out.extend(new_id() for _ in range(5000)), args=(out,))
        for out in taken
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for out in taken for i in out]
    assert len(set(every)) == len(every) == 40_000
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first ids, then out without running any test machinery
        os.write(write, " ".join(new_id() for _ in range(64)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = set(os.read(read, 1 << 16).decode().split())
    os.close(read)
    parent = {new_id() for _ in range(64)}
    assert len(child) == 64 and not child & parent
