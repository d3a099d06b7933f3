"""A served agent's health as Prometheus metrics (``pip install 'toolnexus[metrics]'``), at
``/metrics`` on the agent's port behind the agent's own auth, or on a port of its own.

What is counted, each labelled with the served agent's name (``server``):

- ``toolnexus_requests_total{binding, operation, outcome}`` and the histogram
  ``toolnexus_request_seconds{binding, operation}``: every A2A operation dispatched, on every
  binding (``outcome``: ``ok`` or the A2A error's reason, such as ``TASK_NOT_FOUND``); a stream's
  time is until its first frame is ready;
- ``toolnexus_tasks_total{state, skill}``: every transition into a state, and the histogram
  ``toolnexus_task_seconds{state, skill}``: from creation to the final (or interrupted) state;
  ``skill`` is one of the agent's own skills, ``other`` for any other name the model passed to the
  ``skill`` tool (a caller's prompt steers it), empty while none is known;
- ``toolnexus_push_deliveries_total{outcome}``: push notifications delivered and failed;
- ``toolnexus_store_seconds{operation}`` (count and sum) and ``toolnexus_store_errors_total``:
  the task store's ``save``, ``get`` and ``list`` when it is a file or a database (the memory
  store's calls are not timed: see ``Metrics.time_store``);
- ``toolnexus_bus_subscribers_dropped_total``: readers of the event bus (a front end, a hook) cut
  off for falling too far behind;
- ``toolnexus_wire_cut_total``: with the inbound wire recorder on (a server the TUI or a notebook
  hosts), exchanges recorded cut short, a body past its 256 KiB cap.

Every label takes only values the agent declares, so no caller can grow the exposition: the binding,
the operation and the outcome come from the table of operations and the table of errors, the state
is one of the task states, the skill one of the agent's (see above).

Opt-in (``serve(metrics=True)``, ``toolnexus serve --metrics``: an extra to install and an endpoint
to expose, which a user asks for). Counted by callgrind in a served agent, request after request
(``bench/served_instructions.py``), they add 2.9 % to a blocking send's instructions, 2.0 % to a
GetTask's, 0.2 % to a card GET's (``bench/README.md``). Kept as light as found so far:
prometheus-client's own metric objects cost a served task about 33 µs of CPU (labels looked up, a
lock and a bucket search per observation, an async reader of the bus), 20 % of a blocking send; so
a request only adds to plain counters here (a dict entry, a bisect for a
histogram's bucket), task transitions are counted by a tap on the event bus as they are
published, and prometheus-client builds the exposition from those counts at scrape time (the push
notifier's, the bus's and the recorder's own counts read then too: one process runs no timer). Across
``toolnexus serve --workers N`` every worker writes its counts once a second to a file of its own
in the directory named by ``PROMETHEUS_MULTIPROC_DIR`` (the supervisor makes one), and any
worker's ``/metrics`` answers the sum of every worker's, the dead ones' included, as counters must.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import functools
import importlib.util
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .._fs import write_whole
from .._json import is_array
from ..errors import MissingExtra, RPCError
from ..events import EventBus, TaskEvent
from ..protocol.model import INTERRUPTED, TERMINAL
from ..protocol.operations import Binding, Operation
from ..stores import Durable

__all__ = ["Metrics", "available", "MULTIPROC_ENV", "CONTENT_TYPE", "OTHER"]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OTHER = "other"
"""The ``skill`` label of a task whose skill is not one of the agent's."""
SAMPLE_EVERY = 1.0
"""With workers, seconds between writes of a worker's counts into its file. (One process wakes for
nothing: it samples the push notifier's, the bus's and the recorder's counts when scraped.)"""
_STARTED_LIMIT = 100_000
"""Tasks whose start time is kept for their duration (the oldest are forgotten past it)."""
REQUEST_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
TASK_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)

