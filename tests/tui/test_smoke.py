"""The real toolnexus-tui in a real terminal (tmux): demo server up, a task sent with curl from
outside shows completed, and ctrl+q quits with the port closed."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid

import pytest

TMUX = shutil.which("tmux")
EXE = shutil.which("toolnexus-tui", path=os.path.dirname(sys.executable)) or shutil.which(
    "toolnexus-tui"
)
pytestmark = pytest.mark.skipif(
    not TMUX or not EXE or not shutil.which("curl"),
    reason="needs tmux, curl and an installed toolnexus-tui (.ci/run installs them)",
)


def screen(session: str) -> str:
    return subprocess.run(
        [TMUX, "capture-pane", "-p", "-t", session], capture_output=True, text=True
    ).stdout


def wait_for(session: str, pattern: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = screen(session)
        if re.search(pattern, text):
            return text
        time.sleep(0.2)
    raise AssertionError(f"{pattern!r} never appeared:\n{screen(session)}")


def test_tui_in_tmux_with_curl(tmp_path):
    session = f"tn-smoke-{uuid.uuid4().hex[:8]}"
    env_prefix = f"TOOLNEXUS_CONFIG_DIR={tmp_path}"  # no saved peers from the machine
    subprocess.run(
        [TMUX, "new-session", "-d", "-s", session, "-x", "120", "-y", "34", f"{env_prefix} {EXE}"],
        check=True,
    )
    try:
        subprocess.run(
            [TMUX, "resize-window", "-t", session, "-x", "120", "-y", "34"], capture_output=True
        )
        text = wait_for(session, r"demo-desk\s+http://127\.0\.0\.1:\d+")
        url = re.search(r"http://127\.0\.0\.1:\d+", text).group(0)
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "kind": "message",
                    "messageId": "smoke-1",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "greet the smoke test"}],
                }
            },
        }
        out = subprocess.run(
            [
                "curl",
                "-sS",
                "-X",
                "POST",
                url + "/",
                "-H",
                "content-type: application/json",
                "--data-binary",
                json.dumps(body),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert json.loads(out.stdout)["result"]["status"]["state"] == "completed"
        wait_for(session, r"memory\s+1\s+0\s+0\s+0")  # the server row counts it: ✔ 1
        subprocess.run([TMUX, "send-keys", "-t", session, "2"], check=True)
        wait_for(session, r"completed\s+\S+\s+demo-desk\s+greet")
        # the demo server is a peer on its own: chat with it from the TUI
        subprocess.run([TMUX, "send-keys", "-t", session, "3"], check=True)
        wait_for(session, r"demo-desk \(hosted\).*reachable")
        subprocess.run([TMUX, "send-keys", "-t", session, "Enter"], check=True)
        wait_for(session, r"Say something to the peer|context")
        subprocess.run([TMUX, "send-keys", "-t", session, "hello from tmux", "Enter"], check=True)
        wait_for(session, r"You said: hello from tmux")
        subprocess.run([TMUX, "send-keys", "-t", session, "Escape"], check=True)
        time.sleep(0.3)
        subprocess.run([TMUX, "send-keys", "-t", session, "C-q"], check=True)
        deadline = time.monotonic() + 15
        while (
            subprocess.run([TMUX, "has-session", "-t", session], capture_output=True).returncode
            == 0
        ):
            assert time.monotonic() < deadline, "the app did not quit"
            time.sleep(0.2)
        port = int(url.rsplit(":", 1)[1])
        with (
            socket.socket() as s
        ):  # a listener would refuse even with SO_REUSEADDR; TIME_WAIT would not
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))  # the server's port is closed
    finally:
        subprocess.run([TMUX, "kill-session", "-t", session], capture_output=True)


def test_a_copy_in_tmux_says_when_tmux_will_not_pass_it_and_arrives_when_it_does(tmp_path):
    """tmux's default (set-clipboard external) keeps an application's copy from the terminal: the
    app says so and how to fix it; with set-clipboard on, the copy arrives (in tmux's buffer)."""
    sock = (
        f"tn-copy-{uuid.uuid4().hex[:8]}"  # a tmux server of its own: its options are this test's
    )
    tmux = [TMUX, "-L", sock]
    subprocess.run(
        [
            *tmux,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "copy",
            "-x",
            "120",
            "-y",
            "40",
            f"TOOLNEXUS_CONFIG_DIR={tmp_path} {EXE}",
        ],
        check=True,
    )
    try:
        subprocess.run([*tmux, "set", "-g", "set-clipboard", "external"], check=True)

        def shown() -> str:
            return subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", "copy"], capture_output=True, text=True
            ).stdout

        def until(pattern: str, timeout: float = 20) -> str:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                flat = re.sub(r"\s+", " ", shown())
                if re.search(pattern, flat):
                    return flat
                time.sleep(0.2)
            raise AssertionError(f"{pattern!r} never appeared:\n{shown()}")

        text = until(r"demo-desk\s+http://127\.0\.0\.1:\d+")
        url = re.search(r"http://127\.0\.0\.1:\d+", text).group(0)
        subprocess.run([*tmux, "send-keys", "-t", "copy", "c"], check=True)
        until(r"copied the URL of demo-desk")
        until(r"set-clipboard")  # the doubt, with the fix
        assert (
            subprocess.run([*tmux, "show-buffer"], capture_output=True, text=True).stdout != url
        )  # not taken
        subprocess.run([*tmux, "set", "-g", "set-clipboard", "on"], check=True)
        subprocess.run([*tmux, "send-keys", "-t", "copy", "c"], check=True)
        deadline = time.monotonic() + 10
        while subprocess.run([*tmux, "show-buffer"], capture_output=True, text=True).stdout != url:
            assert time.monotonic() < deadline, "the copy never reached tmux's buffer"
            time.sleep(0.2)
        subprocess.run([*tmux, "send-keys", "-t", "copy", "C-q"], check=True)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
