"""The gRPC transport (``pip install 'toolnexus[grpc]'``): the table's operations as gRPC calls in
1.0, or 0.3's service, each on the client's wire log as a POST with its status as the trailer
says it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from typing import Any

from .. import _json, trace
from ..errors import PeerError, RPCError
from ..http import fetch
from ..http.fetch import why
from ..protocol import grpc_binding, rest
from ..protocol.dialects import Dialect
from ..protocol.extensions import HEADER, header_value
from ..protocol.model import Message, Task
from ..protocol.operations import Binding, Operation
from .transport_base import GRPC_REFUSALS, Caller, Transport, _Fold, _heard, about

__all__ = ["GrpcTransport"]


class GrpcTransport(Transport):
    """gRPC on the interface's ``host:port``: 1.0's service, or 0.3's (calls are built and answers
    read in the 1.0 shapes either way; ``grpc_binding`` converts 0.3's); needs
    ``pip install 'toolnexus[grpc]'``."""

    binding = Binding.GRPC

    def __init__(self, client: Caller, dialect: Dialect) -> None:
        super().__init__(client, dialect)
        self._channel: Any = None  # opened on first use

    async def close(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close()

    def method(self, op: Operation) -> str | None:
        if self.dialect is not Dialect.V03:
            return op.v10
        return op.v03_grpc[0] if op.v03_grpc else None

    def _stub(
        self, op: Operation, params: dict[str, Any]
    ) -> tuple[Any, Any, str, list[tuple[str, str]]]:
        """``(stub method, request message, wire URL, metadata)`` of ``op`` with ``params``."""
        c = self.client
        v03 = self.dialect is Dialect.V03
        if v03 and op.v03_grpc is None:
            raise self.unsupported(op)
        _, _, pb_grpc = grpc_binding.modules(v03)
        if self._channel is None:
            self._channel = grpc_binding.channel(
                c.endpoint, fetch.MAX_RESPONSE, c.channel_credentials()
            )
        metadata = [("a2a-version", "0.3" if v03 else "1.0")] + [
            (k.lower(), v) for k, v in c.sent_headers().items()
        ]
        if c.extensions:
            metadata.append((HEADER.lower(), header_value(c.extensions)))
        parent = trace.outgoing()
        if parent is not None:
            metadata.append((trace.HEADER, parent))
        if v03 and op.v03_grpc is not None:
            rpc, service = op.v03_grpc[0], grpc_binding.SERVICE_V03
            request = grpc_binding.to_proto(
                op.v03_grpc[1], grpc_binding.v03_request(op.key, params), v03=True
            )
        else:
            rpc, service = op.v10, grpc_binding.SERVICE
            request = grpc_binding.to_proto(op.grpc_request, params)
        url = f"grpc://{grpc_binding.target_of(c.endpoint)}/{service}/{rpc}"
        return getattr(pb_grpc.A2AServiceStub(self._channel), rpc), request, url, metadata

    def _answer(self, op: Operation, reply: Any) -> Any:
        """A reply (or stream message) as the 1.0 JSON the client parses."""
        data = grpc_binding.to_json(reply)
        if self.dialect is not Dialect.V03:
            return data
        try:
            return rest.v03_answer(op.key, data)
        except RPCError as exc:  # the peer's answer, not our call, is what is wrong
            raise PeerError(
                f"{self.client.peer}: {op.v03_grpc and op.v03_grpc[0]} answered a shape A2A 0.3 "
                f"does not have: {exc.message}"
            ) from None

    def _failed(self, rpc: str, exc: BaseException) -> Exception:
        c = self.client
        if not hasattr(exc, "code"):  # no status: the channel or the message failed
            return PeerError(f"{c.peer}: {rpc} failed: {why(exc)}")
        rpc_error: Any = exc  # a grpc.RpcError, by its code()
        refused = {name: status for status, name in GRPC_REFUSALS.items()}
        status = refused.get(rpc_error.code().name)
        if status is not None:  # the credentials refused, as HTTP's 401 and 403 are
            return self._refused(rpc, status) or PeerError(rpc)
        return grpc_binding.error_of(exc, c.traffic.mask) or PeerError(
            f"{c.peer}: {rpc} failed: {rpc_error.code().name}: "
            f"{c.traffic.mask(rpc_error.details() or '')}"
        )

    async def call(self, op: Operation, params: dict[str, Any], *, empty_ok: bool = False) -> Any:
        c = self.client
        stub, message, url, metadata = self._stub(op, params)
        rpc = self.method(op) or op.v10
        # the call as the wire log shows it: its method, URL, start, metadata and body
        asked = ("POST", url, time.perf_counter(), dict(metadata), _json.dumps(params))
        try:
            call = stub(message, metadata=metadata, timeout=c.timeout)
            reply = await call
            if c.extensions:
                _heard(c, _metadata(await call.initial_metadata()))
        except Exception as exc:
            failed = self._failed(rpc, exc)
            answer = (getattr(failed, "http_status", None), b"")
            c.traffic.sent(
                *asked,
                answer,
                error=str(failed),
                rpc_method=rpc,
                response_headers=_trailers(exc),
                task_id=about(params),
            )
            raise failed from None
        result = self._answer(op, reply)
        answer = (200, _json.dumps(result))
        c.traffic.sent(
            *asked,
            answer,
            rpc_method=rpc,
            response_headers=_trailers(None),
            task_id=about(params, result),
        )
        return result

    async def stream(
        self, op: Operation, params: dict[str, Any], sent: Message | None
    ) -> AsyncGenerator[Task, None]:
        """A server-streaming call's messages as tasks; each must come within ``max(timeout, 60)``
        seconds of the one before. On the wire log however it ends."""
        c = self.client
        stub, message, url, metadata = self._stub(op, params)
        rpc = self.method(op) or op.v10
        # the call as the wire log shows it: its method, URL, start, metadata and body
        asked = ("POST", url, time.perf_counter(), dict(metadata), _json.dumps(params))
        frames: list[str] = []
        error: str | None = None
        trailers: dict[str, str] = {}
        fold = _Fold(sent)
        call = stub(message, metadata=metadata)
        try:
            if c.extensions:
                async with asyncio.timeout(max(c.timeout, 60.0)):
                    _heard(c, _metadata(await call.initial_metadata()))
            replies = call.__aiter__()
            while True:
                try:
                    async with asyncio.timeout(max(c.timeout, 60.0)):
                        reply = await replies.__anext__()
                except StopAsyncIteration:
                    break
                frame = self._answer(op, reply)
                frames.append(_json.dumps(frame).decode())
                yield fold.step(c, frame)
            fold.end(c)
        except TimeoutError:
            error = f"AnswerTooSlow: no message within {max(c.timeout, 60.0):g}s"
            raise PeerError(f"{c.peer}: {rpc} stream failed: {error}") from None
        except (GeneratorExit, asyncio.CancelledError):
            error = "canceled"
            raise
        except PeerError as exc:  # an answer in a shape its version does not have
            error = str(exc)
            raise
        except Exception as exc:
            failed = self._failed(rpc, exc)
            error, trailers = str(failed), _trailers(exc)
            raise failed from None
        finally:
            call.cancel()
            answer = (None if error else 200, "\n\n".join(frames))
            task_id = fold.task.id if fold.task is not None else about(params)
            c.traffic.sent(
                *asked,
                answer,
                error=error,
                rpc_method=rpc,
                response_headers=trailers if error else _trailers(None),
                frames=frames,
                task_id=task_id,
            )


def _metadata(items: Any) -> Any:
    """gRPC metadata as ``given(name)`` reads it (every value of a key, case-blind)."""
    pairs = [(str(k).lower(), v) for k, v in items or ()]
    return lambda name: [v for k, v in pairs if k == name.lower() and isinstance(v, str)]


def _trailers(exc: BaseException | None) -> dict[str, str]:
    """A gRPC call's status as its trailer carries it (``grpc-status``, a number: 0 is OK; the
    Wire names it), from the call's error (None: it succeeded); none when no status came back."""
    if exc is None:
        return {"grpc-status": "0"}
    code = getattr(exc, "code", None)
    value = getattr(code(), "value", None) if callable(code) else None
    return {"grpc-status": str(value[0])} if isinstance(value, tuple) else {}