# name -> (kind, help, label names after "server", buckets)
_SERIES: dict[str, tuple[str, str, tuple[str, ...], tuple[float, ...]]] = {
    "toolnexus_requests": (
        "counter",
        "A2A operations dispatched",
        ("binding", "operation", "outcome"),
        (),
    ),
    "toolnexus_request_seconds": (
        "histogram",
        "Time to answer an A2A operation",
        ("binding", "operation"),
        REQUEST_BUCKETS,
    ),
    "toolnexus_tasks": (
        "counter",
        "Task transitions, by the state entered",
        ("state", "skill"),
        (),
    ),
    "toolnexus_task_seconds": (
        "histogram",
        "Time from a task's creation to its final or interrupted state",
        ("state", "skill"),
        TASK_BUCKETS,
    ),
    "toolnexus_push_deliveries": ("counter", "Push notifications", ("outcome",), ()),
    "toolnexus_store_seconds": ("summary", "Task store calls", ("operation",), ()),
    "toolnexus_store_errors": ("counter", "Task store calls that failed", ("operation",), ()),
    "toolnexus_bus_subscribers_dropped": (
        "counter",
        "Event-bus readers cut off for falling behind",
        (),
        (),
    ),
    "toolnexus_wire_cut": (
        "counter",
        "Exchanges the wire recorder kept cut short (a body past its cap)",
        (),
        (),
    ),
}


def available() -> bool:
    """Whether prometheus-client is installed."""
    return importlib.util.find_spec("prometheus_client") is not None


