"""What the protocol costs in model tokens: a card's size (it goes into other agents' prompts) and
a stream's wrapping share (the tokens of its frames that are not the words they carry).

Counted with OpenAI's tiktoken (the ``tokens`` extra), encoding :data:`ENCODING`: the tokenizer of
the models most agents run on (GPT-4o and later), kept by OpenAI and published on PyPI as
prebuilt wheels, exact for those models and close (within some tenths) for the other families'
BPE tokenizers; every count names it (:func:`tokenizer`). tiktoken fetches the encoding's file once
and keeps it in its cache (``TIKTOKEN_CACHE_DIR``); where it cannot, the count says so in words.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from .. import _json
from ..errors import MissingExtra
from ..protocol.stream import event_of

__all__ = ["ENCODING", "Cost", "card_cost", "count", "stream_cost", "tokenizer"]

ENCODING = "o200k_base"
"""The tiktoken encoding counted in: GPT-4o's and its successors'."""


@dataclass(frozen=True)
class Tokenizer:
    """A loaded tokenizer and its name as every count says it (``tiktoken 0.14.0 o200k_base``)."""

    name: str
    encoding: Any

    def count(self, text: str) -> int:
        return len(self.encoding.encode(text, disallowed_special=()))


def tokenizer() -> Tokenizer:
    """The tokenizer (loaded once; a failure too, said again at each call).

    Raises:
        MissingExtra: tiktoken is not installed, or its encoding's file could not be had.
    """
    loaded = _load()
    if isinstance(loaded, str):
        raise MissingExtra(loaded)
    return loaded


@functools.cache
def _load() -> Tokenizer | str:
    try:
        import tiktoken  # noqa: PLC0415  # optional extra: tokens
    except ImportError:
        return "counting tokens needs tiktoken: pip install 'toolnexus[tokens]'"
    try:
        encoding = tiktoken.get_encoding(ENCODING)
    except Exception as exc:  # a network error, a hash mismatch: whatever tiktoken raised
        return (
            f"tiktoken could not load its {ENCODING} encoding ({type(exc).__name__}): it fetches "
            "it once; put the file in the folder TIKTOKEN_CACHE_DIR names"
        )
    return Tokenizer(f"tiktoken {metadata.version('tiktoken')} {ENCODING}", encoding)


def count(text: str) -> int:
    """``text``'s length in tokens (see :func:`tokenizer`, which raises)."""
    return tokenizer().count(text)


@dataclass(frozen=True)
class Cost:
    """Tokens counted: ``total``, of which ``words`` are what the peer said (text parts) and the
    rest the protocol's; ``by`` names the tokenizer."""

    total: int
    words: int
    by: str

    @property
    def protocol(self) -> int:
        return self.total - self.words

    def __str__(self) -> str:
        if self.words == 0:
            return f"{self.total:,} tokens ({self.by})"
        share = self.protocol / self.total if self.total else 0.0
        return (
            f"{self.total:,} tokens, {self.protocol:,} of them protocol ({share:.0%}) and "
            f"{self.words:,} the words carried ({self.by})"
        )


def card_cost(card: dict[str, Any]) -> Cost:
    """A card's size in tokens, as sent (compact JSON): what an agent that puts it in a prompt
    pays. Raises as :func:`tokenizer`."""
    t = tokenizer()
    return Cost(t.count(json.dumps(card, separators=(",", ":"), ensure_ascii=False)), 0, t.name)


def _words(result: dict[str, Any]) -> list[str]:
    """The text parts' texts one stream result carries (its artifacts, its status message, a
    message, a task's history)."""
    kind, body = event_of(result)
    holders: list[Any] = []
    if kind == "message":
        holders.append(body)
    elif kind == "artifact-update":
        holders.append(body.get("artifact"))
    else:
        status = body.get("status")
        holders.append(status.get("message") if _json.is_object(status) else None)
        holders += list(body.get("artifacts") or ()) + list(body.get("history") or ())
    out: list[str] = []
    for holder in holders:
        parts = holder.get("parts") if _json.is_object(holder) else None
        for p in parts if _json.is_array(parts) else ():
            if _json.is_object(p) and isinstance(p.get("text"), str):
                out.append(p["text"])
    return out


def stream_cost(frames: list[str]) -> Cost:
    """A stream's frames (each as sent: a JSON-RPC envelope or an HTTP+JSON result) in tokens,
    and how many of them are the words carried (each text part's text, wherever it is). Raises
    as :func:`tokenizer`."""
    t = tokenizer()
    total = words = 0
    for frame in frames:
        total += t.count(frame)
        data = _json.loads_or_none(frame)
        result = data.get("result") if _json.is_object(data) and "jsonrpc" in data else data
        if _json.is_object(result):
            words += sum(t.count(text) for text in _words(result))
    return Cost(total, min(words, total), t.name)
