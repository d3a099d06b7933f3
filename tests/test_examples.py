"""The example scripts run as a newcomer runs them."""

from __future__ import annotations

import json
import subprocess
import sys

from .conftest import ROOT


def run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quickstart():
    out = run("quickstart.py")
    assert "tools: skill (skill), read (builtin)" in out
    assert '<skill_content name="weather">' in out
    assert "convert(17) -> 62.6°F" in out
    assert "convert('x') -> convert: invalid argument 'celsius'" in out


def test_demo_run_prints_telemetry():
    out = run("demo_run.py")
    lines = [
        json.loads(line.split("telemetry: ", 1)[1])
        for line in out.splitlines()
        if "telemetry:" in line
    ]
    assert [t["tools"] for t in lines] == [
        [],
        ["skill", "read_skill_file"],
        ["skill"],
        ["skill", "ask_approval"],
        ["ask_approval"],
    ]
    assert all(t["model"] == "toolnexus-demo" and t["usage"]["total_tokens"] > 0 for t in lines)
    assert "pending: Do you approve: please confirm the order?" in out
