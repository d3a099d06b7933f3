"""LangGraph's in-memory API server (langgraph-api, as ``langgraph dev`` runs it) as a real A2A
server (its venv: see ../field.py), serving graph.py; its A2A endpoint is per assistant,
``/a2a/<assistant id>``.

Usage: python server.py '{"model": MODEL_URL}'; prints the assistant's A2A URL once the server
answers, serves until killed.

It starts with no state: langgraph-runtime-inmem keeps its threads, runs and queue in
``.langgraph_api`` under the working directory (this folder) and takes them up at the next start,
so a run a test left waiting on the model (the field's ``be slow``, 60 s) held the next start's
worker and its first send found no answer within 60 s. (A temporary folder would leak: the server
is killed when it does not stop within 10 s, before any clean-up of its own.)
"""

import json
import os
import shutil
import socket
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.append(str(Path(__file__).parent.parent))
from field_script import spec  # noqa: E402

SPEC = spec()
os.environ["FIELD_MODEL_URL"] = SPEC["model"]
os.environ.setdefault("LANGGRAPH_CLI_NO_ANALYTICS", "1")
os.environ.setdefault("LANGSMITH_TRACING", "false")

from langgraph_api.cli import run_server  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def announce(base: str) -> None:
    """Print the A2A URL of the graph's assistant once the server lists it."""
    for _ in range(600):
        try:
            request = urllib.request.Request(
                base + "/assistants/search",
                data=json.dumps({"graph_id": "agent"}).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=5) as answer:
                found = json.load(answer)
            if found:
                print(f"{base}/a2a/{found[0]['assistant_id']}", flush=True)
                return
        except OSError:
            pass
        time.sleep(0.2)


shutil.rmtree(".langgraph_api", ignore_errors=True)
port = free_port()
threading.Thread(target=announce, args=(f"http://127.0.0.1:{port}",), daemon=True).start()
run_server(
    host="127.0.0.1",
    port=port,
    graphs={"agent": str(Path(__file__).with_name("graph.py")) + ":graph"},
    open_browser=False,
)
