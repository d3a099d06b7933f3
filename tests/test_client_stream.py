"""How the client folds a stream's frames into a task: appends are one text; the piece a task frame
already held is not added twice (the official SDK's subscribe can send it both ways: a reply was
seen with one piece doubled); a task yielded earlier keeps the text it had."""

from __future__ import annotations

from toolnexus.client.transport_base import _Fold
from toolnexus.protocol.dialects import parse_task


def task_frame(*pieces: str) -> dict:
    parts = [{"text": p} for p in pieces]
    return {
        "task": {
            "id": "t1",
            "contextId": "c1",
            "status": {"state": "TASK_STATE_WORKING"},
            "artifacts": [{"artifactId": "a1", "name": "reply", "parts": parts}] if parts else [],
        }
    }


def append(piece: str, append: bool = True, last: bool = False) -> dict:
    return {
        "artifactUpdate": {
            "taskId": "t1",
            "contextId": "c1",
            "artifact": {"artifactId": "a1", "parts": [{"text": piece}]},
            "append": append,
            "lastChunk": last,
        }
    }


def test_the_piece_a_task_frame_already_held_is_not_added_twice():
    fold = _Fold(None)
    fold.apply(task_frame("echo: chu", "nked repl"))  # the SDK applied the second piece already
    fold.apply(append("nked repl"))  # ... and sends its event too
    task = fold.apply(append("y please", last=True))
    assert task.artifacts[0].text == "echo: chunked reply please"


def test_only_the_first_append_after_a_task_frame_can_be_an_echo():
    fold = _Fold(None)
    fold.apply(task_frame("ha", "ha"))
    fold.apply(append("ha"))  # the echo
    task = fold.apply(append("ha"))  # a new piece that happens to say the same
    assert task.artifacts[0].text == "hahaha"


def test_a_reply_so_far_in_one_part_is_never_taken_for_an_echo():
    """Our server's task frame holds the text so far as one part; the next piece may say the same."""
    fold = _Fold(None)
    fold.apply(task_frame("Yes"))
    task = fold.apply(append("Yes"))
    assert task.artifacts[0].text == "YesYes"


def test_a_text_that_starts_over_replaces_and_earlier_tasks_keep_theirs():
    fold = _Fold(None)
    fold.apply(task_frame())
    first = fold.apply(append("Half ", append=False)).snapshot()
    fold.apply(append("a reply"))
    task = fold.apply(append("A whole reply.", append=False, last=True))
    assert task.artifacts[0].text == "A whole reply."
    assert first.artifacts[0].text == "Half "  # a task yielded before is not changed after


# Words said as status messages (issue 58 item 2): Strands by default and the Gemini CLI send each
# piece as a working status message, LangGraph the text so far in each.


def status(state: str, text: str | None = None, mid: str = "m") -> dict:
    body: dict = {"taskId": "t1", "contextId": "c1", "status": {"state": state}}
    if text is not None:
        body["status"]["message"] = {
            "messageId": mid,
            "role": "ROLE_AGENT",
            "parts": [{"text": text}],
        }
    return {"statusUpdate": body}


def test_words_as_status_messages_are_one_text_whether_pieces_or_the_text_so_far():
    for pieces in (["Hel", "lo th", "ere"], ["Hel", "Hello th", "Hello there"]):
        fold = _Fold(None)
        fold.apply(task_frame())
        seen = [
            fold.apply(status("TASK_STATE_WORKING", p, f"m{i}")).said for i, p in enumerate(pieces)
        ]
        assert seen == ["Hel", "Hello th", "Hello there"], pieces
        task = fold.apply(status("TASK_STATE_WORKING"))  # a bare update keeps the words
        assert task.said == "Hello there"


def test_words_said_before_a_question_with_no_message_are_the_turns_reply():
    """The Gemini CLI's turn: pieces as working status messages, then input-required with no
    message and no artifact; the words stay in the history, so the reply is what they said."""
    fold = _Fold(None)
    fold.apply(task_frame())
    for i, piece in enumerate(["The answer ", "is 42."]):
        fold.apply(status("TASK_STATE_WORKING", piece, f"m{i}"))
    task = fold.apply(status("TASK_STATE_INPUT_REQUIRED"))
    assert task.status.message is None and not task.artifacts
    assert task.reply == "The answer is 42." and [m.role for m in task.history] == ["agent"]


def test_words_then_the_whole_artifact_are_not_doubled():
    """Strands' default and LangGraph: the words as status messages, then the whole text as an
    artifact: what was said is the artifact's text, once."""
    fold = _Fold(None)
    fold.apply(task_frame())
    fold.apply(status("TASK_STATE_WORKING", "Hello ", "m0"))
    fold.apply(status("TASK_STATE_WORKING", "there", "m1"))
    task = fold.apply(append("Hello there", append=False, last=True))
    assert task.said == "Hello there"
    task = fold.apply(status("TASK_STATE_COMPLETED"))
    assert task.reply == "Hello there"


def test_a_reply_kept_as_status_messages_in_the_history_is_one_text():
    """A task read whole (a blocking send, a get) from a peer whose words came as status
    messages: its task manager kept each in the history (the Gemini CLI's blocking answer, as
    seen: five agent messages, one a piece); as the text so far each (LangGraph's), the last."""

    def task(*said: str) -> dict:
        history = [{"messageId": "u", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}]
        history += [
            {"messageId": f"a{i}", "role": "agent", "parts": [{"kind": "text", "text": t}]}
            for i, t in enumerate(said)
        ]
        return {
            "id": "t",
            "contextId": "c",
            "status": {"state": "input-required"},
            "history": history,
        }

    assert (
        parse_task(task("echo: ", "hello ", "again ", "(turn ", "2)")).reply
        == "echo: hello again (turn 2)"
    )
    assert (
        parse_task(task("echo: ", "echo: hello", "echo: hello again")).reply == "echo: hello again"
    )
    assert parse_task(task("Which colour?")).reply == "Which colour?"
