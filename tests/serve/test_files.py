"""Files in and out of a served agent (A2A 1.0 §4.1.6, §3.2.2), with real peers: the official
a2a-sdk client sends file parts on every binding and dialect; the model endpoints are stubs that
check the content blocks as the providers document them (``tests/stubs.py``); tools read the
caller's files in the task's folder and return files and data, which become artifacts."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import uuid
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

import toolnexus as tn
from toolnexus.http.server import AsgiServer
from toolnexus.tools import Attachment, ToolContext, ToolResult

from ..conftest import EXAMPLE_SKILLS
from ..helpers import Served
from ..stubs import (
    ScriptedServer,
    anthropic_shape,
    anthropic_text,
    openai_calls,
    openai_shape,
    openai_text,
)
from .wire import rpc

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

from a2a.types import a2a_pb2 as pb  # noqa: E402
from a2a.utils import errors as sdk_errors  # noqa: E402

from .test_grpc import _sdk_client as grpc_client  # noqa: E402
from .test_sdk_interop import sdk_client  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
MODES = ["text/plain", "image/*", "application/pdf"]
BINDINGS = ["1.0", "0.3", "rest", "rest-0.3", "grpc", "grpc-0.3"]


@contextlib.asynccontextmanager
async def served(model_url: str, tools=(), style: str = "openai", **config):
    tk = await tn.create_toolkit(builtins=False, tools=list(tools))
    client = tn.create_client(base_url=model_url, style=style, model="m", api_key="k", retries=0)
    a2a = tn.A2AConfig(
        name="files-desk",
        input_modes=MODES,
        grpc="127.0.0.1:0",
        **{"output_modes": MODES, **config},
    )
    async with client, tk.serve(client=client, a2a=a2a) as handle:
        yield handle


@contextlib.asynccontextmanager
async def official(handle, binding: str):
    """The official client on ``binding`` (as in test_sdk_interop and test_grpc)."""
    if binding.startswith("grpc"):
        client = await grpc_client(handle.url, version="0.3" if binding.endswith("0.3") else "1.0")
        try:
            yield client
        finally:
            await client.close()
    else:
        async with sdk_client(handle, binding) as client:
            yield client


def message(*parts: pb.Part) -> pb.Message:
    return pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=list(parts))


async def send(client, msg: pb.Message, accepted: list[str] | None = None) -> pb.Task:
    request = pb.SendMessageRequest(
        message=msg, configuration=pb.SendMessageConfiguration(accepted_output_modes=accepted)
    )
    events = [ev async for ev in client.send_message(request)]
    task = next(ev.task for ev in events if ev.HasField("task"))
    return await client.get_task(pb.GetTaskRequest(id=task.id))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_sdk_client_sends_files_the_model_and_the_tools_get(binding):
    """Inline files from the official client (1.0's ``raw`` and 0.3's ``file.bytes``, every
    binding) reach an OpenAI-style model as content parts (an ``image_url`` data URL, a ``file``
    with ``file_data``) and the tools as files in the task's folder, which goes when it ends."""
    seen: dict[str, object] = {}

    @tn.tool
    async def look(ctx: ToolContext) -> str:
        """List the task's files."""
        assert ctx.folder is not None
        folder = Path(ctx.folder)
        seen["folder"] = folder
        seen["files"] = {p.name: p.read_bytes() for p in folder.iterdir()}
        return "two files"

    model = ScriptedServer([openai_calls(("c1", "look", {})), openai_text("seen")], openai_shape)
    async with model, served(model.url, [look]) as handle, official(handle, binding) as client:
        task = await send(
            client,
            message(
                pb.Part(text="what are these?"),
                pb.Part(raw=PNG, media_type="image/png", filename="dot.png"),
                pb.Part(raw=PDF, media_type="application/pdf", filename="doc.pdf"),
            ),
        )
        assert task.status.state == pb.TASK_STATE_COMPLETED, task.status
        assert [p.text for a in task.artifacts for p in a.parts] == ["seen"]
    user = model.requests[0]["json"]["messages"][-1]
    text, image, pdf = user["content"]
    assert text["type"] == "text" and text["text"].startswith("what are these?")
    assert "dot.png (image/png, 70 bytes)" in text["text"]
    assert image == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}}
    assert pdf == {
        "type": "file",
        "file": {"filename": "doc.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
    }
    assert seen["files"] == {"dot.png": PNG, "doc.pdf": PDF}
    assert not Path(seen["folder"]).exists()  # type: ignore[arg-type]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_sdk_client_sends_data_the_model_and_the_tools_get(binding):
    """Data parts from the official client (1.0's ``data`` Value and 0.3's ``DataPart``, every
    binding) reach the model as JSON in its text, named there as the files the tools get
    (``data.json``, ``data-2.json``: one a part, in the task's folder); a data part larger than
    ``max_file`` is refused (-32602, no task made)."""
    from google.protobuf import json_format, struct_pb2

    seen: dict[str, object] = {}

    @tn.tool
    async def look(ctx: ToolContext) -> str:
        """Read the caller's data."""
        assert ctx.folder is not None
        seen["files"] = {p.name: json.loads(p.read_text()) for p in Path(ctx.folder).iterdir()}
        return "read"

    order, note = {"city": "Oslo", "days": [1, 2], "rush": True}, {"by": "ada"}

    def data(value: object) -> pb.Part:
        return pb.Part(data=json_format.ParseDict(value, struct_pb2.Value()))

    model = ScriptedServer([openai_calls(("c1", "look", {})), openai_text("seen")], openai_shape)
    async with (
        model,
        served(model.url, [look], max_file=200) as handle,
        official(handle, binding) as client,
    ):
        task = await send(client, message(pb.Part(text="book this"), data(order), data(note)))
        assert task.status.state == pb.TASK_STATE_COMPLETED, task.status
        with pytest.raises(Exception, match="at most 200 are taken") as refused:
            await send(client, message(pb.Part(text="and this"), data({"x": "y" * 300})))
        said = str(refused.value)
        if not binding.startswith("grpc"):
            assert isinstance(refused.value, sdk_errors.InvalidParamsError), said
    assert seen["files"] == {"data-1.json": order, "data-2.json": note}
    (text,) = [m["content"] for m in model.requests[0]["json"]["messages"] if m["role"] == "user"]
    text = text if isinstance(text, str) else text[0]["text"]
    assert text.startswith("book this\n")
    assert json.loads(text.split("\n")[1]) == order and json.loads(text.split("\n")[2]) == note
    assert "in the task's folder for tools: data-1.json, data-2.json." in text
    assert len(model.requests) == 2  # the refused send reached no model


async def test_an_anthropic_style_model_gets_image_and_document_blocks():
    """Our client sends the files (``A2AClient.send(files=)``); an Anthropic-style model gets an
    ``image`` and a ``document`` block with base64 sources, before the text."""
    model = ScriptedServer([anthropic_text("a dot and a document")], anthropic_shape)
    async with model, served(model.url, style="anthropic") as handle:
        folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"files-{uuid.uuid4().hex}"
        folder.mkdir()
        (folder / "dot.png").write_bytes(PNG)
        (folder / "doc.pdf").write_bytes(PDF)
        async with tn.A2AClient(handle.url) as peer:
            task = await peer.send(
                "what are these?",
                files=[folder / "dot.png", folder / "doc.pdf"],
                blocking=True,
            )
    assert task.state is tn.TaskState.COMPLETED and task.reply == "a dot and a document"
    image, document, text = model.requests[0]["json"]["messages"][-1]["content"]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)},
    }
    assert document["type"] == "document" and document["source"]["data"] == b64(PDF)
    assert text["type"] == "text" and text["text"].startswith("what are these?")


