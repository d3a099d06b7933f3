"""``MCPSession``, the session the inspectors keep open, against real MCP servers: servers written
for the tests on the official Python SDK (both eras) and TypeScript SDK (the handshake era), over
stdio and streamable HTTP, and our own: what was negotiated, the lists, a blob read with its MIME
type, a prompt filled in, a tool's structured result, a tool error as a result and a protocol
error as an error, progress and logs, the server's elicitation answered from a form, its sampling
answered by the demo model once approved (and refused), the user's roots, a subscription and its
update, OAuth against the authorization server written for the tests, every exchange on the bus
with the token masked."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import toolnexus as tn
from toolnexus.errors import PeerError
from toolnexus.events import EventBus, TrafficEvent
from toolnexus.mcp import Elicitation, MCPSession, Reply, Sampling, TaskState, form_values
from toolnexus.mcp import session as session_module

from .helpers import eventually
from .peers import mcp_peers

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def py_http() -> Iterator[str]:
    with mcp_peers.http_server("py") as said:
        yield said["MCP"]


@pytest.fixture(scope="module")
def ts_http() -> Iterator[str]:
    with mcp_peers.http_server("ts") as said:
        yield said["MCP"]


class User:
    """The person at the front end: answers forms, approves (or not) each sampling request."""

    def __init__(self, approve: bool = True, reply: Reply | None = None) -> None:
        self.forms: list[Elicitation] = []
        self.samplings: list[Sampling] = []
        self.approving = approve
        self.reply = reply

    async def elicit(self, request: Elicitation) -> Reply:
        self.forms.append(request)
        if self.reply is not None:
            return self.reply
        texts = {"name": "Ada", "age": "36"}
        return Reply(
            "accept",
            form_values(request.fields, [texts.get(f.name, f.default) for f in request.fields]),
        )

    async def approve(self, request: Sampling) -> bool:
        self.samplings.append(request)
        return self.approving


def session(
    target: str | list[str], user: User, bus: EventBus | None = None, **options: Any
) -> MCPSession:
    return MCPSession(
        target,
        env=mcp_peers.ENV if isinstance(target, list) else None,
        bus=bus,
        elicit=user.elicit,
        model=tn.demo_client(),
        approve=user.approve,
        roots=["/tmp/project"],
        **options,
    )


@pytest.mark.parametrize(
    "server, mode",
    [
        ("py-stdio", "auto"),
        ("py-stdio", "legacy"),
        ("py-http", "auto"),
        ("py-http", "legacy"),
        ("ts-stdio", "auto"),
        ("ts-http", "auto"),
    ],
)
async def test_everything_an_inspector_does_with_an_sdk_server(server, mode, request):
    sdk, carrier = server.split("-")
    target = mcp_peers.stdio(sdk) if carrier == "stdio" else request.getfixturevalue(f"{sdk}_http")
    user, bus = User(), EventBus()
    async with session(target, user, bus, mode=mode) as s:
        modern = sdk == "py" and mode == "auto"
        assert s.protocol_version == ("2026-07-28" if modern else "2025-11-25")
        assert s.server_name == f"everything-{sdk}" and s.server_version == "1.0.0"
        assert "every MCP feature" in s.instructions
        assert {"tools", "resources", "prompts"} <= set(s.capabilities)
        assert s.offered == ["roots", "elicitation", "sampling"]

        tools = {t["name"]: t for t in await s.tools()}
        assert set(tools) == {"add", "fail", "slow", "greet", "haiku", "where", "touch"}
        assert tools["add"]["input_schema"]["properties"]["a"]["default"] == 2
        assert tools["add"]["annotations"]["readOnlyHint"] is True
        assert tools["add"]["output_schema"]["properties"]["total"]["type"] == "integer"
        resources = {r["uri"]: r for r in await s.resources()}
        assert resources["note://logo"]["mime_type"] == "image/png"
        [template] = await s.templates()
        assert template["uri_template"] == "note://items/{item}"
        [prompt] = await s.prompts()
        assert [(a["name"], a.get("required", False)) for a in prompt["arguments"]] == [
            ("code", True),
            ("language", False),
        ]

        [logo] = await s.read("note://logo")
        assert logo.mime == "image/png" and logo.data is not None and logo.data[:4] == b"\x89PNG"
        [item] = await s.read("note://items/bolt")
        assert (item.mime, item.text) == ("text/plain", "item bolt")
        _, messages = await s.prompt("review", {"code": "x = 1", "language": "go"})
        assert messages == [
            ("user", "Please review this go code:\nx = 1"),
            ("assistant", "I will look at it."),
        ]

        added = await s.call("add", {"a": 2, "b": 3})
        assert not added.is_error and added.metadata["structured"] == {"total": 5, "terms": [2, 3]}
        failed = await s.call("fail", {"reason": "boom"})
        assert failed.is_error  # a tool's error is a result
        unknown = await s.call("nope", {})  # both SDKs answer a tool error (ours: -32602)
        assert unknown.is_error and "nope" in unknown.output
        progress: list[tn.Progress] = []

        async def heard_progress(p: tn.Progress) -> None:
            progress.append(p)

        slow = await s.call("slow", {"steps": 3}, progress=heard_progress)
        assert "done in 3 steps" in slow.output
        assert [(p.done, p.total, p.message) for p in progress] == [
            (1, 3, "step 1"),
            (2, 3, "step 2"),
            (3, 3, "step 3"),
        ]
        kinds = [n.kind for n in s.notices]
        assert kinds.count("progress") == 3
        if not modern:  # logging is deprecated on 2026-07-28: only asked-for levels come
            assert any(n.summary == "info: slow starts: 3 steps" for n in s.notices)

        greeted = await s.call("greet", {})
        assert "Hello Ada, 36, who likes blue!" in greeted.output, greeted.output
        [form] = user.forms
        assert form.message == "Who are you?"
        assert [(f.name, f.kind, f.required) for f in form.fields] == [
            ("name", "string", True),
            ("age", "integer", False),
            ("colour", 'one of "red", "green", "blue"', False),
        ]
        sung = await s.call("haiku", {"topic": "the sea"})
        assert "the model toolnexus-demo said: You said: A haiku about the sea" in sung.output
        [asked] = user.samplings
        assert asked.system == "You are a poet." and asked.max_tokens == 100
        assert asked.messages == [("user", "A haiku about the sea")]
        rooted = await s.call("where", {})
        assert "file:///tmp/project" in rooted.output

        if s.capabilities["resources"].get("subscribe"):
            await s.subscribe("note://counter")
            assert "counter is 1" in (await s.call("touch", {})).output
            await eventually(lambda: any(n.summary == "updated: note://counter" for n in s.notices))
            [counter] = await s.read("note://counter")
            assert counter.text is not None and '"counter": 1' in counter.text.replace(":1", ": 1")
        else:
            with pytest.raises(PeerError, match="offers no resource subscriptions"):
                await s.subscribe("note://counter")

        user.approving = False  # refused: the server is told, and its tool fails
        if sdk == "py":  # the Python SDK answers the call with the refusal (2026-07-28: the
            # client's own driver ends the call on the refusal)
            with pytest.raises(PeerError, match="the user refused the sampling request"):
                await s.call("haiku", {"topic": "rain"})
        else:
            refused = await s.call("haiku", {"topic": "rain"})
            assert refused.is_error
        assert any(n.summary == "refused by the user" for n in s.notices)

    seen = [e for e in bus.history() if isinstance(e, TrafficEvent)]
    methods = {e.rpc_method for e in seen}
    assert {"tools/list", "tools/call", "resources/read", "prompts/get"} <= methods


async def test_our_own_server_a_changing_toolkit_over_stdio_in_both_eras(tmp_path):
    """tests/peers/mcp_changing.py: the lists told as changed, an edited skill file told as updated
    to its subscriber (a listen stream on 2026-07-28, resources/subscribe before)."""
    import shutil

    from .conftest import EXAMPLE_SKILLS

    skills = tmp_path / "skills"
    shutil.copytree(EXAMPLE_SKILLS, skills)
    argv = [sys.executable, "-m", "tests.peers.mcp_changing", str(skills)]
    for mode in ("auto", "legacy"):
        async with MCPSession(argv, env=mcp_peers.ENV, mode=mode) as s:
            await s.subscribe("skill://weather/reference/units.md")
            await s.call("grow", {})
            await s.call("reload", {"touch": "weather/reference/units.md"})
            told = lambda: {n.method for n in s.notices}  # noqa: E731
            await eventually(
                lambda: (
                    {
                        "notifications/tools/list_changed",
                        "notifications/resources/updated",
                    }
                    <= told()  # noqa: B023  # awaited in this iteration
                )
            )
            assert "grown" in [t["name"] for t in await s.tools()]


async def test_a_stdio_server_gets_the_environment_it_is_given_and_its_stderr_explains_a_failure():
    argv = [
        sys.executable,
        "-c",
        "import os, sys; print('no', os.environ.get('TN_MARK'), file=sys.stderr); sys.exit(3)",
    ]
    with pytest.raises(PeerError, match="its stderr ends: no marked"):
        async with MCPSession(argv, env={"TN_MARK": "marked"}):
            pass


async def test_a_stdio_server_is_given_time_to_start_beyond_the_per_request_timeout(monkeypatch):
    """A stdio server's process starts and imports before it can answer: a session whose
    per-request timeout is shorter than that start still connects (the doctor's --timeout called
    a working Python server broken on a loaded machine), and one that never answers says so in
    words (it said ``TimeoutError``)."""
    slow = [
        sys.executable,
        "-c",
        "import runpy, time; time.sleep(1.5); runpy.run_module("
        "'tests.peers.mcp_everything', run_name='__main__', alter_sys=True)",
        "stdio",
    ]
    async with MCPSession(slow, timeout=1.0) as s:
        assert "add" in [t["name"] for t in await s.tools()]
    monkeypatch.setattr(session_module, "STDIO_START", 0.5)
    mute = [
        sys.executable,
        "-c",
        "import sys, time; print('booting', file=sys.stderr); sys.stderr.flush(); time.sleep(60)",
    ]
    with pytest.raises(PeerError, match=r": no answer within 1\.5 s$"):
        async with MCPSession(mute, timeout=1.0):
            pass


async def test_oauth_sign_in_against_the_test_authorization_server():
    """The server answers 401 naming its resource metadata; the session discovers the
    authorization server, registers, shows the sign-in address (the "user" follows it: the test
    authorization server signs in at once and redirects to the session's loopback callback), trades
    the code (PKCE) for a token, and every later request carries it; no token, code or verifier is
    readable in the wire log."""
    with mcp_peers.http_server("py", oauth=True) as said:
        shown: list[str] = []
        followed: list[asyncio.Task[Any]] = []

        async def authorize(address: str) -> None:
            shown.append(address)

            async def follow() -> int:
                async with httpx.AsyncClient(follow_redirects=True) as browser:
                    return (await browser.get(address)).status_code

            followed.append(asyncio.ensure_future(follow()))

        bus = EventBus()
        async with MCPSession(said["MCP"], bus=bus, authorize=authorize) as s:
            assert s.oauth is not None and s.oauth.state == "signed in"
            assert "add" in [t["name"] for t in await s.tools()]
        assert await followed[0] == 200
        [address] = shown
        assert (
            address.startswith(said["AS"] + "/authorize?")
            and "code_challenge_method=S256" in address
        )
        events = s.recorder.events
        steps = [
            (e.method, e.url.removeprefix(said["AS"]).removeprefix(said["MCP"]), e.status)
            for e in events
        ]
        assert steps[0][2] == 401
        assert ("POST", "/register", 201) in steps and ("POST", "/token", 200) in steps
        later = [e for e in events if e.url == said["MCP"] and e.status == 200]
        assert later and all(e.request_headers["authorization"] == "Bearer ***" for e in later)
        wire = repr(events)
        assert "tok-" not in wire and "code_verifier=***" in wire and '"access_token":"***"' in wire


async def test_oauth_nobody_signs_in_is_a_clear_failure():
    with mcp_peers.http_server("py", oauth=True) as said:

        async def authorize(address: str) -> None:
            pass  # the user never comes back

        s = MCPSession(said["MCP"], authorize=authorize, timeout=5)
        assert s.oauth is not None
        s.oauth.timeout = 1
        with pytest.raises(
            PeerError, match="the OAuth sign-in failed: nobody signed in within 1 s"
        ):
            await s.start()
        assert s.status == "failed"


async def test_a_server_without_oauth_support_keeps_its_http_status(tmp_path):
    tk = await tn.create_toolkit(builtins=False)
    async with await tk.serve(mcp=tn.MCPServeConfig(auth=tn.Auth.bearer("s3cret-token-1"))) as h:
        with pytest.raises(PeerError, match="HTTP 401: authentication required"):
            await MCPSession(h.mcp_url).start()
        async with MCPSession(h.mcp_url, headers={"Authorization": "Bearer s3cret-token-1"}) as s:
            assert s.server_name == "toolnexus"
            with pytest.raises(PeerError, match="MCP error -32602: Unknown prompt: nope"):
                await s.prompt("nope", {})
    assert os.environ.get("TN_MARK") is None


@pytest.mark.parametrize("sdk", ["py", "ts"])
async def test_a_sampling_reply_the_user_wrote_is_sent_as_written_with_no_model(sdk: str):
    """Issue 60 item 2: the user answers a sampling request with a reply of their own (as the
    official Inspector lets them), and with no model at all the session still offers sampling."""
    written = "Old pond,\na frog jumps in:\nthe sound of water."
    asked: list[Sampling] = []

    async def approve(request: Sampling) -> bool | str:
        asked.append(request)
        return written

    async with MCPSession(mcp_peers.stdio(sdk), env=mcp_peers.ENV, approve=approve) as s:
        assert "sampling" in s.offered
        sung = await s.call("haiku", {"topic": "a frog"})
        assert asked[0].messages == [("user", "A haiku about a frog")]
        [said] = [b["text"] for b in sung.metadata["content"]]
        assert said == f"the model {session_module.WRITTEN_BY} said: {written}", said
        assert any(n.summary.startswith("answered by the user: Old pond") for n in s.notices)


async def test_a_static_oauth_client_id_signs_in_where_the_server_registers_no_client():
    """Issue 60 item 2: an authorization server without dynamic registration (the test's, which
    knows only a client id it gave out beforehand) is signed in to with that client id; without
    one the session says it needs one."""
    from .peers.mcp_everything import STATIC_CLIENT

    with mcp_peers.http_server("py", oauth=True, static=True) as said:
        followed: list[asyncio.Task[Any]] = []

        async def authorize(address: str) -> None:
            async def follow() -> int:
                async with httpx.AsyncClient(follow_redirects=True) as browser:
                    return (await browser.get(address)).status_code

            followed.append(asyncio.ensure_future(follow()))

        with pytest.raises(PeerError, match="registers no client: give its client id"):
            await MCPSession(said["MCP"], authorize=authorize, timeout=10).start()
        assert not followed
        async with MCPSession(said["MCP"], authorize=authorize, client_id=STATIC_CLIENT) as s:
            assert s.oauth is not None and s.oauth.state == "signed in"
            assert "add" in [t["name"] for t in await s.tools()]
        assert await followed[0] == 200
        assert not any(e.url.endswith("/register") for e in s.recorder.events)


async def test_a_stdio_servers_stderr_is_heard_as_it_comes_and_kept_bounded():
    """Issue 60 item 2: a stdio server's stderr was read only when the server ended; each line is
    now heard while the session lives, the last MAX_STDERR_LINES kept, a long line in pieces."""
    from toolnexus.mcp.transport import MAX_STDERR_LINE, MAX_STDERR_LINES

    noisy = [
        sys.executable,
        "-c",
        "import runpy, sys\n"
        "for i in range(1500): print(f'line {i}', file=sys.stderr)\n"
        "print('x' * 10000, file=sys.stderr, flush=True)\n"
        "runpy.run_module('tests.peers.mcp_everything', run_name='__main__', alter_sys=True)",
        "stdio",
    ]
    heard: list[str] = []
    async with MCPSession(noisy, env=mcp_peers.ENV, on_stderr=heard.append) as s:
        await eventually(lambda: len(heard) >= 1503)
        assert heard[:2] == ["line 0", "line 1"] and s.status == "connected"
        assert len(s.console) == MAX_STDERR_LINES and s.console[-1] == heard[-1]
        assert max(len(line) for line in heard) == MAX_STDERR_LINE


async def test_a_tool_run_as_an_mcp_task_is_polled_its_result_fetched_and_cancel_reaches_it():
    """The TypeScript SDK's server whose tools run as MCP tasks (2025-11-25): a tool that requires
    a task is called as one and polled through its states to its result; one that fails ends
    failed with its error as a result; cancelling a call cancels its task on the server
    (tasks/cancel); tasks/get and tasks/list say the same."""
    async with MCPSession(mcp_peers.stdio("ts-tasks")) as s:
        assert s.offers_tasks
        await s.tools()
        assert s.task_support == {
            "brew": "required",
            "stall": "optional",
            "doomed": "required",
            "confirm_delete": "required",
            "write_haiku": "required",
        }
        seen: list[TaskState] = []
        brewed = await s.call("brew", {"steps": 2}, on_task=seen.append)
        assert brewed.output == "brewed in 2 steps" and not brewed.is_error
        assert [t.status for t in seen][0] == "working" and seen[-1].status == "completed"
        assert "step 1 of [b]2[/b]" in [t.message for t in seen]  # every state heard, as sent
        assert seen[0].poll_interval == 0.05 and {t.tool for t in seen} == {"brew"}
        assert (await s.task(seen[0].task_id)).status == "completed"

        failed = await s.call("doomed", {})
        assert failed.is_error and failed.output == "the pot [cracked]"

        stalled: list[TaskState] = []
        job = asyncio.ensure_future(s.call("stall", {}, on_task=stalled.append))
        await eventually(lambda: bool(stalled))
        assert s.cancel() == ["call stall (a task)"]
        with pytest.raises(PeerError, match="cancelled, the server was told \\(tasks/cancel\\)"):
            await job
        assert s.tasks[stalled[0].task_id].status == "cancelled"
        assert (await s.task(stalled[0].task_id)).status == "cancelled"

        listed, more = await s.list_tasks()
        assert more is None
        assert [(t.tool, t.status) for t in listed] == [
            ("brew", "completed"),
            ("doomed", "failed"),
            ("stall", "cancelled"),
        ]
        methods = [n.method for n in s.notices if n.kind == "task"]
        assert "tasks/get" in methods and "tasks/cancel" in methods


@pytest.mark.parametrize("carrier", ["stdio", "http"])
async def test_a_task_that_needs_input_asks_the_user_and_ends_as_the_server_says(carrier: str):
    """The TypeScript SDK's interactive task example's tools (simpleTaskInteractive, on the SDK's
    own task message queue): while the task runs it asks (elicitation, sampling), so it goes
    input_required and the question waits on the server until the client asks for the result
    (tasks/result: over HTTP the question comes on that request's stream); the question reaches
    the user naming its task, the answer goes back, the task works on and ends. Its final state
    is the server's (tasks/get after the result): a sampling refused fails the task, and the
    state says failed, not completed."""
    asked: list[Elicitation | Sampling] = []
    sampled: list[bool | str] = ["an old pond / a frog jumps in / splash", False]

    async def elicit(request: Elicitation) -> Reply:
        asked.append(request)
        return Reply("accept", {"confirm": True})

    async def approve(request: Sampling) -> bool | str:
        asked.append(request)
        return sampled.pop(0)

    async with contextlib.AsyncExitStack() as stack:
        if carrier == "http":
            target: str | list[str] = stack.enter_context(mcp_peers.http_server("ts-tasks"))["MCP"]
        else:
            target = mcp_peers.stdio("ts-tasks")
        s = await stack.enter_async_context(
            MCPSession(target, elicit=elicit, approve=approve, call_timeout=30)
        )
        assert s.transport == carrier
        await s.tools()
        seen: list[TaskState] = []
        deleted = await s.call("confirm_delete", {"filename": "a [b].txt"}, on_task=seen.append)
        assert deleted.output == "Deleted 'a [b].txt'" and not deleted.is_error
        [question] = asked
        assert isinstance(question, Elicitation)
        assert question.message == "Are you sure you want to delete 'a [b].txt'?"
        assert [f.name for f in question.fields] == ["confirm"]
        assert question.task == seen[0].task_id  # the task that asks
        assert [t.status for t in seen] == ["input_required", "completed"]
        assert seen[-1].message == "answered [ok]"  # as the server last said it
        assert seen[0].created and seen[-1].updated >= seen[0].created

        seen.clear()
        haiku = await s.call("write_haiku", {"topic": "frogs"}, on_task=seen.append)
        assert haiku.output == "Haiku:\nan old pond / a frog jumps in / splash"
        assert isinstance(asked[1], Sampling) and asked[1].prompt == "Write a haiku about frogs"
        assert asked[1].task == seen[0].task_id and seen[-1].status == "completed"

        seen.clear()
        refused = await s.call("write_haiku", {"topic": "toads"}, on_task=seen.append)
        assert refused.is_error and "refused" in refused.output
        assert [t.status for t in seen] == ["input_required", "failed"]
        assert s.tasks[seen[0].task_id].status == "failed"
        again = await s.task_result(seen[0].task_id)  # tasks/result of an ended task
        assert again.output == refused.output and again.is_error


async def test_a_server_without_tasks_is_not_asked_for_them():
    async with MCPSession(mcp_peers.stdio("ts")) as s:
        assert not s.offers_tasks
        with pytest.raises(PeerError, match="offers no task list"):
            await s.list_tasks()


async def test_a_tasks_poll_interval_out_of_reason_is_none():
    """A server's pollInterval is its own: a huge integer overflowed a float where the state was
    read, a negative one is no interval."""
    types = session_module.sdk().types
    for poll, seconds in ((10**400, None), (-5, None), (250, 0.25)):
        task = types.Task(
            task_id="t",
            status="working",
            created_at="2026-12-06T09:32:08Z",
            last_updated_at="2026-12-06T09:32:08Z",
            ttl=None,
            poll_interval=poll,
        )
        assert session_module._task_state(task).poll_interval == seconds
