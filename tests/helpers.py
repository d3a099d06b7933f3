"""Helpers shared by the tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
"""Debian's Chromium, which every browser test drives through playwright (never `playwright
install`)."""


def write_skill(
    folder: Path,
    name: str | None,
    body: str = "Do it.",
    description: str | None = None,
    extra: str = "",
) -> Path:
    """Write folder/SKILL.md with front matter; returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {description}")
    if extra:
        lines.append(extra)
    lines.append("---")
    path = folder / "SKILL.md"
    path.write_text("\n".join(lines) + "\n\n" + body + "\n", encoding="utf-8")
    return path


def assert_legal(events) -> dict:
    """Every recorded move is in the legal table and no task leaves a terminal state; returns the
    states of each task in order."""
    from collections import defaultdict

    from toolnexus.events import TaskEvent
    from toolnexus.protocol.model import LEGAL

    by_task: dict = defaultdict(list)
    for e in events:
        if not isinstance(e, TaskEvent):
            continue
        prev = by_task[e.task_id][-1] if by_task[e.task_id] else None
        assert e.previous == prev, (e.task_id, e.previous, prev)
        assert e.state in LEGAL.get(prev, frozenset()), (e.task_id, prev, e.state)
        by_task[e.task_id].append(e.state)
    return by_task


def stop_process(proc: subprocess.Popen, *, wait: float = 15.0, terminate: bool = True) -> None:
    """End a helper process (``terminate``, else it is expected to end on its own once its stdin
    closes), kill it if it will not, and close its pipes."""
    if terminate:
        proc.terminate()
    elif proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for pipe in (proc.stdout, proc.stderr, proc.stdin):
        if pipe is not None and not pipe.closed:
            pipe.close()


def launch_chromium(playwright):
    """Headless ``CHROMIUM`` as every browser test here runs it (no sandbox, GPU, sync or
    background traffic)."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        args=[
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    )
