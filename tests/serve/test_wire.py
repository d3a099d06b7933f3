"""Raw HTTP against a served toolkit: every row of the error table, each discipline rule, and each
dialect's exact shapes."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest
import pytest_asyncio
from a2a.compat.v0_3 import types as v03

import toolnexus as tn
from toolnexus.protocol.signing import card_view

from ..conftest import EXAMPLE_SKILLS
from .wire import V10, legacy_message, raw, rpc, sse, v03_message, v10_message

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def http():
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def small_server():
    """A server with a skills filter and a small body limit, to test those rules."""
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    handle = await tk.serve(
        client=tn.demo_client(),
        a2a=tn.A2AConfig(
            name="small", description="small limits", skills=["greet", "weather"], max_body=2048
        ),
    )
    yield handle
    await handle.stop()


async def count_tasks(handle) -> int:
    return len(await handle.tasks(limit=100))


# -- the envelope --------------------------------------------------------------------------------


async def test_parse_error_has_null_id(demo_server, http):
    r = await raw(http, demo_server.url, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert r.status_code == 200
    assert r.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: the body is not valid JSON"},
    }
    r = await raw(http, demo_server.url, b'\xff\xfe{"not utf-8"}')
    assert r.json()["error"]["code"] == -32700 and r.json()["id"] is None


@pytest.mark.parametrize(
    "body, rid, needle",
    [
        (
            [{"jsonrpc": "2.0", "id": 1, "method": "tasks/get"}],
            None,
            "batch requests are not supported",
        ),
        ("just a string", None, "must be a JSON object"),
        ({"jsonrpc": "1.0", "id": 7, "method": "tasks/get"}, 7, 'jsonrpc must be "2.0"'),
        ({"id": 7, "method": "tasks/get"}, 7, 'jsonrpc must be "2.0"'),
        (
            {"jsonrpc": "2.0", "id": True, "method": "tasks/get"},
            None,
            "id must be a string, a number or null",
        ),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tasks/get"}, None, "id must be"),
        ({"jsonrpc": "2.0", "id": "x", "method": 5}, "x", "method must be a non-empty string"),
    ],
)
async def test_invalid_requests(demo_server, http, body, rid, needle):
    r = await raw(http, demo_server.url, json.dumps(body))
    data = r.json()
    assert r.status_code == 200
    assert data["id"] == rid
    assert data["error"]["code"] == -32600
    assert needle in data["error"]["message"]
    assert "result" not in data


async def test_non_object_params(demo_server, http):
    data = await rpc(http, demo_server.url, "message/send", [1, 2])
    assert (
        data["error"]["code"] == -32602 and "params must be an object" in data["error"]["message"]
    )


async def test_unknown_method(demo_server, http):
    data = await rpc(http, demo_server.url, "tasks/explode", {})
    assert data == {
        "jsonrpc": "2.0",
        "id": "1",
        "error": {"code": -32601, "message": "Method not found: tasks/explode"},
    }


async def test_a_fault_under_json_rpc_is_a_bare_500_and_the_server_keeps_serving(
    small_server, http, caplog
):
    """``POST /`` is answered ahead of Starlette's middleware: a fault below its own error handling
    (here a read that raises) still gets the generic 500 and no traceback on the wire."""
    endpoint = small_server.a2a
    real = endpoint._read

    async def broken(request, headers):
        raise RuntimeError("secret detail /home/user/.env")

    endpoint._read = broken
    try:
        r = await raw(http, small_server.url, b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/get"}')
    finally:
        endpoint._read = real
    assert r.status_code == 500 and r.json() == {"error": "internal server error"}
    assert "secret" not in r.text and "Traceback" not in r.text
    assert "secret detail" in caplog.text  # the detail is for the server's log only
    data = await rpc(http, small_server.url, "tasks/get", {"id": "nope"})
    assert data["error"]["code"] == -32001
    r = await http.get(small_server.url + "/")  # other methods on / still get the router's 405
    assert r.status_code == 405


async def test_notification_runs_and_answers_204(demo_server, http):
    before = await count_tasks(demo_server)
    body = {
        "jsonrpc": "2.0",
        "method": "message/send",
        "params": {"message": v03_message("notify me")},
    }
    r = await http.post(demo_server.url + "/", json=body)
    assert r.status_code == 204 and r.content == b""
    for _ in range(100):
        if await count_tasks(demo_server) == before + 1:
            break
        await asyncio.sleep(0.02)
    tasks = await demo_server.tasks(limit=100)
    assert any(t.request == "notify me" for t in tasks)
    # a failing notification is swallowed: still 204, no body
    bad = {"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "missing"}}
    r = await http.post(demo_server.url + "/", json=bad)
    assert r.status_code == 204 and r.content == b""


# -- A2A-Version -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, version",
    [
        ("SendMessage", "2.0"),
        ("SendMessage", "0.3"),
        ("message/send", "2.0"),
        ("SendMessage", "abc"),
    ],
)
async def test_version_refused_before_anything_runs(demo_server, http, method, version):
    before = await count_tasks(demo_server)
    msg = (
        v10_message("should not run") if method == "SendMessage" else v03_message("should not run")
    )
    data = await rpc(
        http, demo_server.url, method, {"message": msg}, headers={"A2A-Version": version}
    )
    err = data["error"]
    assert err["code"] == -32009
    assert f"A2A-Version {version}" in err["message"] and "0.3, 1.0" in err["message"]
    assert await count_tasks(demo_server) == before


async def test_version_error_carries_error_info_for_pascal_case(demo_server, http):
    data = await rpc(http, demo_server.url, "GetTask", {"id": "x"}, headers={"A2A-Version": "3.1"})
    (info,) = data["error"]["data"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["reason"] == "VERSION_NOT_SUPPORTED" and info["domain"] == "a2a-protocol.org"
    assert info["metadata"] == {"supportedVersions": "0.3, 1.0"}


async def test_an_absent_version_is_read_from_the_method_or_route(demo_server, http):
    """No ``A2A-Version`` (issue 62 item 4): a 1.0 method name or route is served as 1.0, a 0.3
    one as 0.3, on JSON-RPC and HTTP+JSON; the spec reads absent as 0.3 and the official SDK
    refuses a 1.0 method so: our leniency, and why, is in docs/wire.md."""
    url = demo_server.url
    v10 = await rpc(http, url, "SendMessage", {"message": v10_message("hi")})
    assert v10["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    v03 = await rpc(http, url, "message/send", {"message": v03_message("hi")})
    assert v03["result"]["kind"] == "task" and v03["result"]["status"]["state"] == "completed"
    rest = await http.post(url + "/message:send", json={"message": v10_message("hi")})
    assert rest.status_code == 200
    assert rest.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for path in ("/tasks/ghost", "/v1/tasks/ghost"):  # not found, not a version refused (400)
        assert (await http.get(url + path)).status_code == 404


# -- messages ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "msg, needle",
    [
        (
            {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": "x"}]},
            "message.messageId is required",
        ),
        (
            {
                "kind": "message",
                "messageId": "m",
                "role": "agent",
                "parts": [{"kind": "text", "text": "x"}],
            },
            "message.role must be user",
        ),
        (
            {"kind": "message", "messageId": "m", "role": "user", "parts": []},
            "message.parts must be a non-empty array",
        ),
        (
            {"kind": "message", "messageId": "m", "role": "user"},
            "message.parts must be a non-empty array",
        ),
        (
            {"messageId": "m", "role": "user", "parts": [{}]},
            "message.parts[0] must have exactly one of text, raw, url, data",
        ),
        (
            {"messageId": "m", "role": "user", "parts": [{"text": "a", "data": {}}]},
            "message.parts[0] must have exactly one",
        ),
        (
            {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": 5}]},
            "message.parts[0].text must be a string",
        ),
        (
            {"messageId": "m", "role": "user", "parts": [{"kind": "video"}]},
            "message.parts[0].kind must be one of",
        ),
        ("not an object", "message must be an object"),
        (None, "message must be an object"),
    ],
)
async def test_message_validation_names_the_field(demo_server, http, msg, needle):
    before = await count_tasks(demo_server)
    data = await rpc(http, demo_server.url, "message/send", {"message": msg})
    assert data["error"]["code"] == -32602
    assert needle in data["error"]["message"]
    assert await count_tasks(demo_server) == before


async def test_file_parts_outside_the_input_modes_are_refused_with_content_type_not_supported(
    demo_server, http
):
    msg = {
        "kind": "message",
        "messageId": "m",
        "role": "user",
        "parts": [{"kind": "file", "file": {"uri": "http://x/y.png", "mimeType": "image/png"}}],
    }
    data = await rpc(http, demo_server.url, "message/send", {"message": msg})
    assert data["error"]["code"] == -32005


async def test_data_parts_are_accepted(demo_server, http):
    msg = {
        "kind": "message",
        "messageId": "m-data",
        "role": "user",
        "parts": [{"kind": "data", "data": {"q": 1}}],
    }
    data = await rpc(http, demo_server.url, "message/send", {"message": msg})
    said = data["result"]["artifacts"][0]["parts"][0]["text"]  # the demo echoes its prompt
    assert said.startswith('You said: {"q": 1}\n') and said.endswith("for tools: data.json.")


async def test_unknown_and_filtered_skills_give_identical_bytes(small_server, http):
    bodies = []
    for skill in ("report", "no-such-skill"):  # report exists but is filtered out
        msg = v03_message("hi", metadata={"skill": skill})
        r = await raw(
            http,
            small_server.url,
            json.dumps(
                {"jsonrpc": "2.0", "id": 9, "method": "message/send", "params": {"message": msg}}
            ),
        )
        bodies.append(r.content)
    assert bodies[0] == bodies[1]
    assert json.loads(bodies[0])["error"] == {"code": -32601, "message": "Method not found"}
    card = (await http.get(small_server.card_url)).json()
    assert [s["id"] for s in card["skills"]] == ["greet", "weather"]


async def test_a_chosen_skill_is_loaded(small_server, http):
    msg = v03_message("hello", metadata={"skill": "greet"})
    data = await rpc(http, small_server.url, "message/send", {"message": msg})
    assert data["result"]["artifacts"][0]["parts"][0]["text"].startswith('Using the "greet" skill')
    tasks = await small_server.tasks()
    assert tasks[0].skill == "greet"


async def test_body_over_the_limit_is_413_without_reading_it_whole(small_server, http):
    before = await count_tasks(small_server)
    big = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {"message": v03_message("x" * 5000)},
        }
    )
    r = await raw(http, small_server.url, big)
    assert r.status_code == 413 and "too large" in r.json()["error"]["message"]
    assert (
        r.json()["jsonrpc"] == "2.0"
        and r.json()["id"] is None
        and r.json()["error"]["code"] == -32600
    )

    async def chunks():  # no Content-Length: counted while streaming
        yield b'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": '
        for _ in range(100):
            yield b" " * 100

    r = await http.post(
        small_server.url + "/", content=chunks(), headers={"content-type": "application/json"}
    )
    assert r.status_code == 413
    assert await count_tasks(small_server) == before
    ok = await rpc(
        http, small_server.url, "message/send", {"message": v03_message("still serving")}
    )
    assert ok["result"]["status"]["state"] == "completed"


async def test_wrong_content_type_is_415(demo_server, http):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}})
    r = await http.post(demo_server.url + "/", content=body, headers={"content-type": "text/plain"})
    assert r.status_code == 415  # kept: it closes the browser's simple-request path
    error = r.json()  # and a JSON-RPC error object any client can read
    assert error["jsonrpc"] == "2.0" and error["id"] is None and error["error"]["code"] == -32600
    assert error["error"]["message"] == "Content-Type must be application/json, got text/plain"


async def test_unexpected_failures_are_a_generic_internal_error(http, caplog):
    class Broken:
        async def get(self, id):
            raise RuntimeError("secret detail /etc/passwd")

        async def save(self, task):
            raise RuntimeError("secret detail")

        async def list(self, query):
            raise RuntimeError("secret detail")

    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(store=Broken())) as h:
        data = await rpc(http, h.url, "tasks/get", {"id": "x"})
        assert data["error"] == {"code": -32603, "message": "Internal error"}
        data = await rpc(http, h.url, "GetTask", {"id": "x"}, headers=V10)
        assert data["error"]["code"] == -32603 and data["error"]["message"] == "Internal error"
        assert "secret" not in json.dumps(data)
    assert "secret detail" in caplog.text  # the detail reaches the server log only


# -- the rest of the error table -------------------------------------------------------------------


async def test_task_not_found_in_each_dialect(demo_server, http):
    v03 = await rpc(http, demo_server.url, "tasks/get", {"id": "nope"})
    assert v03["error"] == {"code": -32001, "message": "Task not found"}
    v10 = await rpc(http, demo_server.url, "GetTask", {"id": "nope"}, headers=V10)
    assert v10["error"] == {
        "code": -32001,
        "message": "Task not found",
        "data": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org",
                "metadata": {},
            }
        ],
    }
    legacy = await rpc(http, demo_server.url, "GetTask", {"id": "nope"})
    assert legacy["error"] == {"code": -32001, "message": "Task not found"}


async def test_cancel_a_terminal_task_is_not_cancelable(demo_server, http):
    done = await rpc(http, demo_server.url, "message/send", {"message": v03_message("quick")})
    tid = done["result"]["id"]
    data = await rpc(http, demo_server.url, "tasks/cancel", {"id": tid})
    assert data["error"]["code"] == -32002
    assert data["error"]["message"] == "Task cannot be canceled: it is already completed"
    v10 = await rpc(http, demo_server.url, "CancelTask", {"id": tid}, headers=V10)
    assert (
        v10["error"]["code"] == -32002
        and v10["error"]["data"][0]["reason"] == "TASK_NOT_CANCELABLE"
    )


@pytest.mark.parametrize(
    "method, headers, code",
    [("agent/getAuthenticatedExtendedCard", {}, -32007), ("GetExtendedAgentCard", V10, -32004)],
)
async def test_extended_card_on_an_agent_whose_card_declares_none(
    demo_server, http, method, headers, code
):
    """1.0 §3.3.4: no extended card declared is UnsupportedOperation; 0.3 has only "not configured"."""
    card = (await http.get(demo_server.card_url)).json()
    assert not card["capabilities"].get("extendedAgentCard") and not card.get(
        "supportsAuthenticatedExtendedCard"
    )
    assert (await rpc(http, demo_server.url, method, {}, headers=headers))["error"]["code"] == code


async def test_message_into_a_terminal_task(demo_server, http):
    done = await rpc(http, demo_server.url, "message/send", {"message": v03_message("finish")})
    task = done["result"]
    follow = v03_message("more", taskId=task["id"], contextId=task["contextId"])
    v03 = await rpc(http, demo_server.url, "message/send", {"message": follow})
    assert v03["error"]["code"] == -32602
    assert "is already completed; send a new message without taskId" in v03["error"]["message"]
    v10 = await rpc(
        http,
        demo_server.url,
        "SendMessage",
        {"message": v10_message("more", taskId=task["id"])},
        headers=V10,
    )
    assert v10["error"]["code"] == -32004
    after = await rpc(http, demo_server.url, "tasks/get", {"id": task["id"]})
    assert after["result"] == task  # unchanged
    unknown = await rpc(
        http, demo_server.url, "message/send", {"message": v03_message("x", taskId="ghost")}
    )
    assert unknown["error"]["code"] == -32001


async def test_streaming_refused_on_an_agent_that_does_not_stream(http):
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(streaming=False)) as h:
        data = await rpc(http, h.url, "message/stream", {"message": v03_message("x")})
        assert data["error"]["code"] == -32004
        card = (await http.get(h.card_url)).json()
        assert card["capabilities"]["streaming"] is False


# -- exact shapes per dialect ------------------------------------------------------------------------


async def test_v03_non_blocking_send_shape(demo_server, http):
    msg = v03_message("hello")
    data = await rpc(
        http,
        demo_server.url,
        "message/send",
        {"configuration": {"blocking": False}, "message": msg},
        id="7d5d",
    )
    res = data["result"]
    assert data["id"] == "7d5d"
    assert set(res) == {"kind", "id", "contextId", "status", "history"}
    assert res["kind"] == "task" and res["status"]["state"] == "submitted"
    assert res["history"] == [
        {
            "kind": "message",
            "messageId": msg["messageId"],
            "contextId": res["contextId"],
            "taskId": res["id"],
            "role": "user",
            "parts": [{"kind": "text", "text": "hello"}],
        }
    ]


async def test_v03_blocking_send_and_get_shape(demo_server, http):
    data = await rpc(
        http,
        demo_server.url,
        "message/send",
        {
            "configuration": {"acceptedOutputModes": [], "blocking": True},
            "message": v03_message("hi"),
        },
    )
    res = data["result"]
    assert res["status"]["state"] == "completed" and res["status"]["timestamp"].endswith("Z")
    (art,) = res["artifacts"]
    assert art["name"] == "reply" and art["parts"] == [{"kind": "text", "text": "You said: hi"}]
    agent = res["history"][-1]
    assert agent["kind"] == "message" and agent["role"] == "agent" and agent["taskId"] == res["id"]
    got = await rpc(http, demo_server.url, "tasks/get", {"id": res["id"], "historyLength": 1})
    assert got["result"]["history"] == [agent]
    got = await rpc(http, demo_server.url, "tasks/get", {"id": res["id"], "historyLength": 0})
    assert "history" not in got["result"]
    bad = await rpc(http, demo_server.url, "tasks/get", {"id": res["id"], "historyLength": -1})
    assert bad["error"]["code"] == -32602


async def test_v10_shapes(demo_server, http):
    sent = await rpc(
        http,
        demo_server.url,
        "SendMessage",
        {"message": v10_message("hello"), "configuration": {"returnImmediately": True}},
        headers=V10,
    )
    task = sent["result"]["task"]
    assert set(sent["result"]) == {"task"}
    assert "kind" not in task and task["status"] == {
        "state": "TASK_STATE_SUBMITTED",
        "timestamp": task["status"]["timestamp"],
    }
    assert task["history"][0]["role"] == "ROLE_USER" and task["history"][0]["parts"] == [
        {"text": "hello"}
    ]
    for _ in range(100):
        got = (await rpc(http, demo_server.url, "GetTask", {"id": task["id"]}, headers=V10))[
            "result"
        ]
        if got["status"]["state"] == "TASK_STATE_COMPLETED":
            break
        await asyncio.sleep(0.02)
    assert got["artifacts"] == [
        {
            "artifactId": got["artifacts"][0]["artifactId"],
            "name": "reply",
            "parts": [{"text": "You said: hello"}],
        }
    ]
    assert got["history"][-1]["role"] == "ROLE_AGENT"
    # blocking with an empty configuration, as the 1.x client sends it
    blocking = await rpc(
        http,
        demo_server.url,
        "SendMessage",
        {"message": v10_message("hi"), "configuration": {}},
        headers=V10,
    )
    assert blocking["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    # blocking:false is not a 1.0 flag: still blocking
    still = await rpc(
        http,
        demo_server.url,
        "SendMessage",
        {"message": v10_message("hi"), "configuration": {"blocking": False}},
        headers=V10,
    )
    assert still["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_v10_without_header_is_recognised_by_its_shapes(demo_server, http):
    sent = await rpc(http, demo_server.url, "SendMessage", {"message": v10_message("no header")})
    assert sent["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_toolnexus_legacy_exchange(demo_server, http):
    """Exactly what the toolnexus C#, Rust, JS, Go and Python clients send."""
    sent = await rpc(
        http,
        demo_server.url,
        "SendMessage",
        {"message": legacy_message("what is 6*7?"), "configuration": {"blocking": False}},
    )
    task = sent["result"]
    assert "kind" not in task and "task" not in task
    assert task["status"]["state"] == "submitted"
    assert task["history"][0]["parts"] == [{"kind": "text", "text": "what is 6*7?"}]
    assert task["history"][0]["role"] == "user" and "kind" not in task["history"][0]
    for _ in range(100):
        got = (await rpc(http, demo_server.url, "GetTask", {"id": task["id"]}))["result"]
        if got["status"]["state"] == "completed":
            break
        await asyncio.sleep(0.02)
    assert "kind" not in got
    assert got["artifacts"][0]["parts"] == [{"kind": "text", "text": "You said: what is 6*7?"}]
    # no configuration at all: still answers at once
    nocfg = await rpc(http, demo_server.url, "SendMessage", {"message": legacy_message("slow 1")})
    assert nocfg["result"]["status"]["state"] == "submitted"
    canceled = await rpc(http, demo_server.url, "CancelTask", {"id": nocfg["result"]["id"]})
    assert canceled["result"]["status"]["state"] == "canceled" and "kind" not in canceled["result"]