@pytest.mark.parametrize("binding", ["1.0", "rest", "grpc", "0.3"])
async def test_files_outside_the_modes_or_too_large_are_refused_on_every_binding(binding):
    model = ScriptedServer([], openai_shape)
    async with model, served(model.url, max_file=64) as handle, official(handle, binding) as client:
        with pytest.raises(sdk_errors.ContentTypeNotSupportedError):
            await send(client, message(pb.Part(raw=b"RIFF", media_type="audio/wav")))
        with pytest.raises(sdk_errors.InvalidParamsError) as large:
            await send(client, message(pb.Part(raw=b"x" * 65, media_type="image/png")))
        assert "at most 64" in str(large.value)
        with pytest.raises(sdk_errors.ContentTypeNotSupportedError):  # the caller takes no text
            await send(client, message(pb.Part(text="hi")), accepted=["audio/wav"])
        assert handle.runner is not None
        assert (await handle.runner.list()).tasks == []  # nothing was made of any of them
    assert model.requests == []


@contextlib.asynccontextmanager
async def file_host():
    """A web server with one image, counting the requests it gets."""
    hits: list[str] = []

    async def image(request):
        hits.append(request.url.path)
        if request.url.path == "/big.png":
            return Response(b"x" * 4096, media_type="image/png")
        return Response(PNG, media_type="image/png")

    server = AsgiServer(Starlette(routes=[Route("/{name}", image)]))
    await server.start()
    try:
        yield server.url, hits
    finally:
        await server.stop()


