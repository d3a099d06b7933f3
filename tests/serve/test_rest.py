"""The HTTP+JSON (REST) binding, A2A 1.0 §11, both ways: a served toolkit answering raw HTTP and
the official JS SDK's REST client; our client against the official Python SDK's and JS SDK's REST
servers. (The Python SDK's REST client against us runs in test_sdk_interop.py, as its "rest"
transport.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid

import httpx
import pytest

import toolnexus as tn
from toolnexus.errors import TaskNotCancelableError, TaskNotFoundError
from toolnexus.protocol.model import TaskState

from ..peers.js_peer import js_client, js_server
from ..peers.sdk_server import follow_the_script, sdk_server

V10 = {"A2A-Version": "1.0"}
TOKEN = "rest-secret-4417"


def _send_body(text: str, **config) -> dict:
    body: dict = {
        "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    }
    if config:
        body["configuration"] = config
    return body


def _reason(r: httpx.Response) -> tuple[int, str, str]:
    """(HTTP status, google.rpc status, A2A reason) of an error answer, checking its shape."""
    error = r.json()["error"]
    assert error["code"] == r.status_code and isinstance(error["message"], str) and error["message"]
    [info] = error["details"]
    assert (
        info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
        and info["domain"] == "a2a-protocol.org"
    )
    return r.status_code, error["status"], info["reason"]


async def test_every_route_answers_as_the_binding_writes_it():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="rest-desk")) as handle,
        httpx.AsyncClient(base_url=handle.url, headers=V10, timeout=30) as http,
    ):
        card = (await http.get("/.well-known/agent-card.json")).json()
        assert {
            "url": handle.url + "/",
            "protocolBinding": "HTTP+JSON",
            "protocolVersion": "1.0",
        } in card["supportedInterfaces"]

        sent = await http.post("/message:send", json=_send_body("hello rest"))
        assert sent.status_code == 200 and sent.headers["content-type"].startswith(
            "application/a2a+json"
        )
        task = sent.json()["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"][0]["parts"][0]["text"] == "You said: hello rest"

        got = await http.get(f"/tasks/{task['id']}", params={"historyLength": "1"})
        assert (
            got.status_code == 200
            and got.json()["id"] == task["id"]
            and len(got.json()["history"]) == 1
        )
        listed = (
            await http.get("/tasks", params={"pageSize": "1", "includeArtifacts": "true"})
        ).json()
        assert (
            listed["pageSize"] == 1 and listed["tasks"][0]["artifacts"] and listed["totalSize"] >= 1
        )

        # a stream: SSE whose data is a StreamResponse, no JSON-RPC envelope
        async with http.stream("POST", "/message:stream", json=_send_body("stream it")) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            frames = [
                json.loads(line[5:])
                async for line in stream.aiter_lines()
                if line.startswith("data:")
            ]
        assert list(frames[0]) == ["task"] and "jsonrpc" not in frames[0]
        assert [next(iter(f)) for f in frames[1:]] == [
            "statusUpdate",
            "artifactUpdate",
            "statusUpdate",
        ]
        assert frames[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"

        slow = (
            await http.post("/message:send", json=_send_body("slow 20", returnImmediately=True))
        ).json()["task"]
        canceled = await http.post(f"/tasks/{slow['id']}:cancel")
        assert (
            canceled.status_code == 200
            and canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"
        )
        assert _reason(await http.post(f"/tasks/{slow['id']}:cancel")) == (
            400,
            "FAILED_PRECONDITION",
            "TASK_NOT_CANCELABLE",
        )
        # a finished task has nothing to follow, on GET as on POST
        for verb in ("GET", "POST"):
            assert (
                _reason(await http.request(verb, f"/tasks/{task['id']}:subscribe"))[2]
                == "UNSUPPORTED_OPERATION"
            )

        # push configs: the agent itself is no webhook; a real one is kept, listed, read, deleted
        base = f"/tasks/{task['id']}/pushNotificationConfigs"
        assert (
            _reason(await http.post(base, json={"url": handle.url + "/hook"}))[2]
            == "INVALID_PARAMS"
        )
        made = (
            await http.post(base, json={"url": "http://127.0.0.1:9/hook", "token": "t-1"})
        ).json()
        assert made["taskId"] == task["id"] and made["url"] == "http://127.0.0.1:9/hook"
        assert [c["id"] for c in (await http.get(base)).json()["configs"]] == [made["id"]]
        assert (await http.get(f"{base}/{made['id']}")).json()["token"] == "t-1"
        assert (await http.delete(f"{base}/{made['id']}")).json() == {}
        assert _reason(await http.get(f"{base}/{made['id']}"))[2] == "TASK_NOT_FOUND"

        # what is wrong gets the HTTP status of §5.4 and its reason; nothing runs
        before = len((await http.get("/tasks", params={"pageSize": "100"})).json()["tasks"])
        assert _reason(await http.get("/tasks/no-such-task")) == (
            404,
            "NOT_FOUND",
            "TASK_NOT_FOUND",
        )
        assert _reason(await http.get("/tasks", params={"pageSize": "0"}))[:2] == (
            400,
            "INVALID_ARGUMENT",
        )
        assert _reason(await http.get("/tasks", params={"pageSize": "many"}))[2] == "INVALID_PARAMS"
        assert (
            _reason(await http.get("/tasks", params={"includeArtifacts": "yes"}))[2]
            == "INVALID_PARAMS"
        )
        assert (
            _reason(
                await http.post(
                    "/message:send",
                    content=b"{not json",
                    headers={"Content-Type": "application/json"},
                )
            )[2]
            == "PARSE_ERROR"
        )
        assert _reason(await http.post("/message:send", json=["a", "list"]))[2] == "INVALID_PARAMS"
        assert _reason(await http.post("/message:send", json={"message": {"parts": "x"}}))[0] == 400
        deep: dict = {}
        nest = deep
        for _ in range(90):
            nest["a"] = nest = {}
        too_deep = _send_body("deep")
        too_deep["message"]["metadata"] = deep
        refused = await http.post(
            "/message:send", json=too_deep
        )  # the same limit as JSON-RPC's params
        assert (
            _reason(refused)[2] == "INVALID_PARAMS"
            and "nested deeper than 64 levels" in refused.text
        )
        assert _reason(
            await http.post("/message:send", json=_send_body("hi"), headers={"A2A-Version": "0.3"})
        ) == (400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED")
        assert _reason(await http.get("/extendedAgentCard"))[2] == "UNSUPPORTED_OPERATION"
        wrong_type = await http.post(
            "/message:send", content=b"hi", headers={"Content-Type": "text/plain"}
        )
        assert wrong_type.status_code == 415 and wrong_type.json()["error"]["code"] == 415
        huge = await http.post(
            "/message:send",
            content=b"{" + b" " * (2 * 1024 * 1024) + b"}",
            headers={"Content-Type": "application/json"},
        )
        assert huge.status_code == 413 and huge.json()["error"]["code"] == 413
        assert len((await http.get("/tasks", params={"pageSize": "100"})).json()["tasks"]) == before


async def test_auth_and_no_traceback_on_the_rest_routes():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(auth=tn.Auth.bearer(TOKEN))) as handle,
        httpx.AsyncClient(base_url=handle.url, timeout=30) as http,
    ):
        for verb, path in (
            ("POST", "/message:send"),
            ("GET", "/tasks"),
            ("GET", "/tasks/x"),
            ("POST", "/tasks/x:cancel"),
            ("GET", "/tasks/x/pushNotificationConfigs"),
        ):
            r = await http.request(verb, path, json=_send_body("hi") if verb == "POST" else None)
            assert r.status_code == 401 and r.json()["error"]["status"] == "UNAUTHENTICATED"
            assert r.headers["www-authenticate"] == "Bearer"
        ok = await http.post(
            "/message:send", json=_send_body("hi"), headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert ok.status_code == 200 and "Traceback" not in ok.text
        # our client reads the refusal as one, over REST as over JSON-RPC; the doctor says so too
        async with tn.A2AClient(handle.url, binding="http+json") as client:
            with pytest.raises(
                tn.PeerError, match=r"GetTask answered HTTP 401 \(authentication required\)"
            ):
                await client.get("x")
        report = await tn.doctor(handle.url)
        refusals = {
            f.check.split(" at ")[0]: f.severity
            for f in report.findings
            if "refuses calls without credentials (HTTP 401)" in f.message
        }
        assert {"JSONRPC 1.x", "JSONRPC 0.x", "HTTP+JSON 1.x", "HTTP+JSON 0.x"} <= set(refusals)
        assert set(refusals.values()) == {"info"}  # the card declares the scheme


async def test_our_client_picks_rest_when_the_card_offers_only_it_python_sdk():
    async with sdk_server(binding="HTTP+JSON", push=True) as url, tn.A2AClient(url) as client:
        assert (client.binding, client.dialect.value) == ("HTTP+JSON", "1.0")
        assert "HTTP+JSON" in client.dialect_reason
        await follow_the_script(client, "hello sdk rest")
        page = await client.list_tasks(page_size=2)
        assert len(page["tasks"]) == 2 and page["total_size"] >= 4
        verbs = {(e.method, e.rpc_method) for e in client.traffic.events}
        assert {
            ("POST", "SendMessage"),
            ("GET", "GetTask"),
            ("POST", "SendStreamingMessage"),
            ("POST", "CancelTask"),
            ("DELETE", "DeleteTaskPushNotificationConfig"),
        } <= verbs
        assert all(
            "tok-script" not in e.request_body + e.response_body for e in client.traffic.events
        )


async def test_our_client_against_the_js_sdk_rest_server():
    async with js_server(rest=True) as url, tn.A2AClient(url) as client:
        assert client.binding == "HTTP+JSON"
        task = await client.send("hello js rest", blocking=True)
        assert task.state is TaskState.COMPLETED and task.reply == "echo: hello js rest"
        streamed = [t async for t in client.stream("chunked reply please")]
        assert streamed[-1].reply == "echo: chunked reply please"
        question = await client.send("a question", blocking=True)
        answered = await client.send("blue", task_id=question.id, context_id=question.context_id)
        assert answered.state is TaskState.COMPLETED and answered.reply == "answered: blue"
        with pytest.raises(TaskNotFoundError):
            await client.get("no-such-task")
        config = await client.set_push(task.id, "http://127.0.0.1:9/hook", token="tok-2")
        assert [c.id for c in await client.list_push(task.id)] == [config.id]
        await client.delete_push(task.id, config.id)


async def test_forcing_a_binding():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(name="both"), record_wire=True
    ) as handle:
        for binding, path in (("http+json", "/message:send"), ("jsonrpc", "/")):
            async with tn.A2AClient(handle.url, binding=binding) as client:
                assert (await client.send("hi", blocking=True)).state is TaskState.COMPLETED
                assert client.traffic.events[-1].url == handle.url + path
    with pytest.raises(ValueError, match="1.0 and 0.3 only"):
        tn.A2AClient("http://127.0.0.1:1", binding="http+json", dialect="legacy")
    with pytest.raises(ValueError, match="1.0 and 0.3 only"):
        tn.A2AClient("http://127.0.0.1:1", binding="grpc", dialect="legacy")
    with pytest.raises(ValueError, match="binding must be"):
        tn.A2AClient("http://127.0.0.1:1", binding="grpc-web")
    # a JSON-RPC-only peer forced to REST: its 404 reads as a clear error, not a crash
    async with sdk_server() as url, tn.A2AClient(url, binding="http+json") as client:
        with pytest.raises(tn.PeerError, match="HTTP 404 .it serves no HTTP.JSON binding there"):
            await client.send("hi")


@pytest.mark.parametrize(
    "transport, version", [("JSONRPC", ""), ("HTTP+JSON", ""), ("HTTP+JSON", "0.3")]
)
async def test_the_js_sdk_client_on_both_bindings_and_what_the_wire_shows(transport, version):
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(name="js-target"), record_wire=True
    ) as handle:
        seen = await js_client(handle.url, transport, version)
        await asyncio.sleep(0.1)  # the recorder publishes every 20 ms
        inbound = [
            e
            for e in handle.events.history()
            if isinstance(e, tn.TrafficEvent) and e.direction == "in"
        ]
    assert seen["send"] == {
        "id": seen["send"]["id"],
        "state": "completed",
        "reply": "You said: hello from js",
    }
    assert seen["get"] == {"state": "completed", "history": 2}
    assert seen["stream"] == ["task", "status:working", "artifactUpdate", "status:completed"]
    assert seen["cancel"] == {"state": "canceled"}
    assert "not found" in seen["unknown"]["error"].lower()
    rpc = [e for e in inbound if e.rpc_method]
    paths = {e.url.removeprefix(handle.url) for e in rpc}
    assert seen["protocolVersion"] == (version or "1.0")
    if transport == "HTTP+JSON":
        prefix = "/v1" if version else ""
        assert {
            f"{prefix}/message:send",
            f"{prefix}/message:stream",
            f"{prefix}/tasks/{seen['send']['id']}",
        } <= paths
    else:
        assert paths == {"/"}
    # REST or not, the wire names each exchange's method and task
    assert {"SendMessage", "GetTask", "SendStreamingMessage", "CancelTask"} <= {
        e.rpc_method for e in rpc
    }
    assert [e.task_id for e in rpc if e.rpc_method == "GetTask"] == [
        seen["send"]["id"],
        "no-such-task",
    ]
    assert all(
        e.task_id
        for e in rpc
        if e.rpc_method in ("SendMessage", "SendStreamingMessage", "CancelTask")
    )


async def test_the_0_3_routes_under_v1_speak_0_3_proto_json():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="v03-desk")) as handle,
        httpx.AsyncClient(
            base_url=handle.url + "/v1", headers={"A2A-Version": "0.3"}, timeout=30
        ) as http,
    ):
        card = (await http.get(handle.url + "/.well-known/agent-card.json")).json()
        assert {"url": handle.url + "/", "transport": "HTTP+JSON"} in card["additionalInterfaces"]
        # proto field names, as the 1.x SDK's compat client writes them, and a blocking send
        sent = await http.post(
            "/message:send",
            json={
                "request": {
                    "message_id": "m-1",
                    "role": "ROLE_USER",
                    "content": [{"text": "hello 0.3"}],
                },
                "configuration": {"blocking": True},
            },
        )
        task = sent.json()["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert (
            task["history"][0]["content"] == [{"text": "hello 0.3"}]
            and "parts" not in task["history"][0]
        )
        assert task["artifacts"][0]["parts"] == [{"text": "You said: hello 0.3"}]
        # proto3: blocking absent is false, the task comes back at once
        slow = (
            await http.post(
                "/message:send",
                json={
                    "message": {
                        "messageId": "m-2",
                        "role": "ROLE_USER",
                        "content": [{"text": "slow 20"}],
                    }
                },
            )
        ).json()["task"]
        assert slow["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
        canceled = (await http.post(f"/tasks/{slow['id']}:cancel")).json()
        assert canceled["status"]["state"] == "TASK_STATE_CANCELLED"  # 0.3's spelling
        # a stream: 0.3 status updates carry final
        async with http.stream(
            "POST",
            "/message:stream",
            json={
                "message": {
                    "messageId": "m-3",
                    "role": "ROLE_USER",
                    "content": [{"text": "stream 0.3"}],
                }
            },
        ) as stream:
            frames = [
                json.loads(line[5:])
                async for line in stream.aiter_lines()
                if line.startswith("data:")
            ]
        assert (
            frames[-1]["statusUpdate"]["final"] is True
            and frames[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        )
        # push configs in 0.3's shape: a name, the config inside
        made = (
            await http.post(
                f"/tasks/{task['id']}/pushNotificationConfigs",
                json={
                    "name": "",
                    "pushNotificationConfig": {
                        "url": "http://127.0.0.1:9/hook",
                        "token": "t-9",
                        "authentication": {"schemes": ["Bearer"], "credentials": "c"},
                    },
                },
            )
        ).json()
        inner = made["pushNotificationConfig"]
        assert made["name"] == f"tasks/{task['id']}/pushNotificationConfigs/{inner['id']}"
        assert (
            inner["authentication"] == {"schemes": ["Bearer"], "credentials": "c"}
            and inner["token"] == "t-9"
        )
        listed = (await http.get(f"/tasks/{task['id']}/pushNotificationConfigs")).json()
        assert [c["name"] for c in listed["configs"]] == [made["name"]]
        # errors: the Status and the 0.3-era type the compat clients read
        missing = await http.get("/tasks/no-such-task")
        assert missing.status_code == 404 and missing.json()["type"] == "TaskNotFoundError"
        assert missing.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
        wrong = await http.post(
            "/message:send", json={"message": {"content": "x"}}, headers={"A2A-Version": "1.0"}
        )
        assert wrong.status_code == 400 and wrong.json()["type"] == "VersionNotSupportedError"
        assert (await http.get("/tasks")).status_code == 404  # ListTasks is not a 0.3 route


@pytest.mark.parametrize("peer", ["python-sdk", "js-sdk", "toolnexus"])
async def test_our_client_on_0_3_rest_routes(peer):
    """0.3 over HTTP+JSON, asked for: each peer's /v1/ routes, in its own 0.3 proto-JSON."""
    tk = await tn.create_toolkit(builtins=False)
    async with contextlib.AsyncExitStack() as stack:
        if peer == "python-sdk":
            url = await stack.enter_async_context(
                sdk_server(binding="HTTP+JSON", compat=True, push=True)
            )
            question, answer, done = "a question", "blue", "answered: blue"
        elif peer == "js-sdk":
            url = await stack.enter_async_context(js_server(rest=True, compat=True))
            question, answer, done = "a question", "blue", "answered: blue"
        else:
            url = (
                await stack.enter_async_context(
                    tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig())
                )
            ).url
            question, answer, done = "please confirm the order", "yes", "Request approved (yes)"
        client = await stack.enter_async_context(
            tn.A2AClient(url, dialect="0.3", binding="http+json")
        )
        task = await client.send("hello 0.3 rest", blocking=True)
        assert (client.binding, client.dialect.value) == ("HTTP+JSON", "0.3")
        assert task.state is TaskState.COMPLETED and "hello 0.3 rest" in task.reply
        assert all(
            "/v1/" in e.url for e in client.traffic.events if e.method != "GET" or "/tasks" in e.url
        )
        assert (await client.get(task.id)).state is TaskState.COMPLETED
        streamed = [t async for t in client.stream("chunked reply please")]
        assert (
            streamed[-1].state is TaskState.COMPLETED
            and "chunked reply please" in streamed[-1].reply
        )
        asked = await client.send(question, blocking=True)
        assert asked.state is TaskState.INPUT_REQUIRED
        answered = await client.send(
            answer, task_id=asked.id, context_id=asked.context_id, blocking=True
        )
        assert answered.state is TaskState.COMPLETED and answered.reply.startswith(done)
        with pytest.raises(
            TaskNotFoundError
        ):  # each peer's own error form, read back as the A2A error
            await client.get("no-such-task")
        with pytest.raises(TaskNotCancelableError):
            await client.cancel(task.id)
        config = await client.set_push(task.id, "http://127.0.0.1:9/hook", token="tok-03")
        assert [c.url for c in await client.list_push(task.id)] == ["http://127.0.0.1:9/hook"]
        assert (await client.get_push(task.id, config.id)).url == "http://127.0.0.1:9/hook"
        with pytest.raises(
            tn.RPCError, match="0.3's HTTP\\+JSON binding has no DeleteTaskPushNotificationConfig"
        ):
            await client.delete_push(task.id, config.id)
        with pytest.raises(tn.RPCError, match="no ListTasks|has no list"):
            await client.list_tasks()


def test_one_route_table_names_every_route_the_server_serves():
    from toolnexus.protocol import rest

    # a path with a :verb is never taken for /tasks/{id}, on the wire log as in the server
    assert rest.match("GET", "/tasks/abc:subscribe") == ("resubscribe", {"id": "abc"})
    assert rest.match("GET", "/v1/tasks/abc:subscribe") == ("resubscribe", {"id": "abc"})
    assert rest.match("GET", "/tasks/abc") == ("get", {"id": "abc"})
    assert rest.match("GET", "/tasks/a%2Fb") == ("get", {"id": "a/b"})
    assert rest.match("DELETE", "/v1/tasks/t/pushNotificationConfigs/c") is None  # not a 0.3 route
    assert rest.match("GET", "/.well-known/agent-card.json") is None
