"""What a cassette is made of: its format's version, the longest line read, what a stable id looks
like, and the error a file that is no cassette raises."""

from __future__ import annotations

import re

from ...errors import ToolnexusError

FORMAT = 1
"""The cassette format this version writes and reads."""

MAX_LINE = 64 * 1024 * 1024
"""The longest line read from a cassette, in bytes (a recorded body is at most 256 KiB)."""


STABLE_ID = re.compile(r"^(?:task|context|message|artifact|rpc|id)-\d+$")
"""What a stable id written in a cassette looks like."""


class CassetteError(ToolnexusError, ValueError):
    """A file that is not a cassette, or a line of one that cannot be read."""
