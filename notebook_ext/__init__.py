"""The toolnexus Jupyter extension: ``%load_ext notebook_ext`` (or ``%load_ext toolnexus``).

Registers the ``%toolnexus`` line magic and the ``%%toolnexus`` cell magic. The widgets are
usable from Python without magics: ``ServerWidget``, ``RemoteTaskWidget``, ``CardWidget``,
``ChatWidget``.
"""

from __future__ import annotations

from typing import Any

from .magics import ToolnexusMagics
from .session import NotebookSession

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ip: Any) -> None:
    ip.register_magics(ToolnexusMagics(ip))


def unload_ipython_extension(ip: Any) -> None:
    NotebookSession.shutdown()
