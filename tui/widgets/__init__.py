"""Reusable widgets of toolnexus-tui."""

from .modebar import ModeBar

__all__ = ["ModeBar"]
