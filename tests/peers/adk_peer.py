"""ADK's RemoteA2aAgent (google-adk, from PyPI) as a real client: ``await adk_client(url, texts)``.

It runs in a venv of its own, ``tests/peers/adk/.venv`` (google-adk pins OpenTelemetry <= 1.44,
below the test environment's), made by `.ci/run` and the README's test command:
``python3 -m venv tests/peers/adk/.venv && tests/peers/adk/.venv/bin/pip install -q -r
tests/peers/adk/requirements.txt``. Without it the tests that need it skip locally and fail in CI
(``CI=true``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent / "adk"
PYTHON = HERE / ".venv" / "bin" / "python"


def need_adk() -> None:
    """Skip (fail in CI) unless ADK's venv is there."""
    if (
        not PYTHON.exists()
        or subprocess.run(
            [str(PYTHON), "-c", "import google.adk.agents.remote_a2a_agent"], capture_output=True
        ).returncode
    ):
        why = "ADK's venv (tests/peers/adk/.venv, see tests/peers/adk_peer.py)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"the ADK client peer needs {why}")
        pytest.skip(f"the ADK client peer needs {why}")


async def adk_client(url: str, texts: list[str]) -> Any:
    """The replies ADK's RemoteA2aAgent gave to ``texts`` sent to the agent at ``url`` in one
    session (adk/client.py), or ``{"error": ...}``."""
    need_adk()
    card = url.rstrip("/") + "/.well-known/agent-card.json"
    done = await asyncio.to_thread(
        subprocess.run,
        [str(PYTHON), str(HERE / "client.py"), card, *texts],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if not done.stdout.strip():
        raise RuntimeError(f"the ADK client failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