class Metrics:
    """The counts of one served agent in this process (with workers: summed over their files)."""

    def __init__(self, server: str, skills: Iterable[str] = ()) -> None:
        if not available():
            raise MissingExtra("metrics need prometheus-client: pip install 'toolnexus[metrics]'")
        self.server = server
        self.skills = frozenset(skills)
        """The agent's own skills: the only values of the ``skill`` label but ``other``."""
        folder = os.environ.get(MULTIPROC_ENV)
        self.folder = Path(folder) if folder else None
        # series name -> label values -> a count, or [bucket counts..., sum, count] for a histogram
        self.values: dict[str, dict[tuple[Any, ...], Any]] = {name: {} for name in _SERIES}
        """Series name -> label values (strings, or the str enums Binding and TaskState) -> a count,
        or a histogram's ``[bucket counts..., +Inf count, sum, count]``."""
        self._failed = self.values[
            "toolnexus_requests"
        ]  # counted as they happen: the failures only
        self._tasks_entered = self.values["toolnexus_tasks"]
        self._request_time = _histogram(self.values["toolnexus_request_seconds"], REQUEST_BUCKETS)
        self._task_time = _histogram(self.values["toolnexus_task_seconds"], TASK_BUCKETS)
        self._store_time = _histogram(self.values["toolnexus_store_seconds"], ())
        self._started: dict[str, float] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._bus: EventBus | None = None
        self._sources: tuple[Any, Any] = (
            None,
            None,
        )  # the push notifier and the wire recorder sampled
        self._seen = {"delivered": 0, "failed": 0, "dropped": 0, "cut": 0}
        self._sampling = (
            threading.Lock()
        )  # a scrape samples from a thread; two scrapes at once count once

    # -- the request path: plain counts ------------------------------------------------------------
    def request(
        self, binding: Binding, op: Operation, error: BaseException | None, seconds: float
    ) -> None:
        """One dispatched operation (called by the endpoint, once per request)."""
        self._request_time((binding, op.key), seconds)
        if error is not None:  # the ok ones are the histogram's count less these (``_with_ok``)
            key = (binding, op.key, error.reason if isinstance(error, RPCError) else "INTERNAL")
            failed = self._failed
            failed[key] = failed.get(key, 0) + 1

    def _tap(self, events: Sequence[Any]) -> None:
        """Task transitions as the bus publishes them (a tap: called synchronously, never raises)."""
        server, counts, started, own = self.server, self._tasks_entered, self._started, self.skills
        for ev in events:
            if ev.__class__ is not TaskEvent or ev.server != server or ev.heard:
                continue
            state, skill = ev.state, ev.skill
            key = (state, "" if not skill else skill if skill in own else OTHER)
            counts[key] = counts.get(key, 0) + 1
            if ev.previous is None:
                if len(started) >= _STARTED_LIMIT:
                    started.pop(next(iter(started)))
                started[ev.task_id] = time.monotonic()
            elif state in _ENDS:
                began = (
                    started.pop(ev.task_id, None) if state in TERMINAL else started.get(ev.task_id)
                )
                if began is not None:
                    self._task_time(key, time.monotonic() - began)

    # -- the store ---------------------------------------------------------------------------------
    def time_store(self, store: Any) -> None:
        """Time ``store``'s ``save``, ``get`` and ``list`` (on this instance only), when it waits on
        a disk or a database (a ``Durable`` store). The memory store answers from a dict: a timed
        call costs more than the call (a coroutine and two clock reads on each of a task's three
        saves, 2-3 % of a blocking send, counted by callgrind in ``bench/README.md``), and says
        nothing worth a series; its calls are not timed."""
        if not isinstance(store, Durable):
            return
        for name in ("save", "get", "list"):
            setattr(store, name, self._timed(name, getattr(store, name)))

    def _timed(
        self, name: str, call: Callable[..., Awaitable[Any]]
    ) -> Callable[..., Awaitable[Any]]:
        key = (name,)
        errors = self.values["toolnexus_store_errors"]
        errors.setdefault(key, 0)
        observe, clock = self._store_time, time.perf_counter

        @functools.wraps(call)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = clock()
            try:
                return await call(*args, **kwargs)
            except Exception:
                errors[key] += 1
                raise
            finally:
                observe(key, clock() - started)

        return timed

    # -- off the path: the tap, the samples, the workers' files ------------------------------------
    def start(self, bus: EventBus, push: Any = None, wire: Any = None) -> None:
        """Count tasks on ``bus``; sample ``push`` (a ``PushNotifier``), the bus's drops and what
        ``wire`` (the inbound ``TrafficRecorder``, when there is one) cut short."""
        self._bus, self._sources = bus, (push, wire)
        bus.taps.append(self._tap)
        if (
            self.folder is not None
        ):  # the workers' files are written on a clock; one process needs none
            self._tasks = [asyncio.ensure_future(self._every_second())]

    async def stop(self) -> None:
        if self._bus is not None and self._tap in self._bus.taps:
            self._bus.taps.remove(self._tap)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        self._write()

    async def _every_second(self) -> None:
        while True:
            await asyncio.sleep(SAMPLE_EVERY)
            await asyncio.to_thread(self._write)

    def sample(self) -> None:
        """Turn what the push notifier, the bus and the wire recorder have counted since the last
        sample into counts here (at each scrape, and before each write of a worker's file)."""
        push, wire = self._sources
        with self._sampling:
            seen = self._seen
            now = {
                "delivered": getattr(push, "delivered", 0),
                "failed": getattr(push, "failed", 0),
                "dropped": self._bus.dropped_subscribers if self._bus is not None else 0,
                "cut": getattr(wire, "cut", 0),
            }
            for what, value in now.items():
                step = value - seen[what]
                if step > 0:
                    name, key = _SAMPLED[what]
                    counts = self.values[name]
                    counts[key] = counts.get(key, 0) + step
                seen[what] = value

    def _snapshot(self) -> dict[str, list[Any]]:
        return {
            name: [[[str(k) for k in key], value] for key, value in list(series.items())]
            for name, series in self.values.items()
        }

    def _write(self) -> None:
        """This worker's counts into its file (replaced whole: a reader never sees half of one)."""
        if self.folder is None:
            return
        self.sample()
        write_whole(
            self.folder / f"toolnexus-{self.server}-{os.getpid()}.json",
            json.dumps({"server": self.server, "values": self._snapshot()}),
        )

    # -- the scrape --------------------------------------------------------------------------------
    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format (with workers, every worker's summed)."""
        from prometheus_client import CollectorRegistry, generate_latest  # noqa: PLC0415  # optional extra: metrics

        registry = CollectorRegistry()
        registry.register(_Collector(self))
        return generate_latest(registry)

    def gathered(self) -> dict[str, dict[tuple[str, ...], Any]]:
        """The counts to expose: this process's, or with workers the sum of every worker's file."""
        if self.folder is None:  # copies: the scrape runs in a thread while the loop keeps counting
            self.sample()
            return _with_ok(
                {
                    name: {key: list(v) if is_array(v) else v for key, v in dict(series).items()}
                    for name, series in self.values.items()
                }
            )
        self._write()
        total: dict[str, dict[tuple[str, ...], Any]] = {name: {} for name in _SERIES}
        for path in self.folder.glob(f"toolnexus-{self.server}-*.json"):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):  # being replaced this instant: the next scrape has it
                continue
            for name, rows in data.get("values", {}).items():
                if name in total:
                    _add(total[name], rows)
        return _with_ok(total)


