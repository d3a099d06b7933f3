"""How the client folds a stream's frames into a task: appends are one text; the piece a task frame
already held is not added twice (the official SDK's subscribe can send it both ways: a reply was
seen with one piece doubled); a task yielded earlier keeps the text it had."""

from __future__ import annotations

from toolnexus.client.transports import _Fold


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
