"""Showing what peers send, safely: HTML for notebooks, and printable text for terminals.

The pieces that every HTML view is made of (escaping, a state's badge, an error line, the theme's
colours, a DataFrame); each type renders itself from them in its own module (``Task`` and
``AgentCard`` in ``protocol``, ``RunResult`` in ``llm``), so nothing here knows a type above it.
Every piece of user text goes through ``html.escape``. Nothing here imports IPython.
:func:`printable` makes any text safe for a terminal (the CLI and the TUI): control characters,
ANSI escapes and bidi overrides become visible symbols, never instructions to the terminal.
"""

from __future__ import annotations

import html
from typing import Any

from .errors import MissingExtra

__all__ = [
    "STATE_COLORS",
    "OK",
    "WARN",
    "ERR",
    "MUTED",
    "to_dataframe",
    "printable",
    "plural",
    "badge",
    "e",
    "error_html",
]

# C0 controls (but newline and tab) become their Control Pictures (ESC shows as ␛), DEL as ␡, and C1
# controls and bidi overrides as U+FFFD: one character for one, so styled spans keep their places.
_UNPRINTABLE = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)}
_UNPRINTABLE.update(
    {
        0x7F: 0x2421,
        **{c: 0xFFFD for c in range(0x80, 0xA0)},
        **{c: 0xFFFD for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))},
    }
)


def printable(value: Any, limit: int | None = None) -> str:
    """``value`` as text a terminal shows as it is: control characters (ANSI escapes included) and
    bidi overrides replaced one for one by visible symbols; past ``limit`` characters cut, saying
    how many more there were."""
    text = str(value).translate(_UNPRINTABLE)
    if limit is not None and len(text) > limit:
        return text[:limit] + f"… [{len(text) - limit:,} more characters]"
    return text


# JupyterLab's theme variables (light and dark themes each set them), with a fallback for other hosts
OK, WARN, ERR, MUTED = (
    "var(--jp-success-color1, #2a2)",
    "var(--jp-warn-color1, #c90)",
    "var(--jp-error-color1, #d33)",
    "var(--jp-ui-font-color2, #777)",
)
STATE_COLORS = {
    "submitted": MUTED,
    "working": WARN,
    "input-required": "var(--jp-brand-color1, #a3c)",
    "auth-required": "var(--jp-brand-color1, #a3c)",
    "completed": OK,
    "failed": ERR,
    "canceled": MUTED,
    "rejected": ERR,
    "unknown": MUTED,
}
_SYMBOL = {
    "submitted": "·",
    "working": "⟳",
    "input-required": "?",
    "auth-required": "?",
    "completed": "✔",
    "failed": "✘",
    "canceled": "⊘",
    "rejected": "✘",
    "unknown": "·",
}


def e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def plural(n: int, noun: str) -> str:
    """``1 message``, ``2 messages``, ``1 tool call``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def error_html(text: str) -> str:
    """A one-line failure, in the theme's error colour."""
    return f"<span class='toolnexus-error' style='color:{ERR}'>✘ {e(text)}</span>"


def badge(state: str) -> str:
    color = STATE_COLORS.get(state, MUTED)
    return (
        f'<span style="color:{color};font-weight:bold" data-state="{e(state)}">'
        f"{_SYMBOL.get(state, '·')} {e(state)}</span>"
    )


def to_dataframe(rows: list[dict[str, Any]]) -> Any:
    """A pandas DataFrame of ``rows`` (pandas is optional: a clear error when it is missing)."""
    try:
        import pandas as pd  # noqa: PLC0415  # optional extra: pandas (notebook)
    except ImportError:
        raise MissingExtra(
            "to_dataframe() needs pandas: pip install 'toolnexus[notebook]' (or pandas)"
        ) from None
    return pd.DataFrame(rows)
