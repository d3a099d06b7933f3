"""The frameworks agents are built with (`FIELD.md`'s field) as real peers, installed pinned from
the package registries, each in a folder of its own under ``tests/peers/<name>/``:

- a Python framework has ``requirements.in`` (its top-level pins) and ``requirements.txt`` (the
  whole resolution, ``uv pip compile``'d from it), installed into ``<name>/.venv``; the Gemini CLI's
  A2A server has ``package.json`` and ``package-lock.json``, installed into ``node_modules``;
- ``client.py`` drives the framework's client against a URL: ``await client(name, url, texts,
  **opts)`` sends the texts in one conversation and returns the JSON object the script prints (what
  the framework returned or recorded: ``replies``, and per script ``states``, ``events``...; a
  failure is ``{"error": ...}``);
- ``server.py`` (``server.mjs``) runs the framework's server on 127.0.0.1 port 0 backed by the
  field's model (:func:`echo`, a stub served here, in the test process) and prints its URL:
  ``async with server(name, **opts) as url``.

Their dependencies clash (a2a-sdk 0.3 and 1.3 pins, OpenTelemetry), hence one venv each.
``python -m tests.peers.field install`` (in the README's test command and `.ci/run`) makes them all
with uv, in parallel. Without a framework's install, the tests that need it skip locally and fail
in CI (``CI=true``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ..helpers import stop_process
from ..stubs import Reply, ScriptedServer, openai_calls, openai_stream, openai_text

HERE = Path(__file__).parent
FRAMEWORKS = (
    "adk",
    "strands",
    "maf",
    "fasta2a",
    "beeai",
    "crewai",
    "langgraph",
    "gemini",
    "handler",
)
"""The field's folders, in FIELD.md's order."""

SLOW = 60.0
"""Seconds the model waits before answering a message that says ``slow`` (a task to cancel)."""
_WORD_START = re.compile(r"(?<=\s)(?=\S)")


def _env() -> dict[str, str]:
    """The environment of a framework's process: ours, less PYTHONPATH (its venv is its world),
    its telemetry off."""
    quiet = {"CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true"}
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | quiet


def _python(name: str) -> Path:
    return HERE / name / ".venv" / "bin" / "python"


def _missing(name: str) -> str | None:
    folder = HERE / name
    if (folder / "package.json").exists():
        if shutil.which("node") is None:
            return "node"
        if not (folder / "node_modules").is_dir():
            return f"tests/peers/{name}/node_modules (python -m tests.peers.field install)"
        return None
    if not _python(name).exists():
        return f"tests/peers/{name}/.venv (python -m tests.peers.field install)"
    return None


def need(name: str) -> None:
    """Skip (fail in CI) unless the framework ``name`` is installed."""
    missing = _missing(name)
    if missing:
        why = f"the {name} peer needs {missing}"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)


def _outcome(name: str, done: subprocess.CompletedProcess[str]) -> Any:
    """The JSON a client script printed after ``field-result: `` (field_script.report)."""
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("field-result: "):  # what a framework's thread printed may follow
            return json.JSONDecoder().raw_decode(line.removeprefix("field-result: "))[0]
    raise RuntimeError(
        f"the {name} client said nothing ({done.returncode}): {(done.stdout + done.stderr)[-3000:]}"
    )


async def client(name: str, url: str, texts: list[str], **opts: Any) -> dict[str, Any]:
    """What the framework ``name``'s client returned sending ``texts`` to the agent at ``url`` in
    one conversation (``<name>/client.py``; ``opts`` are its own, e.g. ``stream=True``)."""
    return await _run_client(name, {"url": url, "texts": texts, **opts})


async def conversations(
    name: str, url: str, talks: list[list[str]], **opts: Any
) -> list[dict[str, Any]]:
    """:func:`client` for each of ``talks`` (each a conversation of its own), in one process."""
    return await _run_client(name, {"url": url, "conversations": talks, **opts})


async def _run_client(name: str, spec: dict[str, Any]) -> Any:
    need(name)
    done = await asyncio.to_thread(
        subprocess.run,
        [str(_python(name)), str(HERE / name / "client.py"), json.dumps(spec)],
        cwd=HERE / name,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    return _outcome(name, done)


def _last_user(body: dict[str, Any]) -> tuple[str, int]:
    """The text of the last user message of an OpenAI-style or Gemini-style request, and how many
    user messages it holds."""
    said = []
    for m in body.get("messages") or body.get("contents") or []:
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        content = m.get("content", m.get("parts"))
        text = (
            content
            if isinstance(content, str)
            else "".join(p.get("text") or "" for p in content or [] if isinstance(p, dict))
        )
        if text.strip():
            said.append(text)
    return (said[-1] if said else ""), len(said)


def answer(body: dict[str, Any]) -> str:
    """The field's model's answer: ``echo: TEXT``, and ``(turn N)`` from the second user message of
    a conversation on (the server kept the conversation)."""
    text, turns = _last_user(body)
    return f"echo: {text.strip()}" + (f" (turn {turns})" if turns > 1 else "")


def _gemini(text: str, finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"text": text}]},
        "index": 0,
    }
    if finish:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
        "modelVersion": "gemini-stub",
    }


def echo(request: dict[str, Any]) -> Reply:
    """The field's model, OpenAI-style (``/chat/completions``, streamed word by word when asked) and
    Gemini-API-style (``:generateContent``, ``:streamGenerateContent``, ``:countTokens``): it answers
    :func:`answer` (through a ``final_answer`` tool when one is offered: BeeAI's RequirementAgent
    takes nothing else); a message saying ``slow`` waits :data:`SLOW` seconds first, one saying
    ``fail`` is answered 500."""
    path, body = request["path"], request["json"] or {}
    if path.endswith(":countTokens"):
        return Reply(body={"totalTokens": 5})
    text, _ = _last_user(body)
    words = set(re.findall(r"[a-z]+", text.lower()))
    if "fail" in words:
        return Reply(500, {"error": {"message": "the stub model was asked to fail", "code": 500}})
    delay = SLOW if "slow" in words else 0.0
    reply = answer(body)
    pieces = _WORD_START.split(reply)
    if path.endswith(":streamGenerateContent"):
        events = [_gemini(p, i == len(pieces) - 1) for i, p in enumerate(pieces)]
        return Reply(events=events, gap=0.02, delay=delay)
    if path.endswith(":generateContent"):
        return Reply(body=_gemini(reply, True), delay=delay)
    tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
    if "final_answer" in tools:  # BeeAI's RequirementAgent answers through this tool only
        args = json.dumps({"response": reply})
        if body.get("stream"):
            called = openai_stream(calls=(("call_final", "final_answer", args),))
        else:
            called = openai_calls(("call_final", "final_answer", args))
        called.delay = delay
        return called
    if body.get("stream"):
        streamed = openai_stream(*pieces, gap=0.02)
        streamed.delay = delay
        return streamed
    plain = openai_text(reply)
    plain.delay = delay
    return plain


@contextlib.asynccontextmanager
async def server(name: str, **opts: Any) -> AsyncIterator[str]:
    """The framework ``name``'s A2A server on 127.0.0.1 (the URL it prints: its agent's base URL),
    its model :func:`echo` served here; ``opts`` are its script's own."""
    need(name)
    folder = HERE / name
    async with ScriptedServer(respond=echo) as model:
        spec = json.dumps({"model": model.url, **opts})
        script = (
            ["node", str(folder / "server.mjs")]
            if (folder / "server.mjs").exists()
            else [str(_python(name)), str(folder / "server.py")]
        )
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(
                [*script, spec],
                cwd=folder,
                env=_env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                text=True,
                start_new_session=True,
            )
            try:
                yield await _url(name, proc, out, err)
            finally:
                stop_process(proc, wait=10)


