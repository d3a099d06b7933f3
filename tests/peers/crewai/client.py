"""CrewAI's A2A delegation (``crewai.a2a.utils.delegation.aexecute_a2a_delegation``, the call a
crew's agent makes to a remote A2A agent) as a real A2A client (its venv: see ../field.py). A whole
crew needs structured output a stub model cannot give; the delegation call is the same wire.

Usage: python client.py '{"url": URL, "texts": [TEXT, ...]}'
Delegates each TEXT, passing the conversation so far, its context id, and the task's id when it
asked (``input-required``), as a crew does; prints one JSON line: ``replies`` (each result, else its
error) and ``states``.
"""

import sys
from pathlib import Path

from crewai.a2a.utils.delegation import aexecute_a2a_delegation

sys.path.append(str(Path(__file__).parent.parent))
from field_script import report, spec  # noqa: E402

SPEC = spec()


async def run() -> dict:
    replies, states, history = [], [], []
    context_id = task_id = None
    for turn, text in enumerate(SPEC["texts"], 1):
        done = await aexecute_a2a_delegation(
            endpoint=SPEC["url"],
            auth=None,
            timeout=60,
            task_description=text,
            context_id=context_id,
            task_id=task_id,
            conversation_history=list(history),
            turn_number=turn,
        )
        state = getattr(done["status"], "value", str(done["status"]))
        states.append(state)
        replies.append(done.get("result") or done.get("error"))
        history = done.get("history") or history
        ids = [(m.context_id, m.task_id) for m in history if m.context_id]
        context_id = ids[-1][0] if ids else context_id
        task_id = ids[-1][1] if ids and state == "input-required" else None
    return {"replies": replies, "states": states}


report(run)
