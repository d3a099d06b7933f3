"""ADK's RemoteA2aAgent (google-adk) as a real A2A client: run in its own venv (see ../field.py).

Usage: python client.py '{"url": URL, "texts": [TEXT, ...]}'
Sends each TEXT to the agent at URL through an ADK Runner (one session: a conversation) and prints
one JSON line, per text: ``replies`` (the text of the events ADK keeps: not partial, not thought),
``thoughts`` (the texts ADK marks ``thought``: a task's words while it is unfinished),
``partials`` (the partial events' texts) and ``asked`` (the questions ADK turns an
``input-required`` task into: its long-running ``mock_function_call_for_required_user_input``
calls, the question as their ``input_required`` argument); a failure is {"error": "..."}.
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
    replies, thoughts, partials, asked = [], [], [], []
    for text in texts:
        said, thought, partial, questions = [], [], [], []
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(
            user_id="tester", session_id=session.id, new_message=message
        ):
            for part in event.content.parts or [] if event.content else []:
                call = part.function_call
                if call and call.id in (event.long_running_tool_ids or ()):
                    questions.append((call.args or {}).get("input_required"))
                elif part.text:
                    kept = partial if event.partial else thought if part.thought else said
                    kept.append(part.text)
        replies.append("".join(said))
        thoughts.append(thought)
        partials.append(partial)
        asked.append(questions)
    await runner.close()
    return {"replies": replies, "thoughts": thoughts, "partials": partials, "asked": asked}


report(run)
