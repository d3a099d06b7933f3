"""The official A2A JavaScript SDK (@a2a-js/sdk, from npm) as a real peer: ``async with js_server()``.

`.ci/run` installs it with ``npm ci`` in ``tests/peers/js``; without node or those packages the
tests that need it skip locally and fail in CI (``CI=true``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ..helpers import stop_process

HERE = Path(__file__).parent / "js"


def need_js_sdk() -> None:
    """Skip (fail in CI) unless node and the JS SDK are installed."""
    missing = (
        "node"
        if shutil.which("node") is None
        else "@a2a-js/sdk (cd tests/peers/js && npm ci)"
        if not (HERE / "node_modules" / "@a2a-js" / "sdk").is_dir()
        else None
    )
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the JavaScript SDK peer needs {missing}")
        pytest.skip(f"the JavaScript SDK peer needs {missing}")


@contextlib.asynccontextmanager
async def js_server(*, compat: bool = False, rest: bool = False) -> AsyncIterator[str]:
    """An agent on the JS SDK's express server on 127.0.0.1 (its base URL); see js/server.mjs.
    ``rest``: it serves the HTTP+JSON binding only."""
    need_js_sdk()
    args = (
        ["node", str(HERE / "server.mjs")]
        + (["--compat"] if compat else [])
        + (["--rest"] if rest else [])
    )
    proc = subprocess.Popen(
        args,
        cwd=HERE,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 30)
        if not line.startswith("http://"):
            raise RuntimeError(
                f"the JS SDK peer did not start: {line}{proc.stderr.read() if proc.stderr else ''}"
            )
        yield line.strip()
    finally:
        stop_process(proc, wait=5, terminate=False)  # it ends when its stdin closes


async def js_client(url: str, transport: str, version: str = "") -> dict[str, Any]:
    """What the JS SDK's client saw running its script (js/client.mjs) against ``url``, preferring
    ``transport`` (JSONRPC or HTTP+JSON); ``version="0.3"``: the card's 0.3 interface, spoken with
    the SDK's legacy compat."""
    need_js_sdk()
    args = ["node", str(HERE / "client.mjs"), url, transport] + ([version] if version else [])
    done = await asyncio.to_thread(
        subprocess.run, args, cwd=HERE, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"the JS SDK client failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
