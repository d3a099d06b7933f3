"""Whether a copy (OSC 52, which Textual writes to the terminal) can reach the clipboard from where
the app runs. Nothing tells an application that a terminal took it; some places are known not to
pass it on, and those are said."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping

__all__ = ["clipboard_doubt"]


def clipboard_doubt(env: Mapping[str, str]) -> str | None:
    """Why a copy may not have arrived, or None when nothing is known against it. Blocking (it may
    ask tmux, at most a second): call it from a thread."""
    if env.get("TMUX"):
        tmux = shutil.which("tmux")
        setting = None
        if tmux:
            try:
                asked = subprocess.run(
                    [tmux, "show-options", "-gv", "set-clipboard"],
                    capture_output=True,
                    text=True,
                    timeout=1.0,
                    env=dict(env),
                )
                setting = asked.stdout.strip() if asked.returncode == 0 else None
            except (OSError, subprocess.SubprocessError):
                setting = None
        if setting == "on":
            return None
        now = f" (it is {setting!r} now)" if setting else ""
        return (
            f"inside tmux, a copy reaches your terminal only with `set -g set-clipboard on`{now}, and "
            "only if the terminal takes OSC 52"
        )
    if env.get("STY"):
        return "inside GNU screen, a copy (OSC 52) does not reach your terminal"
    return None
