"""Our client sends files (``A2AClient.send(files=)``, ``toolnexus send --file``) to the official
a2a-sdk server on every binding and dialect, which echoes them back as an artifact: the bytes
that return are the bytes sent. And ``--accept`` reaches a served agent as
``acceptedOutputModes``."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

import toolnexus as tn
from toolnexus.tools import Attachment, ToolResult

from .peers.sdk_server import sdk_server, takes_anything

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

WAYS = [  # (the SDK server's binding and 0.3 too, our client's binding and dialect)
    ("JSONRPC", "jsonrpc", "1.0"),
    ("JSONRPC", "jsonrpc", "0.3"),
    ("HTTP+JSON", "http+json", "1.0"),
    ("HTTP+JSON", "http+json", "0.3"),
    ("GRPC", "grpc", "1.0"),
    ("GRPC", "grpc", "0.3"),
]
BINARY = bytes(range(256)) * 3  # every byte value, not text in any encoding


@pytest.mark.parametrize(("served", "binding", "dialect"), WAYS)
async def test_files_sent_to_the_sdk_server_come_back_byte_for_byte(
    tmp_path: Path, served: str, binding: str, dialect: str
):
    (tmp_path / "blob.bin").write_bytes(BINARY)
    (tmp_path / "note.txt").write_text("abcd")  # base64's own alphabet: still the file itself
    async with (
        sdk_server(binding=served, compat=dialect == "0.3", shaped=takes_anything) as url,
        tn.A2AClient(url, binding=binding, dialect=dialect) as client,
    ):
        task = await client.send(
            "take these",
            files=[tmp_path / "blob.bin", tmp_path / "note.txt"],
            blocking=True,
        )
        assert (client.binding.lower(), client.dialect.value) == (binding, dialect)
    assert task.state is tn.TaskState.COMPLETED, task.status
    echoed = next(a for a in task.artifacts if a.name == "echoed")
    got = {p.filename: p for p in echoed.parts}
    assert tn.Part.of_file(tmp_path / "blob.bin").raw == got["blob.bin"].raw
    assert got["note.txt"].raw == "YWJjZA==" and got["note.txt"].media_type == "text/plain"
    assert [p.label for p in task.file_parts][:2] == [
        "file blob.bin (application/octet-stream, 768 B)",
        "file note.txt (text/plain, 4 B)",
    ]


async def _cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_toolnexus_send_file_and_accept(tmp_path: Path):
    (tmp_path / "data.csv").write_text("city,temp\nOslo,-3\n")
    async with sdk_server(shaped=takes_anything) as url:
        code, out, err = await _cli("send", url, "take it", "--file", str(tmp_path / "data.csv"))
        assert code == 0, err
        assert "echo: take it (+1 parts)" in out
        assert "[file data.csv (text/csv, 18 B)]" in out
        code, out, err = await _cli("send", url, "x", "--file", str(tmp_path / "missing.png"))
        assert code == 2 and "--file: cannot attach" in err and "missing.png" in err

    @tn.tool
    async def chart() -> ToolResult:
        """Draw a chart."""
        png = Attachment("chart.png", "image/png", b"\x89PNG\r\n")
        return ToolResult("drew it", files=[png], data={"points": 3})

    script = iter([("call", "chart", {}), ("say", "done")])
    tk = await tn.create_toolkit(builtins=False, tools=[chart])
    client = tn.create_in_process_client(generate=lambda *_: _step(next(script)))
    a2a = tn.A2AConfig(output_modes=["text/plain", "image/png", "application/json"])
    async with tk.serve(client=client, a2a=a2a) as handle:
        code, out, err = await _cli(
            "send", handle.url, "a chart", "--accept", "image/png", "--json"
        )
        assert code == 0, err
        task = json.loads(out)["task"]
        parts = [p for a in task["artifacts"] for p in a["parts"]]
        assert [(p["kind"], p["file"]["name"]) for p in parts] == [("file", "chart.png")]
        code, out, err = await _cli("send", handle.url, "x", "--accept", "audio/wav")
        assert code == 1 and "Incompatible content types" in err


def _step(step: tuple) -> dict:
    kind, *rest = step
    if kind == "call":
        name, args = rest
        return {"tool_calls": [{"id": "c1", "name": name, "arguments": args}]}
    return {"content": rest[0]}