async def test_a_file_by_url_is_fetched_only_when_the_agent_allows_it():
    async with file_host() as (site, hits):
        url = f"{site}/dot.png"
        part = pb.Part(url=url, media_type="image/png", filename="dot.png")
        model = ScriptedServer([openai_text("a link")], openai_shape)
        async with model, served(model.url) as handle, official(handle, "1.0") as client:
            task = await send(client, message(pb.Part(text="look"), part))
        assert task.status.state == pb.TASK_STATE_COMPLETED
        assert hits == []  # not fetched: named to the model
        content = model.requests[0]["json"]["messages"][-1]["content"]
        assert isinstance(content, str) and url in content

        model = ScriptedServer([openai_text("a dot"), openai_text("never")], openai_shape)
        async with (
            model,
            served(model.url, fetch_files=True, max_file=1024) as handle,
            official(handle, "rest") as client,
        ):
            task = await send(client, message(pb.Part(text="look"), part))
            assert task.status.state == pb.TASK_STATE_COMPLETED
            big = pb.Part(url=f"{site}/big.png", media_type="image/png")
            too_big = await send(client, message(pb.Part(text="look"), big))
            own = pb.Part(url=f"{handle.url}/x.png", media_type="image/png")
            itself = await send(client, message(pb.Part(text="look"), own))
        assert hits == ["/dot.png", "/big.png"]
        image = model.requests[0]["json"]["messages"][-1]["content"][1]
        assert image["image_url"]["url"] == f"data:image/png;base64,{b64(PNG)}"
        assert too_big.status.state == pb.TASK_STATE_FAILED
        assert "larger than 1,024 bytes" in too_big.status.message.parts[0].text
        assert itself.status.state == pb.TASK_STATE_FAILED  # the webhook rule: never itself
        assert "is this agent itself" in itself.status.message.parts[0].text
        assert len(model.requests) == 1


@tn.tool
async def chart(title: str) -> ToolResult:
    """Draw a chart."""
    return ToolResult(
        f"drew {title}", files=[Attachment("chart.png", "image/png", PNG)], data={"title": title}
    )


@pytest.mark.parametrize("binding", ["1.0", "0.3", "grpc"])
async def test_files_and_data_a_tool_makes_become_artifacts_in_the_modes_accepted(binding):
    turns = [openai_calls(("c1", "chart", {"title": "sales"})), openai_text("here it is")]
    model = ScriptedServer(turns * 2, openai_shape)
    async with (
        model,
        served(
            model.url, [chart], output_modes=["text/plain", "image/png", "application/json"]
        ) as handle,
        official(handle, binding) as client,
    ):
        everything = await send(client, message(pb.Part(text="chart sales")))
        only_images = await send(client, message(pb.Part(text="chart sales")), ["image/*"])
    kinds = [[p.WhichOneof("content") for p in a.parts] for a in everything.artifacts]
    assert kinds == [["text"], ["raw"], ["data"]]
    _, image, data = everything.artifacts
    assert image.parts[0].raw == PNG and image.parts[0].filename == "chart.png"
    assert image.parts[0].media_type == "image/png"
    assert dict(data.parts[0].data.struct_value) == {"title": "sales"}
    assert [[p.raw for p in a.parts] for a in only_images.artifacts] == [[PNG]]


