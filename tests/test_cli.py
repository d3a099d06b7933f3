"""The toolnexus command, run as a newcomer runs it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from .conftest import ROOT

EXE = shutil.which("toolnexus", path=os.path.dirname(sys.executable)) or shutil.which("toolnexus")


def start(*args: str) -> subprocess.Popen[str]:
    cmd = [EXE, *args] if EXE else [sys.executable, "-m", "toolnexus.cli", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def read_until(proc: subprocess.Popen[str], event: str, timeout: float = 30) -> list[dict]:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(json.loads(line))
        if seen[-1]["event"] == event:
            return seen
    raise AssertionError(f"never saw {event}: {seen} {proc.stderr.read() if proc.poll() is not None else ''}")


def test_serve_with_no_flags_runs_the_demo_and_stops_on_ctrl_c():
    with start("serve", "--json") as proc:
        try:
            lines = read_until(proc, "ready")
            started = lines[0]
            assert started["name"] == "demo-desk" and started["profiles"] == ["A2A"] and started["model"] == "demo"
            url = started["url"]
            card = httpx.get(url + "/.well-known/agent-card.json").json()
            assert {s["id"] for s in card["skills"]} == {"greet", "report", "weather"}
            assert card["description"]
            r = httpx.post(url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
                "kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "greet Ada"}]}}},
                timeout=10)
            assert r.json()["result"]["status"]["state"] == "completed"
            events = read_until(proc, "task")
            events += [json.loads(proc.stdout.readline()) for _ in range(2)]
            assert [e["state"] for e in events if e["event"] == "task"] == ["submitted", "working", "completed"]
            assert events[-1]["skill"] == "greet" and events[-1]["usage"]["total_tokens"] > 0
            proc.send_signal(signal.SIGINT)
            assert proc.wait(10) == 0
            assert json.loads(proc.stdout.read().strip().splitlines()[-1]) == {"event": "stopped"}
            port = int(url.rsplit(":", 1)[1])
            with socket.socket() as s:
                s.bind(("127.0.0.1", port))  # closed
        finally:
            if proc.poll() is None:
                proc.kill()


def test_serve_with_mcp():
    with start("serve", "--json", "--mcp") as proc:
        try:
            lines = read_until(proc, "ready")
            assert lines[0]["profiles"] == ["A2A", "MCP"]
            mcp_url = next(line["url"] for line in lines if line["event"] == "mcp")
            assert mcp_url == lines[0]["url"] + "/mcp"
            r = httpx.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                           headers={"accept": "application/json, text/event-stream"}, timeout=10)
            assert r.status_code == 200 and '"skill"' in r.text
            proc.send_signal(signal.SIGINT)
            assert proc.wait(10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()


def test_text_output_and_sigterm():
    with start("serve", "--name", "plain-desk") as proc:
        try:
            first = proc.stdout.readline()
            assert first.startswith("serving plain-desk at http://127.0.0.1:")
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()


@pytest.mark.parametrize("args, needle", [
    (["--model", "gpt4"], "--model must be demo, openai:MODEL or anthropic:MODEL"),
    (["--config", "/no/such/file.json"], "config file not found"),
    (["--store", "sqlite:x"], "store must be"),
    (["--no-a2a"], "--no-a2a needs --mcp"),
    (["--model", "openai:gpt-x", "--api-key-env", "TOOLNEXUS_TEST_UNSET_VAR"], "is not set"),
])
def test_usage_errors_are_one_line_and_exit_2(args, needle):
    proc = start("serve", *args)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2, (out, err)
    assert needle in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_port_in_use_exits_2():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        proc = start("serve", "--port", str(s.getsockname()[1]))
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "cannot listen on 127.0.0.1" in err and "Traceback" not in err
