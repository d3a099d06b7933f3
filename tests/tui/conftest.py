from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_cursor_blink(monkeypatch: pytest.MonkeyPatch):
    """Deterministic screens: no blinking cursor (no user config either: tests/conftest.py)."""
    try:
        from textual.widgets import Input
    except ImportError:
        return
    monkeypatch.setattr(Input, "cursor_blink", False, raising=False)
