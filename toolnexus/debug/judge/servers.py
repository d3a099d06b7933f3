"""The servers a client's fault breaks, as measured against them, and the framework clients whose
known faults the judge names."""

from __future__ import annotations

SDK_SERVER = "a2a-sdk 1.x server"


JS_SERVER = "JS SDK 1.x server"


OURS = "toolnexus server"


EVERY_SERVER = [SDK_SERVER, JS_SERVER, OURS]


STRANDS = "AWS Strands' A2AAgent (strands-agents 1.62)"
"""A framework client whose faults the judge names: it never sends a contextId or taskId."""


FASTA2A = "pydantic's fasta2a 2.1 client"
"""A framework client whose faults the judge names: 0.3's method names with 1.0's messages."""
