"""A workspace with fixed servers, tasks, ids and times, for deterministic screens."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace

from toolnexus.events import TaskEvent, ToolCallEvent
from toolnexus.hosting import HostedServer, ServerSpec, Workspace
from toolnexus.llm import RunResult, Usage
from toolnexus.protocol.model import Artifact, Message, Part, Task, TaskState, TaskStatus
from toolnexus.skills import SkillDef

NOW = datetime(2026, 11, 30, 10, 0, 30, tzinfo=UTC)


async def _nothing() -> None:
    return None


def fixed_workspace() -> Workspace:
    ws = Workspace()
    demo = HostedServer(ServerSpec(name="demo-desk", mcp=True, description="demo"))
    demo.state = "running"
    demo.handle = SimpleNamespace(
        url="http://127.0.0.1:43211",
        mcp=SimpleNamespace(tools=[SimpleNamespace(name=n, source="skill") for n in ("skill",)]),
        a2a=SimpleNamespace(skills=[SkillDef("greet"), SkillDef("report"), SkillDef("weather")]),
        runner=None,
        stop=_nothing,
    )
    demo.toolkit = SimpleNamespace(close=_nothing)
    billing = HostedServer(ServerSpec(name="billing", store="file:./tasks"))
    billing.state = "stopped"
    ws.servers = {"demo-desk": demo, "billing": billing}
    stamps = iter(
        f"2026-11-30T10:00:{s:02d}.{ms:06d}Z"
        for s, ms in [
            (1, 0),
            (1, 2000),
            (2, 250000),
            (10, 0),
            (10, 3000),
            (11, 0),
            (11, 400000),
            (20, 0),
            (20, 1000),
            (20, 2000),
        ]
    )
    for task_id, ctx, text, skill, states, reply in [
        (
            "3f2a0000-0000-4000-8000-000000000001",
            "81c00000-0000-4000-8000-000000000001",
            "weather in Oslo",
            "weather",
            [TaskState.SUBMITTED, TaskState.WORKING, TaskState.COMPLETED],
            "Oslo: light snow, -3°C",
        ),
        (
            "9d110000-0000-4000-8000-000000000002",
            "81c00000-0000-4000-8000-000000000001",
            "greet Ada",
            "greet",
            [TaskState.SUBMITTED, TaskState.WORKING],
            None,
        ),
        (
            "77b00000-0000-4000-8000-000000000003",
            "c0ff0000-0000-4000-8000-000000000003",
            "approve the report",
            "report",
            [TaskState.SUBMITTED, TaskState.WORKING, TaskState.INPUT_REQUIRED],
            None,
        ),
        (
            "dead0000-0000-4000-8000-000000000004",
            "c0ff0000-0000-4000-8000-000000000003",
            "please fail",
            None,
            [TaskState.SUBMITTED],
            None,
        ),
    ]:
        user = Message("user", [Part.of_text(text)], f"m-{task_id[:4]}", ctx, task_id)
        task = Task(
            task_id, ctx, TaskStatus(TaskState.SUBMITTED), [user], skill=skill, request=text
        )
        prev = None
        for state in states:
            stamp = next(stamps)
            task.status = TaskStatus(state, None, stamp)
            result = None
            if state is TaskState.COMPLETED:
                task.artifacts = [Artifact([Part.of_text(reply or "")], "art-1", "reply")]
                task.history.append(Message.agent(reply or "", ctx, task_id))
                result = RunResult(
                    text=reply or "",
                    turns=2,
                    usage=Usage(380, 32, 412),
                    model="toolnexus-demo",
                    tool_calls=[
                        {
                            "name": "skill",
                            "args": {"name": "weather"},
                            "output": "<skill…>",
                            "is_error": False,
                            "metadata": {},
                        }
                    ],
                )
            if state is TaskState.INPUT_REQUIRED:
                task.status.message = Message.agent(
                    "Do you approve: approve the report?", ctx, task_id
                )
            ws.events.publish(
                TaskEvent(
                    task_id, ctx, skill, prev, state, task.snapshot(), "demo-desk", result, stamp
                )
            )
            prev = state
    ws.events.publish(
        ToolCallEvent(
            "demo-desk",
            "skill",
            "skill",
            {"name": "greet"},
            "<skill_content…>",
            False,
            1.5,
            time="2026-11-30T10:00:21.000000Z",
        )
    )
    return ws


def fixed_peers(folder):  # -> tui.peers.PeerBook
    """Two peers with fixed cards (nothing is fetched)."""
    import json as _json
    from pathlib import Path

    from toolnexus import A2AClient
    from toolnexus.protocol.dialects import Dialect
    from tui.peers import Peer, PeerBook

    cards = Path(__file__).resolve().parent.parent / "fixtures" / "cards"
    book = PeerBook(folder)
    for url, name in (
        ("http://127.0.0.1:9405", "sdk-1x-compat.json"),
        ("http://127.0.0.1:7000", "toolnexus-port.json"),
    ):
        peer = Peer(
            url, {"Authorization": "Bearer ${DESK_TOKEN}"} if name.startswith("sdk") else {}
        )
        peer.client = A2AClient(_json.loads((cards / name).read_text()))
        peer.client.dialect = Dialect.V10 if name.startswith("sdk") else Dialect.LEGACY
        peer.client.dialect_reason = "fixed for the picture"
        peer.state = "reachable"
        book.peers[url] = peer
    from toolnexus.serve.card import build_card
    from toolnexus.serve.config import A2AConfig
    from toolnexus.skills import SkillDef

    hosted = Peer("http://127.0.0.1:43211", hosted=True)  # the fixed workspace's demo-desk
    hosted.client = A2AClient(
        build_card(
            A2AConfig(name="demo-desk", description="demo", version="0.1.0", streaming=True),
            base_url=hosted.url,
            skills=[SkillDef("greet", "says hello")],
        )
    )
    hosted.client.dialect, hosted.client.dialect_reason = Dialect.V10, "fixed for the picture"
    hosted.state = "reachable"
    book.peers[hosted.url] = hosted
    return book


def fixed_traffic(app) -> None:
    from toolnexus.events import TrafficEvent

    body = {
        "jsonrpc": "2.0",
        "id": "1",
        "method": "SendMessage",
        "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
        },
    }
    reply = {
        "jsonrpc": "2.0",
        "id": "1",
        "result": {
            "task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}
        },
    }
    for i, (method, rpc, status) in enumerate(
        [
            ("GET", None, 200),
            ("POST", "SendMessage", 200),
            ("POST", "GetTask", 200),
            ("POST", "CancelTask", 200),
        ]
    ):
        app.book.traffic.append(
            TrafficEvent(
                "out",
                method,
                "http://127.0.0.1:9405/"
                + (".well-known/agent-card.json" if method == "GET" else ""),
                status,
                3.5 + i,
                {
                    "authorization": "Bearer ***",
                    "content-type": "application/json",
                    "a2a-version": "1.0",
                },
                "" if method == "GET" else json.dumps(body),
                {"content-type": "application/json"},
                json.dumps(reply),
                rpc,
                "sdk-echo",
                time=f"2026-11-30T10:00:0{i}.000000Z",
            )
        )
