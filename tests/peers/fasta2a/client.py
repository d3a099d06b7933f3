"""pydantic's fasta2a client (``fasta2a.client.A2AClient``) as a real A2A client (its venv: see
../field.py).

Usage: python client.py '{"url": URL, "texts": [TEXT, ...], "stream": false}'
Fetches the card as the client does (``fetch_card=True``), then sends each TEXT, in the context of
the task before (and as its answer when that task asked: ``input-required``), and prints one JSON
line: ``card`` (null, or why the client refused the card), ``replies`` (per text, the task's
artifacts' text, else its status message's text; or the error the client got), ``states`` (per
text, the task states it read; streamed: one per event, each update applied to the task).
"""

import sys
import uuid
from pathlib import Path

from fasta2a.client import A2AClient

sys.path.append(str(Path(__file__).parent.parent))
from field_script import report, spec  # noqa: E402

SPEC = spec()


def text_of(task: dict) -> str:
    parts = [p for a in task.get("artifacts") or [] for p in a.get("parts") or []]
    if not parts:
        parts = ((task.get("status") or {}).get("message") or {}).get("parts") or []
    return "".join(p.get("text") or "" for p in parts)


def apply(task: dict, update: dict) -> None:
    """A status or artifact update applied to the task, as a fasta2a application does: the status
    replaced; an artifact appended to (``append``) or replaced (the spec's reading)."""
    if "status" in update:
        task["status"] = update["status"]
        return
    new = update["artifact"]
    known = [a for a in task.setdefault("artifacts", []) if a["artifact_id"] == new["artifact_id"]]
    if known and update.get("append"):
        known[0]["parts"] += new["parts"]
    elif known:
        known[0]["parts"] = new["parts"]
    else:
        task["artifacts"].append(new)


async def run() -> dict:
    try:
        A2AClient(SPEC["url"], fetch_card=True)
        card = None
    except Exception as exc:  # noqa: BLE001 - what the client says is the outcome
        card = f"{type(exc).__name__}: {str(exc)[:300]}"
    client = A2AClient(SPEC["url"])
    replies, states, last = [], [], None
    for text in SPEC["texts"]:
        message = {"role": "user", "parts": [{"text": text}], "message_id": str(uuid.uuid4())}
        if last is not None:
            message["context_id"] = last["context_id"]
            if last["status"]["state"] == "input-required":
                message["task_id"] = last["id"]
        try:
            if SPEC.get("stream"):
                seen, task = [], None
                async for event in client.stream_message(message):
                    result = event.get("result") or {}
                    task = result.get("task") or task
                    update = result.get("status_update") or result.get("artifact_update")
                    seen.append(
                        (task or {}).get("status", {}).get("state")
                        if update is None
                        else update.get("status", {}).get("state", "artifact")
                    )
                    if "error" in event:
                        raise RuntimeError(str(event["error"]))
                    if task is not None and update is not None:
                        apply(task, update)
                states.append(seen)
            else:
                answer = await client.send_message(message)
                if "error" in answer:
                    raise RuntimeError(str(answer["error"]))
                task = answer["result"]["task"]
                states.append([task["status"]["state"]])
            last = task
            replies.append(text_of(task) if task else None)
        except Exception as exc:  # noqa: BLE001 - what the client says is the outcome
            replies.append(f"{type(exc).__name__}: {str(exc)[:300]}")
            states.append([])
    return {"card": card, "replies": replies, "states": states}


report(run)
