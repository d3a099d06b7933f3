"""Push notifications, both ways, with real peers: the official a2a-sdk 1.x client (its 1.0 and
0.3 transports) sets configs on our served agent, which POSTs every change to a webhook; our
client sets configs on the official Python SDK server and the official JavaScript SDK server,
whose notifications land in our WebhookReceiver."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
import time
import tracemalloc
import uuid

import httpx
import pytest
import pytest_asyncio
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import toolnexus as tn
from toolnexus import _json
from toolnexus.client.webhook import WebhookReceiver
from toolnexus.events import EventBus, TrafficEvent
from toolnexus.http.server import AsgiServer
from toolnexus.protocol.model import TaskState
from toolnexus.protocol.push import PushConfig, webhook_refusal

from ..helpers import STEADY_MALLOC, Served, receiver_process, rss_mib
from ..peers import raw_on_loopback
from ..peers.js_peer import js_server
from ..peers.sdk_server import sdk_server
from .test_sdk_interop import message, sdk_client

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")
from a2a.compat.v0_3 import types as v03  # noqa: E402
from a2a.types import a2a_pb2 as pb  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

FINAL = (TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def receiver():
    async with WebhookReceiver() as rx:
        yield rx


class Hook:
    """A plain webhook (not ours): answers with the statuses it is given, in turn, then 200;
    ``delay`` seconds before each answer. Keeps every request it got."""

    def __init__(self, statuses: tuple[int, ...] = (), delay: float = 0.0) -> None:
        self.statuses = list(statuses)
        self.delay = delay
        self.got: list[tuple[float, dict[str, str], dict]] = []
        self.server = AsgiServer(Starlette(routes=[Route("/hook", self.hook, methods=["POST"])]))

    inflight = 0
    peak = 0  # the most requests it held at once

    async def hook(self, request: Request) -> JSONResponse:
        self.inflight += 1
        self.peak = max(self.peak, self.inflight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.inflight -= 1
        self.got.append((time.monotonic(), dict(request.headers), await request.json()))
        return JSONResponse({}, self.statuses.pop(0) if self.statuses else 200)

    @property
    def url(self) -> str:
        return self.server.url + "/hook"

    async def wait(self, n: int, timeout: float = 15.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.got) < n:
                await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def hook(*statuses: int, delay: float = 0.0):
    h = Hook(statuses, delay)
    await h.server.start()
    try:
        yield h
    finally:
        await h.server.stop()


def states(rx: WebhookReceiver, task_id: str) -> list[TaskState]:
    return [n.state for n in rx.received(task_id) if n.state is not None]


async def rpc(handle, method: str, params: dict, headers: dict | None = None) -> dict:
    async with httpx.AsyncClient() as http:
        r = await http.post(
            handle.url + "/",
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
            headers={"A2A-Version": "1.0", **(headers or {})} if "/" not in method else headers,
        )
        return r.json()


# -- the official SDK client against our agent --------------------------------------------------


async def test_sdk_client_sets_a_config_and_every_change_reaches_the_webhook_as_stream_responses(
    demo_server, receiver
):
    target = receiver.target()
    async with sdk_client(demo_server, "1.0") as client:
        request = pb.SendMessageRequest(
            message=message("slow 1 then reply"),
            configuration=pb.SendMessageConfiguration(return_immediately=True),
        )
        task = [ev.task async for ev in client.send_message(request) if ev.HasField("task")][0]
        made = await client.create_task_push_notification_config(
            pb.TaskPushNotificationConfig(task_id=task.id, url=target.url, token=target.token)
        )
        assert made.id and made.task_id == task.id and made.url == target.url
        got = await client.get_task_push_notification_config(
            pb.GetTaskPushNotificationConfigRequest(task_id=task.id, id=made.id)
        )
        assert got.url == target.url and got.token == target.token
        listed = await client.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert [c.id for c in listed.configs] == [made.id]
        await receiver.wait(task.id, state=TaskState.COMPLETED)
        await client.delete_task_push_notification_config(
            pb.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=made.id)
        )
        listed = await client.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert list(listed.configs) == []
    assert states(receiver, task.id)[-1] is TaskState.COMPLETED
    # every body is a StreamResponse the SDK itself can read
    kinds = []
    for n in receiver.received(task.id):
        parsed = json_format.ParseDict(n.body, pb.StreamResponse())
        kinds.append(parsed.WhichOneof("payload"))
    assert "artifact_update" in kinds and kinds[-1] == "status_update"


@pytest.mark.parametrize("version", ["1.0", "rest", "rest-0.3"])
async def test_configs_are_listed_in_pages(demo_server, receiver, version):
    """ListTaskPushNotificationConfigs pages (§3.1.9): pageSize at a time, a token to the next
    page, "" at the last; absent, every config in one page; a token it never gave is -32602."""
    async with sdk_client(demo_server, "1.0") as client:
        request = pb.SendMessageRequest(
            message=message("slow 5"),
            configuration=pb.SendMessageConfiguration(return_immediately=True),
        )
        task = [ev.task async for ev in client.send_message(request) if ev.HasField("task")][0]
        made = []
        for _ in range(3):
            target = receiver.target()
            config = pb.TaskPushNotificationConfig(
                task_id=task.id, url=target.url, token=target.token
            )
            made.append((await client.create_task_push_notification_config(config)).id)
    if version == "rest-0.3":  # the SDK's 0.3 REST client has no list: its routes, by hand
        async with httpx.AsyncClient(base_url=demo_server.url) as http:
            pages, token = [], None
            for _ in range(3):
                query = {"pageSize": 2, **({"pageToken": token} if token else {})}
                got = await http.get(f"/v1/tasks/{task.id}/pushNotificationConfigs", params=query)
                body = got.json()
                pages.append([c["name"].rsplit("/", 1)[1] for c in body["configs"]])
                token = body["nextPageToken"]
                if not token:
                    break
        assert pages == [made[:2], made[2:]]
        return
    async with sdk_client(demo_server, version) as client:
        listed = pb.ListTaskPushNotificationConfigsRequest(task_id=task.id, page_size=2)
        first = await client.list_task_push_notification_configs(listed)
        assert [c.id for c in first.configs] == made[:2] and first.next_page_token
        listed.page_token = first.next_page_token
        last = await client.list_task_push_notification_configs(listed)
        assert [c.id for c in last.configs] == made[2:] and last.next_page_token == ""
        whole = await client.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert [c.id for c in whole.configs] == made and whole.next_page_token == ""
        with pytest.raises(Exception, match="pageToken is not one this server gave out"):
            listed.page_token = "elsewhere"
            await client.list_task_push_notification_configs(listed)
    async with tn.A2AClient(
        demo_server.url, binding="http+json" if version == "rest" else "auto"
    ) as peer:
        assert [c.id for c in await peer.list_push(task.id, page_size=1)] == made
        await peer.cancel(task.id)


async def test_sdk_client_sends_with_a_config_and_hears_of_every_state_from_submitted(
    demo_server, receiver
):
    target = receiver.target()
    async with sdk_client(demo_server, "1.0") as client:
        config = pb.SendMessageConfiguration(
            return_immediately=True,
            task_push_notification_config=pb.TaskPushNotificationConfig(
                url=target.url, token=target.token
            ),
        )
        task = [
            ev.task
            async for ev in client.send_message(
                pb.SendMessageRequest(message=message("hello push"), configuration=config)
            )
            if ev.HasField("task")
        ][0]
    await receiver.wait(task.id, state=TaskState.COMPLETED)
    assert states(receiver, task.id) == [
        TaskState.SUBMITTED,
        TaskState.WORKING,
        TaskState.COMPLETED,
    ]


async def test_sdk_03_client_gets_whole_tasks_in_the_03_shapes(demo_server, receiver):
    target = receiver.target()
    async with sdk_client(demo_server, "0.3") as client:
        task = [
            ev.task
            async for ev in client.send_message(
                pb.SendMessageRequest(
                    message=message("slow 1 please"),
                    configuration=pb.SendMessageConfiguration(return_immediately=True),
                )
            )
            if ev.HasField("task")
        ][0]
        made = await client.create_task_push_notification_config(
            pb.TaskPushNotificationConfig(task_id=task.id, url=target.url, token=target.token)
        )
        assert made.id and made.url == target.url
        listed = await client.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert [c.id for c in listed.configs] == [made.id]
    done = await receiver.wait(task.id, state=TaskState.COMPLETED)
    for n in receiver.received(task.id):
        assert v03.Task.model_validate(n.body).id == task.id  # the 0.3 SDK's own model reads it
    assert done.body["kind"] == "task" and done.body["artifacts"]


async def test_the_03_wire_shapes_of_set_get_list_delete(demo_server, receiver):
    """Raw 0.3 JSON-RPC: ``{taskId, pushNotificationConfig}`` in and out, ``null`` for delete."""
    target = receiver.target()
    sent = await rpc(
        demo_server,
        "message/send",
        {
            "configuration": {"blocking": False},
            "message": {
                "kind": "message",
                "messageId": str(uuid.uuid4()),
                "role": "user",
                "parts": [{"kind": "text", "text": "slow 1"}],
            },
        },
    )
    tid = sent["result"]["id"]
    made = await rpc(
        demo_server,
        "tasks/pushNotificationConfig/set",
        {
            "taskId": tid,
            "pushNotificationConfig": {
                "url": target.url,
                "token": target.token,
                "authentication": {"schemes": ["Bearer"], "credentials": "c1"},
            },
        },
    )
    body = made["result"]["pushNotificationConfig"]
    assert made["result"]["taskId"] == tid and body["authentication"] == {
        "schemes": ["Bearer"],
        "credentials": "c1",
    }
    got = await rpc(demo_server, "tasks/pushNotificationConfig/get", {"id": tid})
    assert got["result"]["pushNotificationConfig"]["id"] == body["id"]
    listed = await rpc(demo_server, "tasks/pushNotificationConfig/list", {"id": tid})
    assert [c["pushNotificationConfig"]["id"] for c in listed["result"]] == [body["id"]]
    await receiver.wait(tid, state=TaskState.COMPLETED)
    gone = await rpc(
        demo_server,
        "tasks/pushNotificationConfig/delete",
        {"id": tid, "pushNotificationConfigId": body["id"]},
    )
    assert gone == {"jsonrpc": "2.0", "id": 1, "result": None}
    missing = await rpc(
        demo_server,
        "tasks/pushNotificationConfig/get",
        {"id": tid, "pushNotificationConfigId": body["id"]},
    )
    assert missing["error"]["code"] == -32001
    unknown = await rpc(demo_server, "tasks/pushNotificationConfig/list", {"id": "no-such-task"})
    assert unknown["error"]["code"] == -32001


async def test_the_card_says_push_notifications_are_served(demo_server):
    async with httpx.AsyncClient() as http:
        card = (await http.get(demo_server.card_url)).json()
    assert card["capabilities"]["pushNotifications"] is True


@pytest.mark.parametrize(
    "method",
    [
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "CreateTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "SendMessage",
    ],
)
async def test_an_agent_with_push_notifications_off_says_so_everywhere(method):
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="quiet", description="d", push_notifications=False),
    ) as handle:
        params = {"id": "x", "taskId": "x", "url": "http://127.0.0.1:9/h"}
        if method == "SendMessage":  # a send carrying a config is refused before any task is made
            params = {
                "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/h"}},
            }
        data = await rpc(handle, method, params)
        assert data["error"]["code"] == -32003
        assert await handle.tasks() == []
        async with httpx.AsyncClient() as http:
            card = (await http.get(handle.card_url)).json()
        assert card["capabilities"]["pushNotifications"] is False


# -- what the agent refuses, and a slow or failing webhook ---------------------------------------


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/x", "http://user:pw@127.0.0.1:9/x", "not a url", "self"]
)
async def test_a_webhook_the_agent_must_not_call_is_refused_and_creates_no_task(demo_server, url):
    url = demo_server.url + "/" if url == "self" else url
    before = len(await demo_server.tasks(limit=100))
    out = await rpc(
        demo_server,
        "SendMessage",
        {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "hi"}],
            },
            "configuration": {"taskPushNotificationConfig": {"url": url}},
        },
    )
    assert out["error"]["code"] == -32602 and "refused" in out["error"]["message"]
    assert len(await demo_server.tasks(limit=100)) == before


async def test_an_agent_beyond_loopback_refuses_private_webhooks():
    assert webhook_refusal("http://10.1.2.3/h", ("0.0.0.0", 80), private_ok=False)
    assert webhook_refusal("http://localhost:9/h", ("0.0.0.0", 80), private_ok=False)
    assert webhook_refusal("http://[::1]:9/h", ("0.0.0.0", 80), private_ok=False)
    assert webhook_refusal("http://169.254.169.254/latest", ("0.0.0.0", 80), private_ok=False)
    assert webhook_refusal("https://hooks.example.com/h", ("0.0.0.0", 80), private_ok=False) is None
    assert (
        webhook_refusal("http://127.0.0.1:80/", ("0.0.0.0", 80)) is not None
    )  # itself, through any address
    # end to end: the same rule, asked for on a loopback agent
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="strict", description="d", push_private_ok=False),
    ) as handle:
        async with tn.A2AClient(handle.url) as peer:
            task = await peer.send("hi")
            with pytest.raises(tn.RPCError, match="local or private"):
                await peer.set_push(task.id, "http://127.0.0.1:9/hook")


async def test_a_slow_webhook_never_slows_the_task_and_hears_every_state_in_order():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        hook(delay=1.0) as slow,
        tk.serve(
            "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="p", description="d")
        ) as handle,
    ):
        async with tn.A2AClient(handle.url) as peer:
            started = time.monotonic()
            task = await peer.send(
                "hello", blocking=True, push=PushConfig("", slow.url, token="t0k3n-value")
            )
            assert task.state is TaskState.COMPLETED
            assert time.monotonic() - started < 0.9  # the webhook takes a second per notification
            await slow.wait(3)
            assert await handle.runner.push.drain(5)
            # once a finished task's last notification is sent, nothing of its sender is left running
            senders = [
                s for configs in handle.runner.push._configs.values() for s in configs.values()
            ]
            assert senders and all(s.task is None for s in senders)
    bodies = [
        body["statusUpdate"]["status"]["state"] for _, _, body in slow.got if "statusUpdate" in body
    ]
    assert bodies == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert all(headers["x-a2a-notification-token"] == "t0k3n-value" for _, headers, _ in slow.got)


async def test_a_failing_webhook_is_retried_with_backoff_and_a_refusing_one_is_not():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        hook(503, 500) as flaky,
        hook(404) as wrong,
        tk.serve(
            "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="p", description="d")
        ) as handle,
    ):
        handle.runner.push.retry_delays = (0.05, 0.1, 0.2)
        async with tn.A2AClient(handle.url) as peer:
            task = await peer.send("slow 1")
            await peer.set_push(task.id, flaky.url, scheme="Bearer", credentials="cr3d")
            await peer.set_push(task.id, wrong.url)
            await flaky.wait(3)  # two refusals, then the same notification again, accepted
            assert await handle.runner.push.drain(10)
        assert [body for _, _, body in flaky.got][:3] == [flaky.got[0][2]] * 3
        assert (
            flaky.got[1][0] - flaky.got[0][0] >= 0.04 and flaky.got[2][0] - flaky.got[1][0] >= 0.09
        )
        assert flaky.got[0][1]["authorization"] == "Bearer cr3d"
        # 404 is an answer: each notification is tried once
        assert len(wrong.got) == len({str(b) for _, _, b in wrong.got})
        assert handle.runner.push.failed >= 1 and handle.runner.push.delivered >= 3


async def test_a_webhook_answering_without_end_is_read_bounded_and_the_agent_keeps_serving():
    async def endless(request: Request):
        from starlette.responses import StreamingResponse

        async def forever():
            while True:
                yield b"\x1b[2J" * 4096  # terminal control, and no end
                await asyncio.sleep(0)

        return StreamingResponse(forever(), media_type="text/plain")

    hostile = AsgiServer(Starlette(routes=[Route("/hook", endless, methods=["POST"])]))
    await hostile.start()
    bus = EventBus()
    tk = await tn.create_toolkit(builtins=False)
    try:
        async with tk.serve(
            "127.0.0.1:0",
            client=tn.demo_client(),
            events=bus,
            record_wire=True,
            a2a=tn.A2AConfig(name="p", description="d"),
        ) as handle:
            async with tn.A2AClient(handle.url) as peer:
                started = time.monotonic()
                task = await peer.send(
                    "hello", blocking=True, push=PushConfig("", hostile.url + "/hook")
                )
                assert await handle.runner.push.drain(10)
                assert time.monotonic() - started < 5
                assert (await peer.get(task.id)).state is TaskState.COMPLETED  # still serving
            assert handle.runner.push.delivered == 4  # submitted, working, the reply, completed
    finally:
        await hostile.stop()
    rows = [e for e in bus.history() if isinstance(e, TrafficEvent) and e.rpc_method == "push"]
    assert rows and all(len(r.response_body) <= 4096 for r in rows)


async def test_configs_belong_to_the_tasks_owner():
    tk = await tn.create_toolkit(builtins=False)
    auth = tn.Auth.bearer("alice-token", "bob-token")
    async with tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="p", description="d", auth=auth),
    ) as handle:
        alice = {"Authorization": "Bearer alice-token"}
        bob = {"Authorization": "Bearer bob-token"}
        async with (
            tn.A2AClient(handle.url, headers=alice) as a,
            tn.A2AClient(handle.url, headers=bob) as b,
        ):
            task = await a.send("slow 2")
            made = await a.set_push(task.id, "http://127.0.0.1:9/hook")
            with pytest.raises(tn.RPCError) as seen:
                await b.list_push(task.id)
            assert seen.value.code == -32001
            with pytest.raises(tn.RPCError):
                await b.set_push(task.id, "http://127.0.0.1:9/other")
            assert [c.id for c in await a.list_push(task.id)] == [made.id]


async def test_server_side_deliveries_are_on_the_hosted_wire_masked(receiver):
    bus = EventBus()
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        events=bus,
        record_wire=True,
        a2a=tn.A2AConfig(name="wired", description="d"),
    ) as handle:
        async with tn.A2AClient(handle.url) as peer:
            target = receiver.target()
            task = await peer.send("hello", push=target)
            await receiver.wait(task.id, state=TaskState.COMPLETED)
            assert await handle.runner.push.drain(5)
    rows = [e for e in bus.history() if isinstance(e, TrafficEvent) and e.rpc_method == "push"]
    assert rows and all(
        r.direction == "out" and r.task_id == task.id and r.server == "wired" for r in rows
    )
    assert all(
        target.token not in r.request_headers.get("x-a2a-notification-token", "") for r in rows
    )
    assert all(r.status == 200 for r in rows)


# -- our client and receiver against the official SDK servers -------------------------------------


@pytest.mark.parametrize("compat", [False, True], ids=["1.0", "0.3"])
async def test_our_client_against_the_python_sdk_server(compat, receiver):
    async with sdk_server(compat=compat, push=True) as url:
        async with tn.A2AClient(url, dialect="0.3" if compat else "auto") as peer:
            task = await peer.send("echo with push", push=receiver.target())
            await receiver.wait(task.id, state=TaskState.COMPLETED)
            assert TaskState.COMPLETED in states(receiver, task.id)
            slow = await peer.send("slow one")
            made = await peer.set_push(slow.id, receiver.target())
            assert made.id and made.url == receiver.url
            assert [c.id for c in await peer.list_push(slow.id)] == [made.id]
            assert (await peer.get_push(slow.id, made.id)).url == receiver.url
            await peer.delete_push(slow.id, made.id)
            assert await peer.list_push(slow.id) == []
            await peer.cancel(slow.id)


async def test_our_client_against_the_javascript_sdk_server(receiver):
    async with js_server() as url:
        async with tn.A2AClient(url) as peer:
            task = await peer.send("slow echo", push=receiver.target())
            done = await receiver.wait(task.id, state=TaskState.COMPLETED, timeout=15)
            assert done.body["statusUpdate"]["taskId"] == task.id
            again = await peer.send("slow echo two")
            made = await peer.set_push(again.id, receiver.target())
            assert [c.id for c in await peer.list_push(again.id)] == [made.id]
            await receiver.wait(again.id, state=TaskState.COMPLETED, timeout=15)


# -- the receiver ---------------------------------------------------------------------------------


async def test_the_receiver_refuses_forged_huge_and_foreign_notifications():
    bus = EventBus()
    async with WebhookReceiver(bus=bus, max_body=1000) as rx:
        good = rx.target("t1")
        async with httpx.AsyncClient() as http:
            forged = await http.post(
                rx.url,
                json={"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_FAILED"}}},
                headers={"X-A2A-Notification-Token": "guess"},
            )
            huge = await http.post(
                rx.url,
                content=b"{" + b" " * 5000 + b"}",
                headers={"X-A2A-Notification-Token": good.token},
            )
            junk = await http.post(
                rx.url,
                content=b"\x1b[31mnot json",
                headers={"X-A2A-Notification-Token": good.token},
            )
            foreign = await http.post(
                rx.url,
                json={},
                headers={"Host": "attacker.example", "X-A2A-Notification-Token": good.token},
            )
            ok = await http.post(
                rx.url,
                json={"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_WORKING"}}},
                headers={"Authorization": f"Bearer {good.token}"},
            )
        assert (
            forged.status_code,
            huge.status_code,
            junk.status_code,
            foreign.status_code,
            ok.status_code,
        ) == (401, 413, 400, 421, 200)
        assert [(n.task_id, n.state) for n in rx.notifications] == [("t1", TaskState.WORKING)]
    rows = [e for e in bus.history() if isinstance(e, TrafficEvent)]
    assert [r.status for r in rows] == [
        401,
        413,
        400,
        200,
    ]  # the forged one is on the wire, not kept
    assert all(good.token not in r.request_headers.get("authorization", "") for r in rows)
    assert rows[-1].task_id == "t1" and rows[-1].direction == "in" and rows[-1].rpc_method == "push"


async def test_odd_answers_from_a_hostile_peer_are_clear_errors():
    answers = iter([5, [{"url": 7}], "\x1b[2J[b]not a config[/b]", {"configs": {"id": "x"}}])

    async def rpc_answer(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": next(answers)})

    server = AsgiServer(Starlette(routes=[Route("/", rpc_answer, methods=["POST"])]))
    await server.start()
    card = {
        "name": "odd",
        "url": server.url + "/",
        "supportedInterfaces": [
            {"url": server.url + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
    }
    try:
        async with tn.A2AClient(card) as peer:
            with pytest.raises(tn.PeerError, match="is not a list"):
                await peer.list_push("t1")
            with pytest.raises(tn.PeerError, match="url must be a string"):
                await peer.list_push("t1")
            with pytest.raises(tn.PeerError, match="must be an object"):
                await peer.get_push("t1")
            with pytest.raises(tn.PeerError, match="is not a list"):
                await peer.list_push("t1")
    finally:
        await server.stop()


# -- trust, round 2: the address connected to, shared renderings, one destination's share ---------


def about(body: dict) -> str:
    """The task a 1.0 notification is about."""
    return (body.get("statusUpdate") or body.get("artifactUpdate") or {}).get("taskId", "")


INWARD = [
    "2130706433",
    "127.1",
    "0x7f000001",
    "0",
    "0177.0.0.1",
    "[::ffff:127.0.0.1]",
    "localhost.",
    "2852039166",
    "169.254.169.254.",
]


@pytest.mark.parametrize("binding", ["jsonrpc", "http+json"])
async def test_loopback_by_another_spelling_is_refused_on_every_binding(binding):
    tk = await tn.create_toolkit(builtins=False)
    async with (
        hook() as inside,
        tk.serve(
            "127.0.0.1:0",
            client=tn.demo_client(),
            a2a=tn.A2AConfig(name="strict", description="d", push_private_ok=False),
        ) as handle,
    ):
        async with tn.A2AClient(handle.url, binding=binding) as peer:
            task = await peer.send("slow 1")
            for host in INWARD:
                with pytest.raises(tn.RPCError, match="local or private|this agent itself") as seen:
                    await peer.set_push(task.id, f"http://{host}:{inside.server.port}/hook")
                assert seen.value.code == -32602, host
            assert await peer.list_push(task.id) == []
            with pytest.raises(
                tn.RPCError, match="local or private"
            ):  # in a send's configuration too
                await peer.send(
                    "hi", push=PushConfig("", f"http://127.1:{inside.server.port}/hook")
                )
    assert inside.got == []


async def test_a_name_that_resolves_inward_is_refused_where_it_connects_and_a_loopback_agent_pins_it(
    caplog,
):
    name = socket.gethostname()  # a name (not an address) that this machine resolves to itself
    resolved = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    assert resolved and not any(ipaddress.ip_address(a).is_global for a in resolved), resolved
    tk = await tn.create_toolkit(builtins=False)
    async with hook() as inside:
        url = f"http://{name}:{inside.server.port}/hook"
        bus = EventBus()
        async with tk.serve(
            "127.0.0.1:0",
            client=tn.demo_client(),
            a2a=tn.A2AConfig(name="strict", description="d", push_private_ok=False),
            events=bus,
            record_wire=True,
        ) as handle:
            async with tn.A2AClient(handle.url) as peer:
                task = await peer.send(
                    "hello", push=PushConfig("", url), blocking=True
                )  # a name: taken
                assert task.state is TaskState.COMPLETED
                assert await handle.runner.push.drain(5)
        refused = [
            e for e in bus.history() if isinstance(e, TrafficEvent) and e.rpc_method == "push"
        ]
        assert inside.got == [] and handle.runner.push.delivered == 0
        assert refused and all(
            "local or private" in (ev.error or "") and ev.status is None for ev in refused
        )
        assert "not sent" in caplog.text
        # the same name on an agent that may call loopback: it connects to the address it resolved,
        # and the webhook sees the name it was given in Host
        async with tk.serve(
            "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="loose", description="d")
        ) as handle:
            async with tn.A2AClient(handle.url) as peer:
                await peer.send("hello", push=PushConfig("", url), blocking=True)
                assert await handle.runner.push.drain(5)
    assert len(inside.got) >= 3 and {h["host"] for _, h, _ in inside.got} == {
        f"{name}:{inside.server.port}"
    }


async def test_one_change_is_rendered_once_for_every_config_and_what_waits_is_bounded_in_bytes(
    monkeypatch,
):
    from toolnexus.serve import push as push_module

    monkeypatch.setattr(push_module, "QUEUED_BYTES", 8 * 2**20)
    monkeypatch.setattr(push_module, "TOTAL_BYTES", 24 * 2**20)
    big = "x" * 900_000
    release = asyncio.Event()

    async def model(request):  # each task works until its ten configs are set, however long
        await release.wait()  # that takes (a fixed "slow 2" ended some first on a loaded machine)
        return {"content": "done"}

    tk = await tn.create_toolkit(builtins=False)
    async with (
        hook(delay=3600) as never,
        tk.serve(
            "127.0.0.1:0",
            client=tn.create_in_process_client(model),
            a2a=tn.A2AConfig(name="p", description="d"),
        ) as handle,
    ):
        notifier = handle.runner.push
        notifier.timeout = 3600  # a webhook that takes the request and never answers
        async with tn.A2AClient(
            handle.url, dialect="0.3"
        ) as peer:  # 0.3 configs get the whole task
            tasks = []
            for _ in range(30):
                task = await peer.send(big)  # its ten configs set while it runs
                for _ in range(10):
                    await peer.set_push(task.id, never.url)
                tasks.append(task.id)
            tracemalloc.start(4)  # who makes what from here: the last bodies are the notifier's
            try:
                release.set()
                newest = await peer.get(tasks[-1])
                while not newest.state.terminal:
                    await asyncio.sleep(0.05)
                    newest = await peer.get(tasks[-1])
                made, waiting = tracemalloc.take_snapshot(), notifier.queued_bytes
            finally:
                tracemalloc.stop()
            for task_id in tasks:
                done = await peer.get(task_id)
                while not done.state.terminal:
                    await asyncio.sleep(0.05)
                    done = await peer.get(task_id)
            held: dict[int, int] = {}
            shared = 0
            for task_id in tasks:
                senders = list(notifier._configs[task_id].values())
                assert len(senders) == 10
                # the last change (completed) is one body for the ten configs, not ten copies
                last = {id(s.queue[-1]) for s in senders if s.queue}
                assert len(last) <= 1
                shared += sum(1 for s in senders if s.queue) == 10
                for s in senders:
                    for body in s.queue:
                        held[id(body)] = len(body.data)
            every = [s for configs in notifier._configs.values() for s in configs.values()]
            for s in (
                every
            ):  # each body knows the queues that hold it (shedding asks it, not every sender)
                assert all(s in body.queued for body in s.queue)
                assert all(body in q.queue for body in s.queue for q in body.queued)
            biggest = max(held.values())
            assert biggest > 900_000  # whole tasks, each carrying the big message
            in_flight = push_module.PER_DESTINATION * biggest
            assert sum(held.values()) <= notifier.queued_bytes <= sum(held.values()) + in_flight
            # and the bodies made at the end took no more memory than their bytes (orjson's own,
            # kept, held the room it set aside as it wrote: 74.8 MB for 8.1 MB, never written)
            made = made.filter_traces([tracemalloc.Filter(True, _json.__file__)])
            bodies = [
                t
                for t in made.traces
                if any(f.filename == push_module.__file__ for f in t.traceback)
            ]
            assert sum(t.size for t in bodies) <= waiting + 64 * len(bodies)
            # one destination: what waits for it stays within its own bound, a config's newest
            # included (each config kept its newest past it: 30 tasks' whole renderings)
            assert notifier.queued_bytes <= 8 * 2**20 + in_flight and notifier.failed > 0
            assert shared >= 2  # the newest tasks: all ten configs wait with the one body
            assert (
                never.peak == push_module.PER_DESTINATION
            )  # one destination: never more POSTs at once
            assert (await peer.get(tasks[0])).state is TaskState.COMPLETED  # and it keeps serving


async def test_a_dead_webhook_delays_only_its_own_and_callers_take_turns_at_a_slow_one():
    tk = await tn.create_toolkit(builtins=False)
    auth = tn.Auth.bearer("alice-token", "bob-token")
    async with (
        hook(delay=3600) as dead,
        hook() as healthy,
        hook(delay=0.1) as slow,
        tk.serve(
            "127.0.0.1:0",
            client=tn.demo_client(),
            a2a=tn.A2AConfig(name="p", description="d", auth=auth),
        ) as handle,
    ):
        handle.runner.push.timeout = 3600
        alice = tn.A2AClient(handle.url, headers={"Authorization": "Bearer alice-token"})
        bob = tn.A2AClient(handle.url, headers={"Authorization": "Bearer bob-token"})
        async with alice, bob:
            for _ in range(30):  # alice: 300 configs on a webhook that never answers
                task = await alice.send("slow 1")
                for _ in range(10):
                    await alice.set_push(task.id, dead.url)
            async with asyncio.timeout(15):
                while dead.inflight < 4:
                    await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)
            assert dead.peak == 4 and dead.got == []
            mine = await bob.send("hello", push=PushConfig("", healthy.url), blocking=True)
            await healthy.wait(4)  # bob's webhook hears every change while alice's still hang
            assert dead.got == [] and dead.inflight == 4
            assert {about(b) for _, _, b in healthy.got} == {mine.id}
            assert "TASK_STATE_COMPLETED" in str(healthy.got[-1][2])
            # one slow webhook shared by both: alice's 60 configs queue theirs, then bob's one
            hers = []
            for _ in range(6):
                hers.append(task := await alice.send("slow 2"))  # configs set while it runs
                for _ in range(10):
                    await alice.set_push(task.id, slow.url)
            for task in hers:  # every one of her 60 configs has its notifications waiting
                while not (await alice.get(task.id)).state.terminal:
                    await asyncio.sleep(0.02)
            delivered = len(
                slow.got
            )  # hers so far: what came before bob's was queued is no test of turns
            late = await bob.send("hi", push=PushConfig("", slow.url), blocking=True)
            async with asyncio.timeout(30):
                while not any(
                    about(b) == late.id and "COMPLETED" in str(b) for _, _, b in slow.got
                ):
                    await asyncio.sleep(0.02)
            slow_left = sum(
                len(s.queue)
                for c in handle.runner.push._configs.values()
                for s in c.values()
                if s.config.url == slow.url
            )
        order = [about(b) for _, _, b in slow.got]
        # bob takes turns with alice, not with each of her configs: his comes within a few of hers
        assert order.index(late.id) - delivered < 16 and slow_left > 20


@contextlib.asynccontextmanager
async def reads_and_never_answers():
    """A webhook that takes every request whole and never answers; yields its URL."""

    async def held(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            pass

    async with raw_on_loopback(held) as url:
        yield url + "/hook"


async def _grown_by(sends: int, url: str | None, configs: int) -> float:
    """What ``sends`` tasks of 0.9 MB, each with ``configs`` push configs on ``url`` (None: no
    push), grow a ``toolnexus serve`` by (RSS, MiB), once every task has finished."""
    big = "x" * 900_000
    async with Served(env=STEADY_MALLOC) as served:
        started = await served.until(lambda lines: served.events("started"))
        async with tn.A2AClient(started[0]["url"], dialect="0.3") as peer:  # whole tasks
            await peer.send(f"warm up {big}", push=PushConfig("", url) if url else None)
            await asyncio.sleep(1)
            before = rss_mib(served.proc.pid)
            tasks = []
            for _ in range(sends):
                task = await peer.send(f"slow 2 {big}", push=PushConfig("", url) if url else None)
                for _ in range(configs - 1 if url else 0):
                    await peer.set_push(task.id, url)
                tasks.append(task.id)
            for task_id in tasks:
                while not (await peer.get(task_id, history_length=0)).state.terminal:
                    await asyncio.sleep(0.05)
            return rss_mib(served.proc.pid) - before


async def test_what_waits_for_a_webhook_is_bounded_in_the_agents_memory():
    """Issue 49: the bytes ``docs/security.md`` promises (16 MiB waiting for one destination), in
    the resident memory of a real ``toolnexus serve``, against the same sends without push: ten
    configs per task on a webhook that takes requests and never answers, one config per task on
    a port that refuses at once, and on a webhook that answers at once. They grew the agent by
    about 400 MiB more than no push: a body a delivery was done with stayed listed for shedding,
    each config kept its newest past the bound, orjson's spare room (6x a body) was kept with
    it, and httpx's request cycles held each POST's body until a rare collection."""
    from toolnexus.serve.push import PER_DESTINATION, QUEUED_BYTES

    # a port bound and never listened on, held till the end: every connection is refused at once
    # (one closed after bind(0) went back to the range other processes' listeners draw from)
    with socket.socket() as refusing:
        refusing.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{refusing.getsockname()[1]}/hook"
        async with reads_and_never_answers() as never, hook() as answers:
            without = await _grown_by(40, None, 0)
            grown = {
                "never answers, ten configs": await _grown_by(40, never, 10),
                "refuses, one config": await _grown_by(40, refused, 1),
                "answers, one config": await _grown_by(40, answers.url, 1),
            }
    body = 3 * 900_000  # a whole task: the message, the reply and its artifact
    # MiB a push holds besides its bodies (configs, senders, connections): 0.6-3.2 measured where
    # nothing waits (answers); where bodies wait, 6.5-15 in all. With the allocator's threshold
    # left to move (no STEADY_MALLOC), what it kept of freed bodies came on top: 20-97 MiB
    other = 4
    bound = (QUEUED_BYTES + PER_DESTINATION * body) / 2**20 + other
    over = {case: round(mib - without) for case, mib in grown.items()}
    assert all(extra <= bound for extra in over.values()), (over, bound)


async def test_what_the_receiver_keeps_is_bounded_in_bytes():
    """Issue 59 item 4, in a receiver's resident memory: it kept up to 1,000 notifications of up to
    1 MiB each from any holder of one token (200 of 1 MB grew it by 236 MiB, 1,000 about 1.2 GB),
    and its wire log 200 bodies of 256 KiB. Now the notifications kept are at most MAX_KEPT bytes
    together, and so are the wire log's bodies: 200 of 1 MB grow it no more than that over as many
    small ones (measured: 46 MiB more; 243 MiB before)."""
    from toolnexus.client.webhook import MAX_KEPT

    def body(pad: int) -> bytes:
        update = {"taskId": "t1", "status": {"state": "TASK_STATE_WORKING"}}
        return json.dumps({"statusUpdate": {**update, "metadata": {"pad": "x" * pad}}}).encode()

    async def grown(proc, url: str, token: str, pad: int) -> float:
        before = rss_mib(proc.pid)
        headers = {"X-A2A-Notification-Token": token, "content-type": "application/json"}
        async with httpx.AsyncClient(timeout=30) as http:
            for _ in range(200):
                assert (await http.post(url, content=body(pad), headers=headers)).status_code == 200
        return rss_mib(proc.pid) - before

    async with receiver_process() as (proc, url, token):
        small = await grown(proc, url, token, 100)
        large = await grown(proc, url, token, 1_000_000)
    # MiB it holds besides what it keeps (the notification in hand): 1.2-1.3 measured, its
    # resident memory steady (receiver_process); 14 before, what glibc kept of freed bodies with it
    other = 8
    assert large - small < 2 * MAX_KEPT / 2**20 + other, (small, large)
