"""The peer's tasks listed and read: ``ListTasks`` (``nextPageToken`` always there, artifacts left out
unless asked), its filters and pages, and ``historyLength`` on a task the doctor made."""

from __future__ import annotations

from typing import Any

from ... import _json
from .probe import OURS, SDK_1X, Probe, state_of, task_of


async def list_tasks(probe: Probe) -> None:
    """``ListTasks`` (1.0): ``nextPageToken`` in every answer, artifacts left out unless asked."""
    if not probe.v10:
        return
    before = probe.mark()
    page = await probe.call("ListTasks", None, {"pageSize": 1})
    if page is None or page.got is None:
        return
    if page.got == -32601:
        probe.found(
            "warning",
            "ListTasks",
            "a 1.0 interface that does not know ListTasks",
            before,
            ["clients that list tasks (a2a-sdk 1.x list_tasks, toolnexus list_tasks)"],
            "serve ListTasks (A2A 1.0 §3.1.4)",
        )
        return
    if page.got != "result" or not _json.is_object(page.data):
        probe.found(
            "warning",
            "ListTasks",
            f"ListTasks {{pageSize: 1}} got {page.got}",
            before,
            [SDK_1X, OURS],
            "answer ListTasks with {tasks, nextPageToken, pageSize, totalSize}",
        )
        return
    missing = [k for k in ("tasks", "nextPageToken") if k not in page.data]
    if missing:
        probe.found(
            "warning",
            "ListTasks",
            f"its answer lacks {', '.join(missing)} (nextPageToken is there on every page, "
            "empty on the last)",
            before,
            [SDK_1X],
            "always answer tasks and nextPageToken",
        )
    else:
        probe.found("ok", "ListTasks", "answers with tasks and nextPageToken")
    tasks = page.data.get("tasks")
    if _json.is_array(tasks) and any(_json.is_object(t) and "artifacts" in t for t in tasks):
        probe.found(
            "warning",
            "ListTasks",
            "tasks are listed with their artifacts though includeArtifacts was not asked",
            before,
            ["clients listing many tasks (every answer carries every reply)"],
            "leave artifacts out unless includeArtifacts is true",
        )


async def history(probe: Probe, task: dict[str, Any]) -> None:
    before = probe.mark()
    counts: dict[int, int | None] = {}
    for length in (0, 1):
        got = task_of(
            await probe.call("GetTask", "tasks/get", {"id": task["id"], "historyLength": length})
        )
        history = got.get("history") if got is not None else None
        counts[length] = len(history) if _json.is_array(history) else (0 if got else None)
    if not probe.v10:  # 0.3 reads 0 as no limit (the a2a-sdk 0.3 server answers it all)
        if counts[1] is not None and counts[1] <= 1:
            probe.found(
                "ok", "historyLength", "1 answers at most one message (0.3 reads 0 as no limit)"
            )
        else:
            probe.found(
                "warning",
                "historyLength",
                f"historyLength 1 answered {counts[1]} message(s)",
                before,
                ["clients that ask for a short history (a2a-sdk 0.3 get_task, toolnexus get)"],
                "answer at most historyLength messages of the history",
            )
    elif counts[0] == 0 and counts[1] is not None and counts[1] <= 1:
        probe.found("ok", "historyLength", "0 answers no history, 1 at most one message")
    else:
        probe.found(
            "warning",
            "historyLength",
            f"historyLength 0 answered {counts[0]} message(s), 1 answered {counts[1]}",
            before,
            ["clients that ask for a short history (a2a-sdk 1.x get_task, toolnexus get)"],
            "answer at most historyLength messages of the history (0: none)",
        )


async def list_filters(probe: Probe, task: dict[str, Any]) -> None:
    """``ListTasks``' contextId and status filters, and a page of one with the token to the next."""
    if not probe.v10:
        return
    before = probe.mark()
    second = task_of(await probe.send("hello again from toolnexus doctor (features)"))
    context = task.get("contextId")
    by_context = await probe.call("ListTasks", None, {"contextId": context})
    listed = (
        by_context.data.get("tasks") if by_context and _json.is_object(by_context.data) else None
    )
    contexts = (
        {t.get("contextId") for t in listed if _json.is_object(t)}
        if _json.is_array(listed)
        else None
    )
    state = state_of(task)
    wanted = "TASK_STATE_" + state.value.upper().replace("-", "_") if state else ""
    by_state = await probe.call("ListTasks", None, {"status": wanted, "pageSize": 100})
    stated = by_state.data.get("tasks") if by_state and _json.is_object(by_state.data) else None
    states = {state_of(t) for t in stated if _json.is_object(t)} if _json.is_array(stated) else None
    first = await probe.call("ListTasks", None, {"pageSize": 1})
    token = first.data.get("nextPageToken") if first and _json.is_object(first.data) else None
    paged = None
    if isinstance(token, str) and token:
        paged = await probe.call("ListTasks", None, {"pageSize": 1, "pageToken": token})
    faults = []
    if contexts != {context}:
        faults.append(f"contextId filter answered contexts {sorted(map(str, contexts or []))}")
    if states is None or (states and states != {state}):
        faults.append(f"status {wanted} answered {sorted(str(s) for s in states or [])}")
    if second is not None and not token:
        faults.append("a page of one of two or more tasks has no nextPageToken")
    if paged is not None and paged.got != "result":
        faults.append(f"the next page's token was refused ({paged.got})")
    if faults:
        probe.found(
            "warning",
            "ListTasks",
            "; ".join(faults),
            before,
            [SDK_1X, OURS],
            "filter by contextId and status, and page with nextPageToken (A2A 1.0 §3.1.4)",
        )
    else:
        probe.found(
            "ok", "ListTasks", "filters by contextId and status, and pages by nextPageToken"
        )
