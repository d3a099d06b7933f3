"""One ``serve`` flag whole (``Flag``: its name, help, how argparse reads it, the config key it sets),
and the readers of the values that are more than a string (keys, URLs, auth schemes)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import toolnexus as tn

from ..serve.config import load_signing_key
from .output import UsageError
from .values import _env_secret


@dataclass(frozen=True)
class Flag:
    """One ``serve`` flag, whole: its name, its help, how argparse reads it, and the key of the
    config file it sets (``a2a.store``: the ``a2a`` block's; None: the command's own, no config
    has it). A flag given on the command line wins over its key in ``--config``."""

    name: str
    help: str
    key: str | None = None
    env: bool = False
    """Its value names an environment variable, which holds the secret (never the secret itself)."""
    to: Callable[[Any], Any] | None = None
    """The value as the config takes it (read, checked; a mistake is a ``UsageError``)."""
    extends: bool = False
    """Added to the config's list, not replacing it."""
    blank: bool = False
    """An empty value is a value (``--description ""``), not the flag left out."""
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """How argparse reads it (``type``, ``default``, ``metavar``, ``action``)."""

    @property
    def dest(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")

    def add(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(self.name, help=self.help, **self.options)

    def given(self, args: argparse.Namespace) -> bool:
        """Whether the command line set it (a default, None, an empty list, is not)."""
        value = getattr(args, self.dest)
        return value is not None and value != [] and (self.blank or value != "")

    def apply(self, args: argparse.Namespace, config: Any) -> None:
        """Set its key on ``config`` (the ``a2a`` block's object) from the command line."""
        if self.key is None or not self.given(args):
            return
        value = getattr(args, self.dest)
        value = self.to(value) if self.to is not None else value
        field_name = self.key.partition(".")[2]
        setattr(
            config, field_name, [*getattr(config, field_name), *value] if self.extends else value
        )


def _signing_key(path: str) -> Any:
    try:
        return load_signing_key(path)
    except tn.ConfigError as exc:
        raise UsageError(f"--sign-key: {exc}") from None


def _public_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--public-url must be an http:// or https:// URL, not {url!r}")
    return url


def _bearer(name: str) -> Any:
    return tn.Auth.bearer(_env_secret("--auth-token-env", name))


def _basic(name: str) -> Any:
    pair = _env_secret("--auth-basic-env", name)
    if ":" not in pair[1:]:
        raise UsageError(f"--auth-basic-env {name}: must hold user:password")
    return tn.Auth.basic(pair)


_FIELD = re.compile(r",(?=[A-Za-z_][A-Za-z0-9_.]*=)")
"""Where ``KEY=VALUE,KEY=VALUE`` splits: at a comma a key follows (a URL's own commas stay)."""


def _fields(flag: str, value: str) -> dict[str, Any]:
    """``KEY=VALUE,...`` as the config block it stands for: a dotted key nested
    (``flows.clientCredentials.tokenUrl=URL``), ``scopes`` and ``algorithms`` lists (split on
    spaces), ``true``/``false`` booleans."""
    block: dict[str, Any] = {}
    for item in _FIELD.split(value):
        key, eq, text = item.partition("=")
        if not eq or not key or not text:
            raise UsageError(f"{flag}: {item!r} is not KEY=VALUE")
        *path, last = key.split(".")
        at = block
        for step in path:
            at = at.setdefault(step, {})
            if not isinstance(at, dict):
                raise UsageError(f"{flag}: {key} sets a part of a value given whole")
        given: Any = {"true": True, "false": False}.get(text, text)
        at[last] = text.split() if not path and last in ("scopes", "algorithms") else given
    return block


def _scheme(name: str, flag: str) -> Callable[[str], Any]:
    """The ``to`` of an auth flag whose value is the ``a2a.auth.<name>`` block as ``KEY=VALUE,...``
    (read by ``Auth.from_config``, as a config file's)."""

    def auth(value: str) -> Any:
        try:
            return tn.Auth.from_config({name: _fields(flag, value)})
        except tn.ConfigError as exc:
            raise UsageError(f"{flag}: {exc}") from None

    return auth
