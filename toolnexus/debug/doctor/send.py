"""The active checks (``send=True``): a message sent as toolnexus sends it and as each official
client would, how long a blocking send took, then the cancel, the input-required round trip and
the stream."""

from __future__ import annotations

from ...client.peer import A2AClient
from ...errors import PeerError, RPCError
from ...protocol.dialects import Dialect
from ...protocol.operations import Binding
from ...traffic import TrafficRecorder
from ..features import Finder, Probe, evidence
from ..report import Finding
from .lines import SDK_WAIT, SEND_METHOD, Add
from .routes import interface_client, routes_of
from .seen import Seen
from .shapes import judge_shapes
from .streaming import judge_stream, read_stream, stream_as
from .tasks import blocked, check_cancel, round_trip, words_where


async def active_checks(probe: Probe, seen: Seen) -> None:
    """A message sent as toolnexus would send it, one in each other dialect an official client
    would speak to this card, and a stream when the card offers one."""
    card, http, headers, timeout = probe.card, probe.http, probe.headers, probe.timeout
    traffic, add = probe.traffic, probe.add
    find = Finder(traffic, add)
    client = A2AClient(card, headers=headers, timeout=timeout, http=http)
    client.traffic = traffic
    before = find.mark()
    try:
        task = await client.send("hello from toolnexus doctor", blocking=True)
        blocked(client, task, traffic, add, seen)
        words_where(task, traffic, seen)
        seen.ours, seen.ours_over = (
            "",
            f"{client.dialect.value if client.dialect else '?'} over {client.binding} "
            f"at {client.endpoint}",
        )
        find.found(
            "ok",
            "send",
            f"a message made task {task.id} ({task.state.value}) over "
            f"{client.binding} {client.dialect.value if client.dialect else '?'}",
        )
        if client.dialect is Dialect.LEGACY:  # it fell back: the 0.3 send was answered -32601
            seen.sent[(client.endpoint, Dialect.V03)] = (
                "it answered message/send with -32601 (method not found)"
            )
        if client.dialect is not None:
            seen.sent[(client.endpoint, client.dialect)] = ""
        if (
            client.binding is Binding.JSONRPC
            and client.dialect is not None
            and client.dialect is not Dialect.LEGACY
        ):
            seen.shapes[(client.endpoint, client.dialect)] = judge_shapes(
                list(traffic.events)[-1], client.dialect, add
            )
        await _as_others_send(probe, seen)
        _slow(traffic, before, add, seen)
        await check_cancel(client, task, traffic, add, seen)
        await round_trip(client, card, traffic, add, seen)
        if card.streaming:
            before = find.mark()
            frames = await read_stream(client, find, timeout, before)
            await judge_stream(client, find, seen, frames, before)
    except (RPCError, PeerError) as exc:
        if seen.ours is None:
            seen.ours = str(exc)
        if client.dialect is not None and client.endpoint:
            seen.sent.setdefault((client.endpoint, client.dialect), str(exc))
        find.found(
            "error",
            "send",
            f"a plain text message failed: {exc}",
            before,
            ["toolnexus"],
            "accept a text message as every client sends it",
        )
    finally:
        await client.release()


async def _as_others_send(probe: Probe, seen: Seen) -> None:
    """One blocking send in each JSON-RPC dialect and endpoint an official client picks from this
    card and toolnexus did not use, so that each verdict rests on an answer that client would read;
    and one in 0.3 wherever an endpoint knows ``message/send`` though no client picks it there, so
    that a hybrid (0.3's method names, 1.0's shapes) is named as such."""
    card, traffic, add = probe.card, probe.traffic, probe.add
    wanted = [
        (route[1], route[2])
        for route in routes_of(card).values()
        if not isinstance(route, str) and route[0] is Binding.JSONRPC
    ]
    wanted += [
        (endpoint, Dialect.V03)
        for endpoint, known in seen.knows.items()
        if known.get("message/send")
    ]
    for endpoint, dialect in dict.fromkeys(wanted):
        if (endpoint, dialect) in seen.sent:
            continue
        if seen.knows.get(endpoint, {}).get(SEND_METHOD[dialect]) is False:
            seen.sent[(endpoint, dialect)] = "its send method is answered -32601 (method not found)"
            continue
        version = "1" if dialect is Dialect.V10 else "0"
        client = interface_client(probe, Binding.JSONRPC, version, endpoint)
        try:
            sent = await client.send(
                f"hello from toolnexus doctor (in {dialect.value})", blocking=True
            )
            seen.sent[(endpoint, dialect)] = ""
            blocked(client, sent, traffic, add, seen)
        except (RPCError, PeerError) as exc:
            seen.sent[(endpoint, dialect)] = str(exc)
        finally:
            await client.release()
        last = list(traffic.events)[-1] if traffic.events else None
        if last is not None and last.url == endpoint and last.status is not None:
            seen.shapes[(endpoint, dialect)] = judge_shapes(last, dialect, add)
        if card.streaming and not seen.sent[(endpoint, dialect)]:
            await stream_as(client, dialect, traffic, seen, add)


def _slow(traffic: TrafficRecorder, before: int, add: Add, seen: Seen) -> None:
    """Whether a send the doctor waited on took longer than the official Python clients wait."""
    sends = [
        e
        for e in list(traffic.events)[before:]
        if e.rpc_method in ("message/send", "SendMessage", "message:send") and e.status
    ]
    if not sends:
        return
    slowest = max(sends, key=lambda e: e.ms)
    seen.slowest = slowest.ms / 1000
    if seen.slowest > SDK_WAIT:
        add(
            Finding(
                "warning",
                "answer time",
                f"a blocking send took {seen.slowest:.1f} s to be answered: the official Python "
                f"clients wait {SDK_WAIT:g} s unless given an HTTP client of their own",
                [evidence(slowest)],
                ["a2a-sdk 1.x (default HTTP client)", "a2a-sdk 0.3 (default HTTP client)"],
                "answer a blocking send within a few seconds (return the task working, and let "
                "the client poll or stream), or tell callers to give their client a longer timeout",
            )
        )
