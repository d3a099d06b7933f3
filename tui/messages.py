"""Messages between the app's bus pump and the screens."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class TasksChanged(Message):
    """Tasks whose rows need redrawing (collected over a short window, so bursts cost one redraw)."""

    task_ids: frozenset[str]


@dataclass
class ServersChanged(Message):
    """A hosted server started, stopped or failed, or its counts moved."""


@dataclass
class CallsChanged(Message):
    """New inbound MCP calls arrived."""
