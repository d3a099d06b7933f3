"""Follow a task across hops: three served agents, A calls B calls C (each through an A2A tool), on
real loopback ports. The trace they share, the tree the front ends show, a cancel at A reaching B
and C, and an input-required at C surfacing at A's caller with the answer flowing back down."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest

import toolnexus as tn
from toolnexus.events import RemoteCallEvent, TaskEvent
from toolnexus.monitor import TaskBook, trace_tree
from toolnexus.protocol.model import TaskState
from toolnexus.stores import TaskQuery

from ..helpers import eventually, write_skill

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def relay_model() -> tn.Client:
    """A model that hands every prompt to the one agent tool it has, and answers with its result."""

    def generate(request: dict) -> dict:
        messages = request["messages"]
        last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        results = [m["content"] for m in messages[last + 1 :] if m.get("role") == "tool"]
        if results:
            return {"content": f"relayed: {results[-1]}"}
        [agent] = [
            t["function"]["name"]
            for t in request["tools"]
            if t["function"]["name"].endswith("_relay")
        ]
        prompt = messages[last]["content"].split("\n\n")[
            -1
        ]  # without the "Use the relay skill." the server adds
        return {
            "tool_calls": [
                {"id": "call_" + uuid.uuid4().hex[:8], "name": agent, "arguments": {"task": prompt}}
            ]
        }

    return tn.create_in_process_client(generate)


@contextlib.asynccontextmanager
async def chain(tmp_path, events=None, **serve):
    """A -> B -> C; C is the demo model (``approve`` asks, ``slow N`` waits). Yields the handles and
    a TaskBook fed by all three servers' buses, as a front end hosting them would be (``events``:
    one bus for all three, a front end's; ``serve``: more of ``serve()``'s arguments)."""
    skills = tmp_path / "skills"
    write_skill(skills / "relay", "relay", description="Hands the request onward.")
    book = TaskBook()
    handles: list = []
    pumps: list[asyncio.Task] = []

    async def pump(bus) -> None:
        async for ev in bus.subscribe(replay=True):
            if isinstance(ev, TaskEvent):
                book.apply(ev)
            elif isinstance(ev, RemoteCallEvent):
                book.remote(ev)

    try:
        below = None
        for name in ("agent-c", "agent-b", "agent-a"):
            agents = [tn.Agent(card=below.url, poll_every=0.02, timeout=60)] if below else []
            tk = await tn.create_toolkit(skills, builtins=False, agents=agents)
            handle = await tk.serve(
                "127.0.0.1:0",
                client=relay_model() if below else tn.demo_client(),
                a2a=tn.A2AConfig(name=name),
                events=events,
                **serve,
            )
            handles.append(handle)
            if events is None or not pumps:
                pumps.append(asyncio.ensure_future(pump(handle.events)))
            below = handle
        c, b, a = handles
        yield a, b, c, book
    finally:
        for p in pumps:
            p.cancel()
        for handle in reversed(handles):
            await handle.stop()


async def only_task(handle) -> tn.Task:
    page = await handle.runner.store.list(TaskQuery(page_size=10))
    assert len(page.tasks) == 1, [t.id for t in page.tasks]
    return page.tasks[0]


async def settle(handle, *states: TaskState, timeout: float = 10.0) -> tn.Task:
    async with asyncio.timeout(timeout):
        while True:
            page = await handle.runner.store.list(TaskQuery(page_size=10))
            if page.tasks and page.tasks[0].state in states:
                return page.tasks[0]
            await asyncio.sleep(0.02)


async def test_input_required_at_c_surfaces_at_a_and_the_answer_flows_down(tmp_path):
    async with chain(tmp_path) as (a, b, c, book):
        headers = {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
        async with tn.A2AClient(a.url, headers=headers) as caller:
            asked = await caller.send("please approve the budget", blocking=True)
            assert asked.state is TaskState.INPUT_REQUIRED
            asking_b, asking_c = await only_task(b), await only_task(c)
            assert asking_b.state is asking_c.state is TaskState.INPUT_REQUIRED
            question = asking_c.status.message.text  # C's own question, asked of A's caller
            assert question.startswith("Do you approve:") and question.endswith(
                "please approve the budget?"
            )
            assert asked.status.message.text == asking_b.status.message.text == question
            done = await caller.send(
                "yes, go ahead", task_id=asked.id, context_id=asked.context_id, blocking=True
            )
        task_a, task_b, task_c = await only_task(a), await only_task(b), await only_task(c)
        assert done.state is TaskState.COMPLETED and done.id == asked.id
        assert (
            "Request approved (yes, go ahead)." in task_c.artifacts[0].text
        )  # the answer reached C
        assert done.reply == f"relayed: relayed: {task_c.artifacts[0].text}"
        assert task_b.state is task_c.state is TaskState.COMPLETED
        # one trace: the caller's; each task a child of the call that made it
        assert (
            task_a.trace.trace_id == task_b.trace.trace_id == task_c.trace.trace_id == CALLER_TRACE
        )
        assert task_a.trace.parent_id == CALLER_SPAN
        await eventually(  # the last bus events reach the book
            lambda: (
                sum(
                    e.done
                    for e in book.remote_calls.values()
                    if e.task_id in (task_a.id, task_b.id)
                )
                == 2
            )
        )
        [call_ab] = [e for e in book.remote_calls.values() if e.task_id == task_a.id]
        [call_bc] = [e for e in book.remote_calls.values() if e.task_id == task_b.id]
        assert (
            call_ab.parent_span_id == task_a.trace.span_id
            and task_b.trace.parent_id == call_ab.span_id
        )
        assert (
            call_bc.parent_span_id == task_b.trace.span_id
            and task_c.trace.parent_id == call_bc.span_id
        )
        assert (call_ab.peer, call_ab.remote_task_id, call_ab.state, call_ab.done) == (
            "agent-b",
            task_b.id,
            "completed",
            True,
        )
        # the tree a front end shows, from any task of the chain
        rows = [
            (depth, kind, item.id if kind == "task" else item.remote_task_id)
            for depth, kind, item in trace_tree(book, task_c.id)
        ]
        assert rows == [
            (0, "task", task_a.id),
            (1, "call", task_b.id),
            (2, "task", task_b.id),
            (3, "call", task_c.id),
            (4, "task", task_c.id),
        ]


async def test_a_cancel_at_a_cancels_b_and_c_while_they_work(tmp_path):
    async with chain(tmp_path) as (a, b, c, book):
        async with tn.A2AClient(a.url) as caller:
            task = await caller.send("slow 30 then report")
            await settle(c, TaskState.WORKING)
            canceled = await caller.cancel(task.id)
        assert canceled.state is TaskState.CANCELED
        assert (await settle(b, TaskState.CANCELED)).state is TaskState.CANCELED
        assert (await settle(c, TaskState.CANCELED)).state is TaskState.CANCELED
        # each caller says its call canceled once the cancel it sent is answered: after the
        # stores above show it, by a round trip (a fixed 0.1 s, not always enough under load)
        canceled = {(await only_task(a)).id: "canceled", (await only_task(b)).id: "canceled"}
        async with asyncio.timeout(10):
            while {e.task_id: e.state for e in book.remote_calls.values()} != canceled:
                await asyncio.sleep(0.02)
        # started by A: no caller trace, so A's task began one, and B and C joined it
        assert (await only_task(c)).trace.trace_id == (await only_task(a)).trace.trace_id


async def test_a_cancel_at_a_cancels_b_and_c_waiting_for_input(tmp_path):
    async with chain(tmp_path) as (a, b, c, _):
        async with tn.A2AClient(a.url) as caller:
            asked = await caller.send("please approve the trip", blocking=True)
            assert asked.state is TaskState.INPUT_REQUIRED
            canceled = await caller.cancel(asked.id)
        assert canceled.state is TaskState.CANCELED
        assert (await settle(b, TaskState.CANCELED)).state is TaskState.CANCELED
        assert (await settle(c, TaskState.CANCELED)).state is TaskState.CANCELED


@pytest.mark.parametrize(
    "header",
    [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # all-zero trace id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  # upper case
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  # version 00 with more
        "garbage",
        "00-" + "a" * 600,
    ],
)
async def test_a_bad_traceparent_is_ignored(header):
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="plain")
    ) as handle:
        async with tn.A2AClient(handle.url, headers={"traceparent": header}) as client:
            task = await client.send("hello", blocking=True)
        stored = await handle.runner.store.get(task.id)
    assert task.state is TaskState.COMPLETED
    assert stored.trace is None  # no trace joined, none started (it called no one)


async def test_the_trace_exports_as_opentelemetry_spans(tmp_path):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from toolnexus.events import EventBus
    from toolnexus.trace import export_spans

    bus, exporter = EventBus(), InMemorySpanExporter()
    exporting = export_spans(bus, exporter, service="chain")
    try:
        async with chain(tmp_path, events=bus) as (a, b, c, _):
            headers = {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
            async with tn.A2AClient(a.url, headers=headers) as caller:
                done = await caller.send("tell me the weather", blocking=True)
            assert done.state is TaskState.COMPLETED
            task_a, task_b, task_c = await only_task(a), await only_task(b), await only_task(c)
            async with asyncio.timeout(5):
                while len(exporter.get_finished_spans()) < 5:
                    await asyncio.sleep(0.02)
    finally:
        exporting.cancel()
    spans = {format(s.context.span_id, "016x"): s for s in exporter.get_finished_spans()}
    assert {format(s.context.trace_id, "032x") for s in spans.values()} == {CALLER_TRACE}
    assert [s.kind for s in spans.values()].count(SpanKind.SERVER) == 3
    assert [s.kind for s in spans.values()].count(SpanKind.CLIENT) == 2
    server_a, server_b, server_c = (spans[t.trace.span_id] for t in (task_a, task_b, task_c))
    assert format(server_a.parent.span_id, "016x") == CALLER_SPAN and server_a.parent.is_remote
    call_ab = spans[format(server_b.parent.span_id, "016x")]
    call_bc = spans[format(server_c.parent.span_id, "016x")]
    assert (
        call_ab.parent.span_id == server_a.context.span_id
        and call_ab.attributes["a2a.peer"] == "agent-b"
    )
    assert (
        call_bc.parent.span_id == server_b.context.span_id
        and call_bc.attributes["a2a.remote_task_id"] == task_c.id
    )
    assert (
        server_a.start_time
        <= call_ab.start_time
        <= server_b.start_time
        <= server_b.end_time
        <= server_a.end_time
    )
    assert (
        server_c.attributes["a2a.state"] == "completed"
        and server_c.resource.attributes["service.name"] == "chain"
    )


async def test_a_slow_collector_delays_spans_never_loses_them_and_never_holds_the_bus():
    """Export runs apart from reading the bus: 3,000 traced tasks ending at once (three times what
    a reader may have waiting) against a collector taking 0.2 s an export all arrive, in batches;
    before the fix the reader exported each span in turn, was cut off by the bus and stopped."""
    import time

    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolnexus.events import EventBus
    from toolnexus.protocol.model import Task, TaskStatus
    from toolnexus.protocol.tracecontext import TraceContext
    from toolnexus.trace import export_spans

    class SlowCollector(InMemorySpanExporter):
        batches: list[int] = []

        def export(self, spans):  # in a thread, as a network exporter's call is
            time.sleep(0.2)
            self.batches.append(len(spans))
            return super().export(spans)

    bus, exporter = EventBus(history=10), SlowCollector()
    exporting = export_spans(bus, exporter, service="burst", batch=512)
    await asyncio.sleep(0)  # subscribed
    try:
        for i in range(3000):
            ctx = TraceContext(CALLER_TRACE, f"{i + 1:016x}", CALLER_SPAN)
            task = Task(f"t{i}", "c", TaskStatus(TaskState.COMPLETED), trace=ctx)
            bus.publish(
                TaskEvent(task.id, "c", None, TaskState.WORKING, TaskState.COMPLETED, task, "burst")
            )
            if i % 500 == 0:
                await asyncio.sleep(
                    0
                )  # the reader gets a turn now and then, far less often than tasks end
        assert bus.dropped_subscribers == 0  # reading never waited on the exporter
        async with asyncio.timeout(20):
            while len(exporter.get_finished_spans()) < 3000:
                await asyncio.sleep(0.05)
    finally:
        exporting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await exporting
    assert len({s.context.span_id for s in exporter.get_finished_spans()}) == 3000
    assert (
        max(exporter.batches) == 512 and len(exporter.batches) < 20
    )  # in batches, not one export each


async def test_with_the_standard_otlp_variables_a_served_agent_exports_its_spans(monkeypatch):
    """OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set: the real OTLP/HTTP exporter posts each traced task
    to it (here a collector stub on loopback that decodes what the exporter sent)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from ..peers import on_loopback

    received: list[ExportTraceServiceRequest] = []

    async def collect(request: Request) -> Response:
        received.append(ExportTraceServiceRequest.FromString(await request.body()))
        return Response(
            ExportTraceServiceRequest().SerializeToString(), media_type="application/x-protobuf"
        )

    async with on_loopback(
        Starlette(routes=[Route("/v1/traces", collect, methods=["POST"])])
    ) as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector + "/v1/traces")
        tk = await tn.create_toolkit(builtins=False)
        async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="otlp-desk")) as handle:
            headers = {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
            async with tn.A2AClient(handle.url, headers=headers) as caller:
                done = await caller.send("hello", blocking=True)
            async with asyncio.timeout(10):
                while not received:
                    await asyncio.sleep(0.05)
    spans = [
        s for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    resource = {
        a.key: a.value.string_value for a in received[0].resource_spans[0].resource.attributes
    }
    assert resource["service.name"] == "otlp-desk"
    [span] = [s for s in spans if s.name == "task otlp-desk"]
    assert span.trace_id.hex() == CALLER_TRACE and span.parent_span_id.hex() == CALLER_SPAN
    assert {a.key: a.value.string_value for a in span.attributes}["a2a.task_id"] == done.id
