"""What ``send`` remembers between runs: the last conversation with each agent (``send --continue``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from .._fs import write_whole
from .output import say


def _state_dir() -> Path:
    """Where the command keeps what it remembers between runs: ``$TOOLNEXUS_STATE_DIR``, else
    ``$XDG_STATE_HOME/toolnexus`` (``~/.local/state/toolnexus``)."""
    if os.environ.get("TOOLNEXUS_STATE_DIR"):
        return Path(os.environ["TOOLNEXUS_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "toolnexus"


LAST_SENT = "last-sent-v1.json"
"""Per agent URL, the context and task ``send`` last had with it (``send --continue``)."""
KEEP_PEERS = 200
"""The agents remembered at most, the latest kept."""


def _known() -> Any:
    """What :data:`LAST_SENT` holds (None: nothing, or unreadable); its shape is not yet checked."""
    try:
        return json.loads((_state_dir() / LAST_SENT).read_text("utf-8"))
    except (OSError, ValueError):
        return None


def _last_sent(url: str) -> dict[str, Any] | None:
    """What ``send`` last had with ``url`` from this machine (None: nothing, or unreadable)."""
    known = _known()
    last = known.get(url) if isinstance(known, dict) else None
    return last if isinstance(last, dict) and isinstance(last.get("context"), str) else None


def _remember(url: str, task: Any) -> None:
    """Keep ``task``'s context and id as the last conversation with ``url`` (whether the task
    waits for an answer is asked of the peer when it is continued: a task sent with ``--no-wait``
    asks later); a state folder that cannot be written is said, never fatal."""
    if not task.context_id:
        return
    folder = _state_dir()
    known = _known()
    known = {k: v for k, v in (known.items() if isinstance(known, dict) else ()) if k != url}
    known[url] = {"context": task.context_id, "task": task.id}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_whole(folder / LAST_SENT, json.dumps(dict(list(known.items())[-KEEP_PEERS:])))
    except OSError as exc:
        say(
            f"toolnexus: warning: cannot remember this conversation ({folder}: {exc.strerror or exc}); --continue will not find it",
            file=sys.stderr,
        )
