"""An agent on the official a2a-sdk 0.3 server (0.3.26, the line Strands, BeeAI and CrewAI are
built on), as a real 0.3-only peer: ``async with sdk03_server() as url``.

The 0.3 line cannot be installed beside the 1.3 one, so this runs in the Strands venv
(``tests/peers/strands/.venv``, made by ``python -m tests.peers.field install``), which carries
a2a-sdk 0.3.26 and its HTTP server. Run as a script, it serves on 127.0.0.1 port 0 and prints its
URL. Its agent echoes (``echo: TEXT``, one artifact)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

HERE = Path(__file__).parent
VENV = "strands"
"""The field's venv that carries a2a-sdk 0.3.26."""


@contextlib.asynccontextmanager
async def sdk03_server() -> AsyncIterator[str]:
    """The script below, served in the venv of :data:`VENV`; yields its base URL."""
    from .field import need

    need(VENV)
    proc = await asyncio.create_subprocess_exec(
        str(HERE / VENV / ".venv" / "bin" / "python"),
        __file__,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        if not line.startswith(b"http://"):
            raise RuntimeError(f"the a2a-sdk 0.3 server did not start: {line!r}")
        yield line.decode().strip()
    finally:
        proc.terminate()
        await proc.wait()


def main() -> None:  # in the venv of a2a-sdk 0.3
    import socket

    import uvicorn
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.apps import A2AStarletteApplication
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TextPart
    from a2a.utils import new_task

    class Echo(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue) -> None:  # type: ignore[no-untyped-def]
            task = context.current_task or new_task(context.message)  # type: ignore[arg-type]
            await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            text = context.get_user_input()
            await updater.add_artifact([Part(root=TextPart(text=f"echo: {text}"))], name="reply")
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue) -> None:  # type: ignore[no-untyped-def]
            await TaskUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn takes them
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    card = AgentCard(
        name="sdk03-echo",
        description="Echo agent on the official a2a-sdk 0.3.26",
        url=url,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Replies", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    print(url, flush=True)
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
