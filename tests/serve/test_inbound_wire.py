"""The inbound wire recorder (``serve(..., record_wire=True)``) on a real server: what it keeps of
each exchange, what it masks, and what it caps."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict

import httpx

import toolnexus as tn
from toolnexus.events import size_of
from toolnexus.traffic import BODY_CAP

from ..helpers import eventually
from .wire import V10, v10_message

TOKEN = "inbound-secret-7781"


async def _inbound(handle: tn.ServeHandle, count: int) -> list[tn.TrafficEvent]:
    for _ in range(200):
        found = [
            e
            for e in handle.events.history()
            if isinstance(e, tn.TrafficEvent) and e.direction == "in"
        ]
        if len(found) >= count:
            return found
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(found)} inbound exchange(s) recorded, expected {count}")


async def test_every_exchange_is_recorded_masked_with_its_task_frames_and_caps():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(
            client=tn.demo_client(),
            record_wire=True,
            a2a=tn.A2AConfig(name="recorded", auth=tn.Auth.bearer(TOKEN)),
        ) as handle,
        httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}", **V10}) as http,
    ):
        card = await http.get(handle.url + "/.well-known/agent-card.json?api_key=query-secret-55")
        assert card.status_code == 200
        # a stream: its SSE frames, one by one; the message echoes the token back in the answer
        async with http.stream(
            "POST",
            handle.url + "/",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendStreamingMessage",
                "params": {"message": v10_message(f"say {TOKEN}")},
            },
        ) as stream:
            sent = [line async for line in stream.aiter_lines() if line.startswith("data:")]
        assert len(sent) >= 2
        huge = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "GetTask",
            "params": {"id": "no-such-task", "x": "x" * (BODY_CAP + 1000)},
        }
        refused = await http.post(handle.url + "/", json=huge)
        assert refused.status_code == 200 and refused.json()["error"]["code"] == -32001
        bad = await http.post(
            handle.url + "/", content=b"not json", headers={"Content-Type": "text/plain"}
        )
        assert bad.status_code == 415

        card_ev, stream_ev, huge_ev, bad_ev = await _inbound(handle, 4)
        assert (card_ev.method, card_ev.status, card_ev.rpc_method, card_ev.task_id) == (
            "GET",
            200,
            None,
            None,
        )
        assert card_ev.url.startswith(handle.url + "/.well-known/agent-card.json?api_key=")
        assert "query-secret-55" not in card_ev.url
        assert json.loads(card_ev.response_body)["name"] == "recorded"
        assert (
            card_ev.peer.startswith("127.0.0.1:")
            and card_ev.ms >= 0
            and card_ev.server == "recorded"
        )

        assert stream_ev.rpc_method == "SendStreamingMessage" and stream_ev.status == 200
        task_id = json.loads(sent[0][5:])["result"]["task"]["id"]
        assert stream_ev.task_id == task_id
        assert len(stream_ev.frames) == len(sent)
        assert stream_ev.request_headers["authorization"] == "Bearer ***"

        assert len(huge_ev.request_body) == BODY_CAP  # kept up to the cap, never the whole body
        assert huge_ev.task_id is None  # a cut body is not JSON: no task is guessed from it
        assert (
            bad_ev.status == 415 and bad_ev.request_body == ""
        )  # refused unread: nothing was read

        for event in (card_ev, stream_ev, huge_ev, bad_ev):
            shown = str(vars(event)) + str(asdict(event)) + repr(event)
            assert TOKEN not in shown and "query-secret-55" not in shown
        assert TOKEN in "".join(
            sent
        )  # the answer carried it: the recorder masked it, not the server


async def test_the_bus_keeps_a_history_bounded_in_bytes_as_well_as_in_count():
    """Large exchanges (a long task's bodies, twice, each up to BODY_CAP) fill the bus's history by
    bytes long before its count; small ones by count. A reader that keeps up still sees them all."""
    bus = tn.EventBus(history=1000, history_bytes=2_000_000)
    seen: list[object] = []

    async def reader() -> None:
        async for ev in bus.subscribe(replay=False, max_queue=10_000):
            seen.append(ev)

    follow = asyncio.ensure_future(reader())
    await asyncio.sleep(0)
    tk = await tn.create_toolkit(builtins=False)
    try:
        async with (
            tk.serve(
                client=tn.demo_client(), record_wire=True, events=bus, a2a=tn.A2AConfig(name="big")
            ) as handle,
            httpx.AsyncClient(headers=V10, timeout=30) as http,
        ):
            text = "x" * 100_000
            for i in range(
                40
            ):  # the request and the reply each carry the text: ~200 KB an exchange
                answer = await http.post(
                    handle.url + "/",
                    json={
                        "jsonrpc": "2.0",
                        "id": i,
                        "method": "SendMessage",
                        "params": {"message": v10_message(f"{i} {text}")},
                    },
                )
                assert answer.status_code == 200
            await eventually(  # the last batch published
                lambda: sum(isinstance(e, tn.TrafficEvent) for e in seen) == 40
            )
            kept = bus.history()
            assert sum(map(size_of, kept)) <= 2_000_000 and len(kept) < 40
            traffic = [e for e in kept if isinstance(e, tn.TrafficEvent)]
            assert traffic and all(e.size > 100_000 for e in traffic)
            assert traffic[-1].request_body.startswith('{"jsonrpc"')  # the newest are the ones kept
            for _ in range(1100):  # small ones: bounded by count
                assert (await http.get(handle.card_url)).status_code == 200
            await eventually(lambda: sum(isinstance(e, tn.TrafficEvent) for e in seen) == 40 + 1100)
            assert len(bus.history()) == 1000 and sum(map(size_of, bus.history())) <= 2_000_000
    finally:
        follow.cancel()
    assert (
        sum(isinstance(e, tn.TrafficEvent) for e in seen) == 40 + 1100
    )  # every one reached the reader
    assert sum(isinstance(e, tn.TaskEvent) for e in seen) == 40 * 3
