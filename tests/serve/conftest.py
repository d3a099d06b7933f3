from __future__ import annotations

import pytest_asyncio

import toolnexus as tn

from ..conftest import EXAMPLE_SKILLS


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def demo_server():
    """The example skills served with the demo model on a real loopback port, shared by a module."""
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    seen: list[dict] = []
    handle = await tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="demo-desk", description="The toolnexus demo agent"),
        on_task=seen.append,
    )
    handle.on_task_calls = seen  # type: ignore[attr-defined]
    yield handle
    await handle.stop()
