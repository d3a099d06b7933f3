"""ADK's RemoteA2aAgent (google-adk) as a real A2A client: run in its own venv (see ../field.py).

Usage: python client.py '{"url": URL, "texts": [TEXT, ...]}'
Sends each TEXT to the agent at URL through an ADK Runner (one session: a conversation) and prints
one JSON line: ``replies`` (per text, the text of the events ADK keeps: not partial) and
``partials`` (per text, the partial events' texts); a failure is {"error": "..."}.
"""

import sys
from pathlib import Path

from google.adk.agents.remote_a2a_agent import RemoteA2aAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

sys.path.append(str(Path(__file__).parent.parent))
from field_script import report, spec  # noqa: E402

SPEC = spec()


async def run() -> dict:
    url, texts = SPEC["url"], SPEC["texts"]
    card = url.rstrip("/") + "/.well-known/agent-card.json"
    agent = RemoteA2aAgent(name="remote", agent_card=card, timeout=30)
    sessions = InMemorySessionService()
    runner = Runner(app_name="toolnexus-test", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="toolnexus-test", user_id="tester")
    replies, partials = [], []
    for text in texts:
        said, partial = [], []
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(
            user_id="tester", session_id=session.id, new_message=message
        ):
            if event.content and event.content.parts:
                words = [p.text for p in event.content.parts if p.text]
                (partial if event.partial else said).extend(words)
        replies.append("".join(said))
        partials.append(partial)
    await runner.close()
    return {"replies": replies, "partials": partials}


report(run)
