"""BeeAI's A2AAgent (beeai-framework) as a real A2A client (its venv: see ../field.py).

Usage: python client.py '{"url": URL, "texts": [TEXT, ...]}'
Sends each TEXT with one A2AAgent (it keeps the context and an unfinished task's id between runs)
and prints one JSON line: ``replies`` (the run's output text, or the error it raised) and ``states``
(the task's state in the run's last event).
"""

import sys
from pathlib import Path

from a2a.types import Message
from beeai_framework.adapters.a2a.agents import A2AAgent
from beeai_framework.memory import UnconstrainedMemory

sys.path.append(str(Path(__file__).parent.parent))
from field_script import report, spec  # noqa: E402

SPEC = spec()


async def run() -> dict:
    agent = A2AAgent(url=SPEC["url"], memory=UnconstrainedMemory())
    replies, states = [], []
    for text in SPEC["texts"]:
        try:
            out = await agent.run(text)
        except Exception as exc:  # noqa: BLE001 - what the client says is the outcome
            replies.append(f"{type(exc).__name__}: {str(exc)[:300]}")
            states.append(None)
            continue
        replies.append(out.output[-1].text)
        event = out.event
        task = None if isinstance(event, Message) else event[0]
        states.append(task.status.state.value if task else None)
    return {"replies": replies, "states": states}


report(run)