async def _url(name: str, proc: subprocess.Popen[str], out: Any, err: Any) -> str:
    """The first ``http://`` line ``proc`` prints (within two minutes: a framework's first start
    imports a lot)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        out.seek(0)
        for line in out.read().splitlines():
            if line.startswith("http://"):
                return line.strip()
        if proc.poll() is not None:
            break
        await asyncio.sleep(0.1)
    err.seek(0)
    raise RuntimeError(f"the {name} server did not start ({proc.poll()}): {err.read()[-3000:]}")


def _install(name: str) -> str:
    """Install the framework ``name`` into its folder; returns a line saying how long it took."""
    folder = HERE / name
    start = time.monotonic()
    if (folder / "package-lock.json").exists():
        cmd = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        subprocess.run(cmd, cwd=folder, check=True)
    else:
        uv = Path(sys.executable).with_name("uv")
        venv = folder / ".venv"
        if not _python(name).exists():
            subprocess.run([uv, "venv", "-q", "--python", sys.executable, venv], check=True)
        sync = [uv, "pip", "sync", "-q", "-p", _python(name), folder / "requirements.txt"]
        subprocess.run(sync, check=True)
    return f"{name}: {time.monotonic() - start:.1f} s"


def install() -> None:
    """Install every framework of the field, four at a time (mostly waiting on downloads)."""
    start = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        for line in pool.map(_install, FRAMEWORKS):
            print(f"field peer {line}", flush=True)
    print(f"field peers installed in {time.monotonic() - start:.1f} s", flush=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python -m tests.peers.field install")
    install()
