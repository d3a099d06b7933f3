"""AWS Strands' A2AAgent as a real A2A client (its venv: see ../field.py).

Usage: python client.py '{"url": URL, "texts": [TEXT, ...]}'
Sends each TEXT with one A2AAgent (``stream_async``, as ``invoke_async`` does) and prints one JSON
line: ``replies`` (the AgentResult's text per text), ``states`` (per text, the task states it saw)
and ``contexts`` (the contextId of each answer).
"""

import sys
from pathlib import Path

from a2a.types import Message, TaskStatusUpdateEvent
from strands.agent.a2a_agent import A2AAgent

sys.path.append(str(Path(__file__).parent.parent))
from field_script import report, spec  # noqa: E402

SPEC = spec()


async def run() -> dict:
    agent = A2AAgent(SPEC["url"], timeout=60)
    replies, states, contexts = [], [], []
    for text in SPEC["texts"]:
        seen, context, result = [], None, None
        async for event in agent.stream_async(text):
            if "result" in event:
                result = event["result"]
                continue
            a2a = event.get("event")
            if isinstance(a2a, Message):
                context = a2a.context_id
            elif isinstance(a2a, tuple):
                task, update = a2a
                context = task.context_id
                if update is None or isinstance(update, TaskStatusUpdateEvent):
                    state = (update.status if update else task.status).state.value
                    if not seen or seen[-1] != state:
                        seen.append(state)
        replies.append(str(result).strip() if result is not None else None)
        states.append(seen)
        contexts.append(context)
    return {"replies": replies, "states": states, "contexts": contexts}


report(run)