async def test_v03_stream_frames(demo_server, http):
    frames = await sse(
        http, demo_server.url, "message/stream", {"message": v03_message("hello")}, id="f42b"
    )
    results = [f["result"] for f in frames]
    assert all(f["id"] == "f42b" and f["jsonrpc"] == "2.0" for f in frames)
    assert [r["kind"] for r in results] == [
        "task",
        "status-update",
        "artifact-update",
        "status-update",
    ]
    assert results[0]["status"]["state"] == "submitted"
    assert results[1]["status"]["state"] == "working" and results[1]["final"] is False
    assert results[2]["append"] is False and results[2]["lastChunk"] is True
    assert results[2]["artifact"]["parts"] == [{"kind": "text", "text": "You said: hello"}]
    assert results[3]["status"]["state"] == "completed" and results[3]["final"] is True


async def test_v10_stream_frames(demo_server, http):
    frames = await sse(
        http,
        demo_server.url,
        "SendStreamingMessage",
        {"message": v10_message("hello")},
        headers=V10,
    )
    results = [f["result"] for f in frames]
    assert [next(iter(r)) for r in results] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert results[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert "final" not in results[1]["statusUpdate"]
    assert results[2]["artifactUpdate"]["lastChunk"] is True
    assert results[3]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_resubscribe(demo_server, http):
    sent = await rpc(
        http,
        demo_server.url,
        "message/send",
        {"message": v03_message("slow 0.5"), "configuration": {"blocking": False}},
    )
    tid = sent["result"]["id"]
    frames = await sse(http, demo_server.url, "tasks/resubscribe", {"id": tid})
    kinds = [(f["result"]["kind"], f["result"].get("status", {}).get("state")) for f in frames]
    assert kinds[0][0] == "task" and kinds[-1] == ("status-update", "completed")
    again = await rpc(http, demo_server.url, "SubscribeToTask", {"id": tid}, headers=V10)
    assert again["error"]["code"] == -32004


async def test_a_failed_v03_resubscribe_is_a_4xx(demo_server, http):
    """0.3 §7.9 wants a 4xx/5xx for a failed resubscribe; 1.0 answers JSON-RPC errors with 200."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "tasks/resubscribe", "params": {"id": "nope"}}
    r = await http.post(demo_server.url + "/", json=body)
    assert r.status_code == 404 and r.json()["error"]["code"] == -32001 and r.json()["id"] == 7
    done = await rpc(http, demo_server.url, "message/send", {"message": v03_message("quick")})
    body["params"] = {"id": done["result"]["id"]}
    r = await http.post(demo_server.url + "/", json=body)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32004
    v10 = await rpc(http, demo_server.url, "SubscribeToTask", {"id": "nope"}, headers=V10)
    assert v10["error"]["code"] == -32001


async def test_list_tasks(demo_server, http):
    ctx = "list-ctx"
    for i in range(3):
        await rpc(
            http,
            demo_server.url,
            "SendMessage",
            {"message": v10_message(f"item {i}", contextId=ctx)},
            headers=V10,
        )
    page1 = (
        await rpc(
            http, demo_server.url, "ListTasks", {"contextId": ctx, "pageSize": 2}, headers=V10
        )
    )["result"]
    assert page1["totalSize"] == 3 and page1["pageSize"] == 2 and len(page1["tasks"]) == 2
    assert page1["nextPageToken"]
    assert all("artifacts" not in t for t in page1["tasks"])
    page2 = (
        await rpc(
            http,
            demo_server.url,
            "ListTasks",
            {
                "contextId": ctx,
                "pageSize": 2,
                "pageToken": page1["nextPageToken"],
                "includeArtifacts": True,
            },
            headers=V10,
        )
    )["result"]
    assert len(page2["tasks"]) == 1 and page2["nextPageToken"] == ""
    assert page2["tasks"][0]["artifacts"]
    ids = {t["id"] for t in page1["tasks"] + page2["tasks"]}
    assert len(ids) == 3
    done = (
        await rpc(
            http,
            demo_server.url,
            "ListTasks",
            {"status": "TASK_STATE_COMPLETED", "pageSize": 100},
            headers=V10,
        )
    )["result"]
    assert all(t["status"]["state"] == "TASK_STATE_COMPLETED" for t in done["tasks"])
    for bad in (
        {"pageSize": 0.5},
        {"pageSize": 101},
        {"pageSize": 0},
        {"pageSize": -1},
        {"status": "TASK_STATE_BORED"},
        {"pageToken": "zz"},
        {"statusTimestampAfter": "-1"},
        {"statusTimestampAfter": "not-a-time"},
        {"statusTimestampAfter": "2026-12-01"},
        {"statusTimestampAfter": "2026-12-01T08:00:00"},
    ):  # no zone: not a protobuf Timestamp
        err = await rpc(http, demo_server.url, "ListTasks", bad, headers=V10)
        assert err["error"]["code"] == -32602, bad
    assert (
        "from 1 to 100, got 0"
        in (await rpc(http, demo_server.url, "ListTasks", {"pageSize": 0}, headers=V10))["error"][
            "message"
        ]
    )


async def test_list_tasks_status_timestamp_after_is_a_time_at_or_after(demo_server, http):
    ctx = "since-ctx"
    first = (
        await rpc(
            http,
            demo_server.url,
            "SendMessage",
            {"message": v10_message("one", contextId=ctx)},
            headers=V10,
        )
    )["result"]["task"]
    stamp = first["status"]["timestamp"]  # the first task's last change: itself included (>=)
    await rpc(
        http,
        demo_server.url,
        "SendMessage",
        {"message": v10_message("two", contextId=ctx)},
        headers=V10,
    )
    listed = await rpc(
        http,
        demo_server.url,
        "ListTasks",
        {"contextId": ctx, "statusTimestampAfter": stamp},
        headers=V10,
    )
    assert listed["result"]["totalSize"] == 2
    # the same instant written with an offset: compared as a time, not as a string
    from datetime import datetime, timedelta, timezone

    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(
        timezone(timedelta(hours=2))
    )
    shifted = await rpc(
        http,
        demo_server.url,
        "ListTasks",
        {"contextId": ctx, "statusTimestampAfter": when.isoformat()},
        headers=V10,
    )
    assert shifted["result"]["totalSize"] == 2
    later = (when + timedelta(days=1)).isoformat()
    none = await rpc(
        http,
        demo_server.url,
        "ListTasks",
        {"contextId": ctx, "statusTimestampAfter": later},
        headers=V10,
    )
    assert none["result"]["totalSize"] == 0


# -- input-required in every dialect -----------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["0.3", "1.0", "legacy"])
async def test_input_required_round_trip(demo_server, http, dialect):
    method, make, headers, states = {
        "0.3": ("message/send", v03_message, {}, ("input-required", "completed")),
        "1.0": (
            "SendMessage",
            v10_message,
            V10,
            ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"),
        ),
        "legacy": ("SendMessage", legacy_message, {}, ("input-required", "completed")),
    }[dialect]
    config = {"blocking": True}
    first = await rpc(
        http,
        demo_server.url,
        method,
        {"message": make("confirm the refund"), "configuration": config},
        headers=headers,
    )
    task = first["result"]["task"] if dialect == "1.0" else first["result"]
    assert task["status"]["state"] == states[0]
    question = task["status"]["message"]["parts"][0]
    assert question.get("text") == "Do you approve: confirm the refund?"
    answer = make("no, not now", taskId=task["id"], contextId=task["contextId"])
    second = await rpc(
        http, demo_server.url, method, {"message": answer, "configuration": config}, headers=headers
    )
    done = second["result"]["task"] if dialect == "1.0" else second["result"]
    assert done["id"] == task["id"] and done["contextId"] == task["contextId"]
    assert done["status"]["state"] == states[1]
    text = done["artifacts"][0]["parts"][0]["text"]
    assert text == "Request declined (no, not now). Nothing was done."
    roles = [m["role"] for m in done["history"]]
    assert len(roles) == 4  # user, agent question, user answer, agent reply


async def test_stream_ends_at_input_required(demo_server, http):
    frames = await sse(
        http, demo_server.url, "message/stream", {"message": v03_message("please approve this")}
    )
    last = frames[-1]["result"]
    assert (
        last["kind"] == "status-update"
        and last["status"]["state"] == "input-required"
        and last["final"] is True
    )


async def test_context_id_mismatch_is_refused(demo_server, http):
    first = await rpc(http, demo_server.url, "message/send", {"message": v03_message("confirm x")})
    task = first["result"]
    wrong = v03_message("yes", taskId=task["id"], contextId="another-context")
    data = await rpc(http, demo_server.url, "message/send", {"message": wrong})
    assert data["error"]["code"] == -32602 and "does not match" in data["error"]["message"]
    await rpc(http, demo_server.url, "tasks/cancel", {"id": task["id"]})


# -- the card -------------------------------------------------------------------------------------------


async def test_card_layouts_etag_and_legacy_path(demo_server, http):
    r = await http.get(demo_server.card_url)
    card = r.json()
    url = demo_server.url + "/"
    assert card["name"] == "demo-desk" and card["protocolVersion"] == "0.3.0" and card["url"] == url
    assert card["preferredTransport"] == "JSONRPC"
    assert card["supportedInterfaces"] == [
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"},
    ]
    assert card["additionalInterfaces"] == [
        {"url": url, "transport": "JSONRPC"},
        {"url": url, "transport": "HTTP+JSON"},
    ]
    # 0.3's stateTransitionHistory, truthfully (issue 62 item 6): a task keeps no past states
    caps = {"streaming": True, "pushNotifications": True, "stateTransitionHistory": False}
    assert card["capabilities"] == caps
    assert v03.AgentCard.model_validate(card).capabilities.state_transition_history is False
    assert "stateTransitionHistory" not in card_view(card)["capabilities"]  # not a 1.0 field
    assert card["defaultInputModes"] == ["text/plain"] and card["defaultOutputModes"] == [
        "text/plain"
    ]
    assert {s["id"]: s["tags"] for s in card["skills"]} == {
        "greet": ["greeting", "small-talk"],
        "report": ["report", "approval"],
        "weather": ["weather", "forecast"],
    }
    assert "provider" not in card
    etag = r.headers["etag"]
    assert etag.startswith('W/"')
    r2 = await http.get(demo_server.card_url, headers={"If-None-Match": etag})
    assert r2.status_code == 304 and r2.content == b""
    legacy = await http.get(demo_server.url + "/.well-known/agent.json")
    assert legacy.json() == card
    # answered ahead of the router: the same headers, HEAD without a body, other methods still 405
    assert (
        r.headers["content-type"] == "application/json"
        and r.headers["cache-control"] == "max-age=60"
    )
    assert int(r.headers["content-length"]) == len(r.content)
    head = await http.head(demo_server.card_url)
    assert (
        head.status_code == 200
        and head.content == b""
        and head.headers["content-length"] == r.headers["content-length"]
    )
    assert (await http.post(demo_server.card_url, json={})).status_code == 405
    assert (
        await http.get(demo_server.card_url, headers={"If-None-Match": 'W/"other", ' + etag})
    ).status_code == 304


async def test_the_card_caches_with_max_age_etag_and_last_modified(demo_server, http):
    """As the TCK's 1.0 branch checks: Cache-Control with max-age, an ETag and a Last-Modified,
    conditional requests answered 304 without a body (If-None-Match first, RFC 9110 §13.2.2)."""
    from email.utils import formatdate, parsedate_to_datetime

    r = await http.get(demo_server.card_url)
    assert r.headers["cache-control"] == "max-age=60"
    modified = r.headers["last-modified"]
    stamp = parsedate_to_datetime(modified).timestamp()
    for headers, status in (
        ({"If-Modified-Since": modified}, 304),
        ({"If-Modified-Since": formatdate(stamp + 3600, usegmt=True)}, 304),
        ({"If-Modified-Since": formatdate(stamp - 3600, usegmt=True)}, 200),
        ({"If-Modified-Since": "not a date"}, 200),
        ({"If-Modified-Since": "Tue, 01 Dec 2026 08:00:00"}, 200),  # no zone: not an HTTP date
        ({"If-None-Match": 'W/"other"', "If-Modified-Since": modified}, 200),  # the ETag decides
        ({"If-None-Match": r.headers["etag"], "If-Modified-Since": "not a date"}, 304),
    ):
        for method in ("GET", "HEAD"):
            again = await http.request(method, demo_server.card_url, headers=headers)
            assert again.status_code == status, (method, headers)
            assert (
                again.headers["etag"] == r.headers["etag"]
                and again.headers["last-modified"] == modified
            )
            assert again.content == (r.content if status == 200 and method == "GET" else b"")


async def test_our_client_asks_for_a_card_it_has_conditionally(demo_server, tmp_path):
    from toolnexus.client.peer import fetch_card
    from toolnexus.debug.cassette import CassetteWriter
    from toolnexus.traffic import TrafficRecorder

    traffic = TrafficRecorder()
    first = await fetch_card(
        demo_server.url, traffic=traffic, headers={"X-Probe": str(uuid.uuid4())}
    )
    headers = {"X-Probe": "again-" + str(uuid.uuid4())}
    await fetch_card(
        demo_server.url, traffic=traffic, headers=headers
    )  # other headers: asked afresh
    second = await fetch_card(demo_server.url, traffic=traffic, headers=headers)
    assert second.raw == first.raw
    statuses = [e.status for e in traffic.events if e.method == "GET"]
    assert statuses == [200, 200, 304], statuses
    asked = traffic.events[-1].request_headers
    assert {k.lower() for k in asked} >= {"if-none-match", "if-modified-since"}
    # the doctor, and a client recording a cassette (replayed where nothing is cached), get it whole
    await fetch_card(demo_server.url, traffic=traffic, headers=headers, cached=False)
    traffic.cassette = CassetteWriter(tmp_path / "card.jsonl")
    await fetch_card(demo_server.url, traffic=traffic, headers=headers)
    traffic.cassette.close()
    assert [e.status for e in traffic.events if e.method == "GET"][-2:] == [200, 200]
    assert not {k.lower() for k in traffic.events[-1].request_headers} & {
        "if-none-match",
        "if-modified-since",
    }


async def test_seed_example_one_card_defaults_and_no_profile_404(http):
    tk = await tn.create_toolkit(
        builtins=False, skills=[tn.SkillDef("greet", "says hello", "Say a friendly hello.")]
    )
    async with tk.serve("127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig()) as h:
        card = (await http.get(h.url + "/.well-known/agent-card.json")).json()
        assert card["name"] == "toolnexus-agent"
        assert card["protocolVersion"] == "0.3.0"
        assert card["url"] == h.url + "/"
        assert card["description"] == "An A2A agent with 1 skill: greet (says hello)."
        assert card["version"] == "0.1.0"
        assert card["skills"] == [  # the agent's modes on the skill (fasta2a's client needs them)
            {
                "id": "greet",
                "name": "greet",
                "description": "says hello",
                "tags": ["greet"],
                "inputModes": ["text/plain"],
                "outputModes": ["text/plain"],
            }
        ]
    bare = await tn.create_toolkit(builtins=False)
    async with bare.serve("127.0.0.1:0", client=tn.demo_client()) as h:
        for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
            assert (await http.get(h.url + path)).status_code == 404
        r = await http.post(h.url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "message/send"})
        assert r.status_code == 404


async def test_provider_and_config_block(http, tmp_path):
    cfg = {
        "builtins": False,
        "a2a": {
            "name": "from-config",
            "description": "configured",
            "provider": {"organization": "acme", "url": "https://acme.example"},
        },
    }
    tk = await tn.create_toolkit(config=cfg)
    async with tk.serve(client=tn.demo_client()) as h:
        card = (await http.get(h.card_url)).json()
    assert card["name"] == "from-config" and card["provider"] == {
        "organization": "acme",
        "url": "https://acme.example",
    }
    with pytest.raises(tn.ConfigError, match="a2a.nmae is not a known option"):
        await (await tn.create_toolkit(config={"builtins": False, "a2a": {"nmae": "x"}})).serve()


# -- a message to a task that is working ----------------------------------------------------------


@pytest.mark.parametrize("dialect", ["0.3", "1.0"])
async def test_a_message_to_a_working_task_reaches_the_model_at_its_next_turn(http, dialect):
    """Spec §3.3.3 lets an agent take it, both official SDK servers do: in order, in the history."""
    seen: list[list[str]] = []
    release = asyncio.Event()

    async def model(request):
        seen.append([m["content"] for m in request["messages"] if m["role"] == "user"])
        if len(seen) == 1:
            await release.wait()  # the first turn is still thinking when the second message comes
        return {"content": f"reply to {seen[-1][-1]}"}

    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.create_in_process_client(model), a2a=tn.A2AConfig(name="thinker")
    ) as h:
        if dialect == "0.3":
            first = (
                await rpc(
                    http,
                    h.url,
                    "message/send",
                    {"message": v03_message("first part"), "configuration": {"blocking": False}},
                )
            )["result"]
            tid, ctx = first["id"], first["contextId"]
            more = await rpc(
                http,
                h.url,
                "message/send",
                {
                    "message": v03_message("and a second part", taskId=tid, contextId=ctx),
                    "configuration": {"blocking": False},
                },
            )
            assert more["result"]["status"]["state"] in ("submitted", "working"), more
        else:
            first = (
                await rpc(
                    http,
                    h.url,
                    "SendMessage",
                    {
                        "message": v10_message("first part"),
                        "configuration": {"returnImmediately": True},
                    },
                    headers=V10,
                )
            )["result"]["task"]
            tid, ctx = first["id"], first["contextId"]
            more = await rpc(
                http,
                h.url,
                "SendMessage",
                {
                    "message": v10_message("and a second part", taskId=tid, contextId=ctx),
                    "configuration": {"returnImmediately": True},
                },
                headers=V10,
            )
            assert more["result"]["task"]["status"]["state"] in (
                "TASK_STATE_SUBMITTED",
                "TASK_STATE_WORKING",
            ), more
        release.set()
        task = await h.runner.wait(await h.runner.get(tid), 10)
    assert task.state.value == "completed"
    assert seen == [
        ["first part"],
        ["first part", "and a second part"],
    ]  # the next turn had it, in order
    assert task.reply == "reply to and a second part"
    assert [(m.role, m.text) for m in task.history] == [
        ("user", "first part"),
        ("user", "and a second part"),
        ("agent", "reply to and a second part"),
    ]


async def test_messages_waiting_for_a_working_task_are_bounded(http):
    from toolnexus.serve.lifecycle import INBOX_LIMIT

    release = asyncio.Event()

    async def model(request):
        await release.wait()
        return {"content": "done"}

    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.create_in_process_client(model), a2a=tn.A2AConfig(name="busy")
    ) as h:
        first = (
            await rpc(
                http,
                h.url,
                "message/send",
                {"message": v03_message("start"), "configuration": {"blocking": False}},
            )
        )["result"]
        more = {
            "message": v03_message("more", taskId=first["id"]),
            "configuration": {"blocking": False},
        }
        for _ in range(INBOX_LIMIT):
            more["message"] = v03_message("more", taskId=first["id"])
            assert "result" in await rpc(http, h.url, "message/send", more)
        more["message"] = v03_message("one too many", taskId=first["id"])
        refused = await rpc(http, h.url, "message/send", more)
        assert (
            refused["error"]["code"] == -32602
            and "messages waiting for its next turn" in refused["error"]["message"]
        )
        release.set()
        task = await h.runner.wait(await h.runner.get(first["id"]), 10)
    assert (
        task.state.value == "completed"
        and sum(m.text == "more" for m in task.history) == INBOX_LIMIT
    )


async def test_get_task_of_a_finished_task_is_the_same_in_each_dialect_and_history_length(
    demo_server, http
):
    """GetTask answers of finished tasks are kept rendered; each dialect and historyLength its own."""
    done = (await rpc(http, demo_server.url, "message/send", {"message": v03_message("quick")}))[
        "result"
    ]
    tid = done["id"]
    first = [await rpc(http, demo_server.url, "tasks/get", {"id": tid}) for _ in range(2)]
    assert first[0]["result"] == first[1]["result"] and first[0]["result"]["kind"] == "task"
    assert len(first[0]["result"]["history"]) == 2
    short = await rpc(http, demo_server.url, "tasks/get", {"id": tid, "historyLength": 1})
    assert len(short["result"]["history"]) == 1
    v10 = await rpc(http, demo_server.url, "GetTask", {"id": tid}, headers=V10)
    assert (
        v10["result"]["status"]["state"] == "TASK_STATE_COMPLETED" and "kind" not in v10["result"]
    )
    again = await rpc(http, demo_server.url, "tasks/get", {"id": tid}, id="other-id")
    assert again["id"] == "other-id" and again["result"] == first[0]["result"]
