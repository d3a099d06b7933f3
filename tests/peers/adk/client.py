"""ADK's RemoteA2aAgent (google-adk) as a real A2A client for toolnexus' tests: run in its own venv.

Usage: python client.py CARD_URL TEXT [TEXT ...]
Sends each TEXT to the remote agent through an ADK Runner (one session: a conversation), and prints
the remote agent's replies as one JSON list on stdout; a failure is {"error": "..."}.
"""

import asyncio
import json
import sys

from google.adk.agents.remote_a2a_agent import RemoteA2aAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types


async def main(card: str, texts: list[str]) -> list[str]:
    agent = RemoteA2aAgent(name="remote", agent_card=card, timeout=30)
    sessions = InMemorySessionService()
    runner = Runner(app_name="toolnexus-test", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="toolnexus-test", user_id="tester")
    replies = []
    for text in texts:
        said = []
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(
            user_id="tester", session_id=session.id, new_message=message
        ):
            if event.content and event.content.parts and not event.partial:
                said += [p.text for p in event.content.parts if p.text]
        replies.append("".join(said))
    await runner.close()
    return replies


if __name__ == "__main__":
    try:
        print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2:]))))
    except Exception as exc:  # noqa: BLE001 - the outcome is what the test reads
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
