"""A finished task's GetTask answers, kept by the endpoint (``A2AEndpoint._get``: the rendered task,
and its JSON from its first JSON-RPC answer on): the same bytes as the first answer, one kept
answer per task however many polls of it run at once, on a store whose reads wait (PostgreSQL),
the JSON held in no more memory than its length, and all of them in no more than
``FINISHED_BYTES``, counted as much as they hold."""

from __future__ import annotations

import asyncio
import gc
import sys
import tracemalloc
from typing import Any

import httpx

import toolnexus as tn
from toolnexus import _json
from toolnexus.protocol.dialects import Dialect
from toolnexus.protocol.jsonrpc import result_envelope
from toolnexus.protocol.operations import OPERATIONS
from toolnexus.serve.a2a import FINISHED_BYTES

from ..conftest import EXAMPLE_SKILLS

POLLS = 8
"""GetTasks of one task sent at once."""


def _get(task_id: str, rid: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tasks/get", "params": {"id": task_id}}


def _answers_alive(ids: list[str]) -> int:
    """The rendered GetTask answers of these tasks alive in this process, whoever holds them."""
    gc.collect()
    return sum(
        1
        for o in gc.get_objects()
        if isinstance(o, dict) and dict.get(o, "id") in ids and dict.__contains__(o, "status")
    )


async def test_polls_at_once_of_a_finished_task_keep_one_answer_the_same_bytes(postgres):
    """Polls of a finished task this worker does not hold read it from the store (an await):
    each one that read it while the others did rendered it and kept its own answer, only the last
    in the cache, the others never let go (a caller polling at once grew the server without bound,
    a task each time). Polls at once are answered with one kept answer, and the kept JSON is the
    bytes the first answer wrote."""
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    a2a = tn.A2AConfig(name="demo", description="d", store=postgres)
    async with tk:
        async with tk.serve(client=tn.demo_client(), a2a=a2a) as first:
            async with tn.A2AClient(first.url) as client:
                ids = [(await client.send(f"hello {i}")).id for i in range(3)]
        # served again: the tasks are the store's, not this worker's (each poll reads them)
        async with tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
            answers: list[list[bytes]] = []
            async with httpx.AsyncClient(base_url=handle.url, timeout=30) as http:
                for task_id in ids:  # over JSON-RPC, in 0.3
                    bodies = await asyncio.gather(
                        *(http.post("/", json=_get(task_id, 'p-é"1')) for _ in range(POLLS))
                    )
                    again = await http.post("/", json=_get(task_id, 'p-é"1'))  # its JSON kept
                    answers.append([r.content for r in (*bodies, again)])
            shared = []
            for task_id in ids:  # in process, in 1.0 (another kept answer each)
                polls = await asyncio.gather(
                    *(
                        handle.a2a.dispatch(OPERATIONS["get"], {"id": task_id}, Dialect.V10)
                        for _ in range(POLLS)
                    )
                )
                shared.append(all(p is polls[0] for p in polls))
                del polls
            alive = _answers_alive(ids)  # the server still serving, its cache held
    for task_id, bodies in zip(ids, answers, strict=True):
        assert task_id.encode() in bodies[0] and b'"completed"' in bodies[0]
        assert set(bodies) == {bodies[0]}  # every answer the same bytes, the kept JSON's too
        result = _json.loads(bodies[0])["result"]  # as any other answer is written
        assert bodies[0] == _json.dumps(result_envelope('p-é"1', result))
    assert shared == [True] * len(ids), "polls at once answered with answers of their own"
    assert alive == 2 * len(ids), f"{alive - 2 * len(ids)} answers kept and never let go"


async def test_a_kept_answers_json_holds_no_more_memory_than_its_bytes():
    """The JSON a finished task's answer keeps was orjson's own bytes, allocated with the room it
    set aside while writing (a string's worst case escaped): a task carrying 0.9 MB kept 16.6 MB
    for its 2.7 MB of JSON, for each of the ``FINISHED_CACHE`` tasks kept. (The room is never
    written: resident once the allocator carves it from memory it had let go.) A task carrying
    0.3 MB here: one of 2.7 MB is answered and not kept (``FINISHED_BYTES``)."""
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    a2a = tn.A2AConfig(name="demo", description="d")
    async with tk, tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
        async with tn.A2AClient(handle.url) as client:
            task_id = (await client.send("hello " + "x" * 300_000)).id
        async with httpx.AsyncClient(base_url=handle.url, timeout=30) as http:
            tracemalloc.start(64)  # whole tracebacks: each allocation told apart by its caller
            try:
                for _ in range(2):  # the first keeps the answer and its JSON, the second reads them
                    assert len((await http.post("/", json=_get(task_id, 1))).content) > 900_000
                snapshot = tracemalloc.take_snapshot()
                (kept,) = handle.a2a._finished.answers.values()  # noqa: SLF001  # the cache
                encoded = kept.json
                made = tracemalloc.get_object_traceback(encoded)
            finally:
                tracemalloc.stop()
    assert encoded is not None and made is not None
    held = sum(t.size for t in snapshot.traces if t.traceback == made)
    assert held < len(encoded) + 4096, (held, len(encoded))


def _held(value: Any, keys: bool = False) -> int:
    """The bytes ``value`` and what it holds take (its dicts' keys only with ``keys``: a rendered
    task's are the renderer's literals)."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        for k, v in dict.items(value):  # pyright: ignore[reportUnknownVariableType]
            size += _held(v, keys) + (sys.getsizeof(k) if keys else 0)  # pyright: ignore[reportUnknownArgumentType]
    elif isinstance(value, list):
        size += sum(_held(v, keys) for v in value)  # pyright: ignore[reportUnknownArgumentType]
    return size


def test_held_counts_at_least_what_a_decoded_value_holds():
    """What a peer's message can carry, read back as a store reads it and written again (a
    string's UTF-8 is then kept beside it): ``_json.held`` never counts less than it holds, for
    values of many small parts (24x their JSON) as for long texts."""
    n = 5_000
    shapes: dict[str, Any] = {
        "empty dicts": [{} for _ in range(n)],
        "empty lists": [[] for _ in range(n)],
        "nested lists": [[[[]]] for _ in range(n)],
        "one-key dicts": [{f"k{i}": ""} for i in range(n)],
        "many keys": {f"k{i}": i for i in range(n)},
        "short strings": [str(i) for i in range(n)],
        "floats": [i + 0.5 for i in range(n)],
        "big numbers": [10**18 + i for i in range(n)],
        "ascii text": {"kind": "text", "text": "x" * 100_000},
        "latin-1 text": {"kind": "text", "text": "é" * 100_000},
        "text with an emoji": {"kind": "text", "text": "\U0001f600" + "x" * 100_000},
        "cjk text": ["語" * 1000 for _ in range(50)],
    }
    for name, shape in shapes.items():
        value = _json.loads(_json.dumps(shape))
        encoded = _json.dumps(value)  # the UTF-8 of each string made, and cached in it
        assert _json.held(encoded) >= _held(value, keys=True), name


def _kept_held() -> tuple[int, int]:
    """How many kept answers are alive in this process and the bytes they hold, their JSON's too."""
    gc.collect()
    kept = [o for o in gc.get_objects() if type(o).__name__ == "_Kept"]
    return len(kept), sum(_held(k) + sys.getsizeof(getattr(k, "json", None) or b"") for k in kept)


async def test_big_finished_tasks_polled_keep_answers_within_the_bytes_bound():
    """The kept answers were bounded by count only (``FINISHED_CACHE``, 1,024): a peer that made
    big tasks and polled them had the server hold each one's answer, rendered and as JSON (1.5 MB
    for a task carrying 0.25 MB), with a PostgreSQL or file store where the task itself is not held.
    Now they hold at most ``FINISHED_BYTES`` together, counted as much as they hold; a task too big
    to keep is answered all the same, the same bytes every time."""
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    a2a = tn.A2AConfig(name="demo", description="d")
    async with tk, tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
        async with tn.A2AClient(handle.url) as client:
            ids = [(await client.send(f"big {i} " + "x" * 250_000)).id for i in range(24)]
            ids += [(await client.send(f"bigger {i} " + "y" * 900_000)).id for i in range(2)]
        async with httpx.AsyncClient(base_url=handle.url, timeout=60) as http:
            for (
                task_id
            ) in ids:  # twice: the first keeps the answer and its JSON, the second reads it
                first, again = [(await http.post("/", json=_get(task_id, 7))).content for _ in "12"]
                assert first == again
                assert first == _json.dumps(result_envelope(7, _json.loads(first)["result"]))
                assert len(first) > 750_000
        kept, held = _kept_held()  # the server still serving, its cache held
        assert 0 < kept and held <= FINISHED_BYTES, f"{kept} kept answers hold {held:,} bytes"
        counted = handle.a2a._finished.held  # noqa: SLF001  # the cache under test
    assert held <= counted, f"the cache counts {counted:,} bytes of the {held:,} it holds"
