"""Who the doctor speaks for and how far it reads: the clients of every line, the bounds on what it
reads of a peer, the send method of each dialect, and where a check puts what it finds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...protocol.dialects import Dialect
from ..report import Finding

SDK_WAIT = 5.0
"""Seconds the official Python SDK clients (a2a-sdk 1.x and 0.3) wait for an answer when the caller
gives them no HTTP client of its own: httpx's default (the JS SDK sets none)."""
MAX_FRAMES = 200
"""The most stream frames the doctor reads of one answer."""
MAX_INTERFACES = 16
"""The most interfaces of one card the doctor probes (a card may list any number)."""
EVERY_CLIENT = ["a2a-sdk 1.x", "a2a-sdk 0.3", "JS SDK", "toolnexus"]
V03_CLIENTS = ["a2a-sdk 0.3", "a2a-sdk 1.x compat", "JS SDK compat"]
"""The clients that speak 0.3 where a card offers it (the 1.x lines when the card offers only 0.3)."""
SEND_NAMES = {"message/send": Dialect.V03, "SendMessage": Dialect.V10}
"""The send method of each dialect, asked of every JSON-RPC endpoint with nothing to send."""
SEND_METHOD = {dialect: method for method, dialect in SEND_NAMES.items()}
Add = Callable[[Finding], Any]
"""Where a check puts what it finds (the report's ``add``)."""
