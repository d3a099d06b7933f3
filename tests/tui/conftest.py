from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_cursor_blink(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """Deterministic screens: no blinking cursor, and no user config (peers) from the machine."""
    try:
        from textual.widgets import Input
    except ImportError:
        return
    monkeypatch.setattr(Input, "cursor_blink", False, raising=False)
    monkeypatch.setenv("TOOLNEXUS_CONFIG_DIR", str(tmp_path / "tn-config"))