def _with_ok(
    values: dict[str, dict[tuple[Any, ...], Any]],
) -> dict[str, dict[tuple[Any, ...], Any]]:
    """``values`` with each operation's ``ok`` requests: the request path counts only a request's
    time (the histogram) and, when it failed, its reason; the rest of the count succeeded."""
    requests = values["toolnexus_requests"]
    failed: dict[tuple[Any, ...], Any] = {}
    for (binding, op, _), count in requests.items():
        failed[(binding, op)] = failed.get((binding, op), 0) + count
    for (binding, op), entry in values["toolnexus_request_seconds"].items():
        ok = entry[-1] - failed.get((binding, op), 0)
        if ok > 0:
            requests[(binding, op, "ok")] = ok
    return values


def _add(series: dict[tuple[str, ...], Any], rows: list[Any]) -> None:
    """One worker's rows (``[labels, count or histogram entry]``) added into ``series``."""
    for labels, value in rows:
        key = tuple(str(v) for v in labels)
        have = series.get(key)
        if isinstance(value, list):
            entry = [float(v) for v in value]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]  # JSON read back
            series[key] = (
                entry if have is None else [a + b for a, b in zip(have, entry, strict=False)]
            )
        else:
            series[key] = (have or 0) + value


_ENDS = TERMINAL | INTERRUPTED
_SAMPLED = {
    "dropped": ("toolnexus_bus_subscribers_dropped", ()),
    "cut": ("toolnexus_wire_cut", ()),
    "delivered": ("toolnexus_push_deliveries", ("delivered",)),
    "failed": ("toolnexus_push_deliveries", ("failed",)),
}
"""What ``Metrics.sample`` reads -> the series and labels it is counted in."""


def _histogram(
    series: dict[tuple[Any, ...], Any], buckets: tuple[float, ...]
) -> Callable[[tuple[Any, ...], float], None]:
    """``observe(labels, value)`` into ``series``: one bisect for the bucket, a sum and a count
    (no buckets: a summary's sum and count)."""
    size = len(buckets)

    def observe(key: tuple[Any, ...], value: float) -> None:
        entry = series.get(key)
        if entry is None:
            entry = series[key] = [0] * (size + 1) + [0.0, 0]
        entry[bisect.bisect_left(buckets, value) if size else 0] += 1
        entry[-2] += value
        entry[-1] += 1

    return observe


class _Collector:
    """The counts as prometheus-client's metric families, built when scraped."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (  # noqa: PLC0415  # optional extra: metrics
            CounterMetricFamily,
            HistogramMetricFamily,
            SummaryMetricFamily,
        )

        values = self.metrics.gathered()
        server = self.metrics.server
        for name, (kind, help_text, label_names, buckets) in _SERIES.items():
            labels = ["server", *label_names]
            series = values.get(name, {})
            if kind == "counter":
                family: Any = CounterMetricFamily(name, help_text, labels=labels)
                for key, value in series.items():
                    family.add_metric([server, *map(str, key)], value)
            elif kind == "summary":
                family = SummaryMetricFamily(name, help_text, labels=labels)
                for key, entry in series.items():
                    family.add_metric(
                        [server, *map(str, key)], count_value=entry[-1], sum_value=entry[-2]
                    )
            else:
                family = HistogramMetricFamily(name, help_text, labels=labels)
                for key, entry in series.items():
                    cumulative: list[tuple[str, float]] = []
                    running = 0
                    for bound, count in zip([*map(str, buckets), "+Inf"], entry[:-2], strict=False):
                        running += count
                        cumulative.append((bound, running))
                    family.add_metric([server, *map(str, key)], cumulative, sum_value=entry[-2])
            yield family
