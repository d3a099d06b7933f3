"""Microsoft Agent Framework's A2AAgent (agent-framework-a2a) as a real A2A client (its venv: see
../field.py).

Usage: python client.py '{"url": URL, "texts": [TEXT, ...], "stream": false}'
Sends each TEXT in one AgentSession (``run``, or ``run(stream=True)``) and prints one JSON line:
``replies`` (each response's text), ``asked`` (per text, the texts of the user-input requests it
raised), ``updates`` (per text, the streamed updates' texts).
"""

import sys
from pathlib import Path

from agent_framework_a2a import A2AAgent

sys.path.append(str(Path(__file__).parent.parent))
from field_script import report, spec  # noqa: E402

SPEC = spec()


async def run() -> dict:
    replies, asked, updates = [], [], []
    async with A2AAgent(url=SPEC["url"], timeout=60) as agent:
        session = agent.create_session()
        for text in SPEC["texts"]:
            if SPEC.get("stream"):
                stream = agent.run(text, stream=True, session=session)
                updates.append([u.text async for u in stream if u.text])
                response = await stream.get_final_response()
            else:
                response = await agent.run(text, session=session)
            replies.append(response.text)
            asked.append([r.text for r in response.user_input_requests])
    return {"replies": replies, "asked": asked, "updates": updates}


report(run)
