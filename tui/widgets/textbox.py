"""A text box of a mode screen: it types what is typed, except the keys that switch modes."""

from __future__ import annotations

from textual.widgets import Input, TextArea

__all__ = ["TextBox", "TextPad", "MODE_KEYS"]

MODE_KEYS = frozenset(
    {
        "inverted_exclamation_mark",
        "trade_mark_sign",
        "pound_sign",
        "cent_sign",
        "infinity",
        "section_sign",
    }
)
"""alt+1 to alt+6 as Textual reads them from a terminal or the browser: ESC then a digit arrives as
the character a Mac's Option+digit types (¡ ™ £ ¢ ∞ §); the app binds them to the modes."""


class TextBox(Input):
    """An Input that lets the mode keys (alt+1-6, escape then 1-6) reach the app: an Input takes
    every printable key first, and ¡™£¢∞§ are printable. Those six characters are pasted, not typed."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return key not in MODE_KEYS and super().check_consume_key(key, character)


class TextPad(TextArea):
    """A TextArea that lets the mode keys reach the app, as :class:`TextBox` does."""

    def check_consume_key(self, key: str, character: str | None = None) -> bool:
        return key not in MODE_KEYS and super().check_consume_key(key, character)