async def test_skills_modes_and_media_types_on_the_card(tmp_path):
    skill = tmp_path / "scan" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text(
        "---\nname: scan\ndescription: reads scans\ninput-modes: [image/png, application/pdf]\n"
        "output-modes: [text/plain]\n---\nRead it.\n"
    )
    tk = await tn.create_toolkit(skills_dir=[str(tmp_path)], builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="scanner")) as handle:
        async with httpx.AsyncClient() as http:
            card = (await http.get(handle.card_url)).json()
            file = {"kind": "file", "file": {"bytes": b64(PNG), "mimeType": "image/gif"}}
            msg = {"messageId": "m1", "role": "user", "metadata": {"skill": "scan"}}
            refused = await rpc(
                http, handle.url, "message/send", {"message": {**msg, "parts": [file]}}
            )
    assert card["defaultInputModes"] == ["text/plain"] and card["defaultOutputModes"] == [
        "text/plain"
    ]
    scan = next(s for s in card["skills"] if s["id"] == "scan")
    assert scan["inputModes"] == ["image/png", "application/pdf"]
    assert scan["outputModes"] == ["text/plain"]
    error = refused["error"]
    assert error["code"] == -32005 and "image/png, application/pdf" in error["message"]


async def test_a_callers_files_a_crash_left_are_removed_at_the_next_start(tmp_path):
    """Issue 59 item 2: killed mid-task, a ``toolnexus serve`` left the task's folder and the
    caller's file under ``files_dir``, and a restart on the same folder never removed them. Now the
    start removes each task folder whose task is over or gone, and says so; a folder of a task still
    live (a durable store's, waiting for input) stays, and nothing else there is touched."""
    files_dir = tmp_path / "files"
    files_dir.mkdir()
    config = tmp_path / "toolnexus.json"
    store = tmp_path / "tasks"
    a2a = {"files_dir": str(files_dir), "store": f"file:{store}"}
    config.write_text(json.dumps({"a2a": a2a}))
    note = tmp_path / "note.txt"
    note.write_text("the caller's own words")
    theirs = files_dir / "notes"  # not a task's folder: never touched
    theirs.mkdir()
    async with Served("--config", str(config), "--skills", str(EXAMPLE_SKILLS)) as served:
        [started] = await served.until(lambda lines: served.events("started"))
        async with tn.A2AClient(started["url"]) as peer:
            asked = await peer.send(
                "draft the weekly report", files=[note], blocking=True
            )  # the demo asks whether to publish it: input-required, live across a restart
            slow = await peer.send("slow 120 then answer", files=[note])
        crashed = files_dir / slow.id / "note.txt"
        async with asyncio.timeout(30):
            while not crashed.exists():
                await asyncio.sleep(0.05)
        served.proc.kill()  # a crash: no drain, no clean-up
        await served.proc.wait()
    assert crashed.read_text() == "the caller's own words"  # left behind
    assert asked.state is tn.TaskState.INPUT_REQUIRED and (files_dir / asked.id).is_dir()
    async with Served("--config", str(config), "--skills", str(EXAMPLE_SKILLS)) as again:
        await again.until(lambda lines: again.events("started"))
        said = "".join(again.errors) + json.dumps(again.lines)
    assert not (files_dir / slow.id).exists(), said
    assert (files_dir / asked.id).is_dir() and theirs.is_dir()
    assert f"removed 1 task folder(s) under {files_dir} that a crash left" in said
    assert slow.id in said
