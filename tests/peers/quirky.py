"""Peers from the field for the tests: our own server answering as one of the quirks of
:mod:`toolnexus.serve.quirks` (the legacy port, the hybrid, a slow peer, ...) does, run on a
scripted model, so that the shapes a quirk serves have one home (the library's) for the tests and
for the users who test their clients against ``toolnexus serve --quirks``.

The model is the client doctor's (:func:`toolnexus.debug.client_doctor.scripted_model`): "question"
asks "Which colour?" (the task goes input-required) and the answer on the same task completes it
with ``answered: <answer>``; "auth" asks for authorization, "reject" refuses; "fail" fails the
task ("model error: asked to fail"); "slow" works 30 s; anything else answers ``echo: <text>``,
streamed in pieces.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import toolnexus as tn
from toolnexus.debug.client_doctor import scripted_model


class QuirkyPeer:
    """A running quirk peer: its ``url``, the JSON-RPC ``methods`` and ``headers`` its callers
    sent (in order, as they sent them), and its server's ``handle``."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.url: str = handle.url

    @property
    def methods(self) -> list[str]:
        return [a.method for a in self.handle.quirks.asked]

    @property
    def headers(self) -> list[dict[str, str]]:
        return [a.headers for a in self.handle.quirks.asked]

    async def tasks(self) -> list[Any]:
        return await self.handle.tasks()


@contextlib.asynccontextmanager
async def quirky(
    *quirks: str, name: str, skill: str, description: str
) -> AsyncIterator[QuirkyPeer]:
    """Our server as the peer ``quirks`` name (on the script model), on 127.0.0.1; its card is
    called ``name`` and offers one skill, ``skill``."""
    tk = await tn.create_toolkit(
        builtins=False, skills=[tn.SkillDef(skill, description, tags=[skill])]
    )
    model = scripted_model()
    config = tn.A2AConfig(name=name, description=description, quirks=quirks)
    async with tk, tk.serve(client=model, a2a=config) as handle:
        yield QuirkyPeer(handle)
