"""Our client against the field's frameworks as servers (issue 58 item 2), each played by our
server under its quirk (``toolnexus serve --quirks``, the frameworks' shapes from their sources):
the words show as they come in whatever unfinished state and whichever way they are sent
(artifact appends, status-message pieces, status messages holding the text so far), never
doubled, and a turn whose only words came as status messages has them as its reply. The CLI's
``send --stream`` runs as a real process; the library's stream and the chat's conversation run
on the same peers; our own server's stream still reads as before."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

import toolnexus as tn
from toolnexus.client.conversation import Conversation

from .helpers import cli

WORDS = ("Hello ", "there ", "my ", "friend.")
WHOLE = "".join(WORDS)
FIELD = ["", "strands", "strands-compliant", "langgraph", "gemini-cli"]
"""Our server as it is, and the field's servers that stream words."""


@contextlib.asynccontextmanager
async def peer(quirk: str) -> AsyncIterator[tuple[str, asyncio.Event]]:
    """The peer ``quirk`` names, on a model that says the first word, then waits until the test
    has seen it shown (``shown``) before it says the rest: a client that holds the words back
    until the end never shows the first, and the task fails."""
    shown = asyncio.Event()

    async def model(request: dict[str, object]) -> AsyncIterator[str]:
        yield WORDS[0]
        await asyncio.wait_for(shown.wait(), 60)
        for word in WORDS[1:]:
            yield word

    tk = await tn.create_toolkit(builtins=False, skills=[tn.SkillDef("talk", "talks", tags=["t"])])
    config = tn.A2AConfig(name="field", description="talks", quirks=[quirk] if quirk else [])
    async with tk, tk.serve(client=tn.create_in_process_client(model), a2a=config) as handle:
        yield handle.url, shown


@pytest.mark.parametrize("quirk", FIELD)
async def test_send_stream_shows_the_words_as_they_come_from_each_server(quirk):
    """``toolnexus send --stream``: the first word is on the screen while the peer still holds
    the rest (whatever the task's state: Strands' compliant stream is submitted throughout, the
    others say the words as status messages), and the whole reply once, nothing doubled; the
    Gemini CLI's turn ends asking, its words the reply and how to answer on the task."""
    async with peer(quirk) as (url, shown):
        proc = await asyncio.create_subprocess_exec(
            *cli("send", url, "hi", "--stream"),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        got = b""
        while chunk := await asyncio.wait_for(proc.stdout.read(1024), 90):
            got += chunk
            if WORDS[0].encode() in got:
                shown.set()
        err = (await proc.stderr.read()).decode()
        code = await proc.wait()
    out = got.decode()
    assert shown.is_set(), (quirk, out, err)
    if quirk == "gemini-cli":
        said, hint = out.split("\n", 1)
        assert said == WHOLE and hint.startswith(
            f"(answer with: toolnexus send {url} ANSWER --task "
        )
        assert code == 0, err
    else:
        assert (code, out) == (0, WHOLE + "\n"), (quirk, err)


@pytest.mark.parametrize("quirk", FIELD)
async def test_the_library_and_the_chat_read_each_servers_words(quirk):
    """``A2AClient.stream``: the words grow frame by frame and the last task's reply is the whole
    text; the chat's ``Conversation`` (send, then follow) shows the words while the task is
    unfinished and ends with the reply, asked (Gemini CLI) or completed."""
    async with peer(quirk) as (url, shown), tn.A2AClient(url) as client:
        said: list[str] = []
        async for task in client.stream("hi"):
            if task.said and task.said not in said:
                said.append(task.said)
            if task.said.startswith(WORDS[0]):
                shown.set()
    assert said[0] == WORDS[0] and said[-1] == WHOLE, said
    assert all(b.startswith(a) for a, b in zip(said, said[1:], strict=False)), said
    assert task.reply == WHOLE
    async with peer(quirk) as (url, shown), tn.A2AClient(url) as client:
        chat = Conversation(peer=url)
        turn = chat.say("hi")
        texts: list[str] = []

        def seen(t: object) -> None:
            texts.append(turn.text)
            if turn.text.startswith(WORDS[0]):
                shown.set()

        await chat.run(client, turn, on_change=seen, poll_every=0.05)
    assert WORDS[0] in texts[:-1] or any(t.startswith(WORDS[0]) and t != WHOLE for t in texts), (
        texts
    )
    assert turn.text == WHOLE, (quirk, texts)
    asked = quirk == "gemini-cli"
    assert (chat.waiting_task == turn.task_id) is asked
