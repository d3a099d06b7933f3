"""a2a-handler's CLI (``handler message send``) as a real A2A client (its venv: see ../field.py).

Usage: python client.py '{"url": URL, "texts": [TEXT, ...], "stream": false}'
Runs the CLI once per TEXT, the second on with ``--continue`` (its saved session: the context, and
the task when it asked), its state in a home of its own; prints one JSON line: ``shown`` (what
each run printed, as a user reads it) and ``codes`` (exit codes).
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.append(str(Path(__file__).parent.parent))
from field_script import report, spec  # noqa: E402

SPEC = spec()
HANDLER = str(Path(sys.executable).with_name("handler"))


async def run() -> dict:
    shown, codes = [], []
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home}
        for i, text in enumerate(SPEC["texts"]):
            cmd = [HANDLER, "message", "send", "--url", SPEC["url"], "-t", text]
            cmd += ["--continue"] if i else []
            cmd += ["--stream"] if SPEC.get("stream") else []
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env)
            codes.append(done.returncode)
            shown.append((done.stdout + done.stderr).strip())
    return {"shown": shown, "codes": codes}


report(run)
