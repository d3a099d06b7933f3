"""A served toolkit's A2A agent over gRPC (A2A 1.0 §10), on its own port beside the HTTP one.

Every method runs the endpoint's ``_dispatch`` with the request as its 1.0 JSON, so auth,
checks, task work and errors are those of JSON-RPC and HTTP+JSON; the answer is the result as its
proto message. Needs ``pip install 'toolnexus[grpc]'`` (see ``a2a.grpc_binding``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from ..a2a.dialects import Dialect
from ..a2a.grpc_binding import METHODS, abort_args, modules, to_json, to_proto
from ..errors import InternalError, RPCError, VersionNotSupportedError
from .a2a import A2AEndpoint, _bare, _major, _Refusal
from .runner import MAX_CONNECTIONS, http_url, parse_addr

__all__ = ["GrpcServer"]

log = logging.getLogger("toolnexus.serve")

MAX_MESSAGE = 4 * 1024 * 1024
"""The largest request message accepted, in bytes (grpcio's own default)."""


class GrpcServer:
    """The gRPC service ``a2a.v1.A2AService`` of one endpoint, at ``addr`` (loopback by default)."""

    def __init__(self, endpoint: A2AEndpoint, addr: str | int | None = None) -> None:
        self.endpoint = endpoint
        self.host, self.port = parse_addr(addr)
        self._server: Any = None

    @property
    def target(self) -> str:
        """``host:port``, as a gRPC client dials it (and the card lists it)."""
        return http_url(self.host, self.port).removeprefix("http://")

    async def start(self) -> None:
        grpc, _, pb_grpc = modules()
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_MESSAGE)],
                                 maximum_concurrent_rpcs=MAX_CONNECTIONS)  # past it: RESOURCE_EXHAUSTED
        service = type("A2AService", (pb_grpc.A2AServiceServicer,), {
            rpc: (self._streaming(op) if streaming else self._unary(op))
            for op, (rpc, _, _, streaming) in METHODS.items()})
        pb_grpc.add_A2AServiceServicer_to_server(service(), server)
        port = server.add_insecure_port(self.target)
        if port == 0:
            raise OSError(f"cannot bind gRPC to {self.target}")
        self.port = port
        await server.start()
        self._server = server

    async def stop(self, grace: float = 0.5) -> None:
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None

    async def _params(self, op: str, request: Any, context: Any) -> tuple[dict[str, Any], str | None]:
        """The request as its 1.0 JSON and the caller's owner key; a refusal ends the call."""
        grpc, _, _ = modules()
        metadata = {k.lower(): v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
        version = metadata.get("a2a-version")
        if version is not None and _major(version) != 1:
            raise VersionNotSupportedError(f"Version not supported: A2A-Version {version} (gRPC here speaks 1.0)",
                                           data={"supportedVersions": "1.0"})
        try:
            owner = self.endpoint._owner_of(metadata)
        except _Refusal as refusal:
            code = grpc.StatusCode.UNAUTHENTICATED if refusal.status == 401 else grpc.StatusCode.PERMISSION_DENIED
            await context.abort(code, str(refusal))
        return to_json(request), owner

    def _unary(self, op: str) -> Any:
        reply = METHODS[op][2]

        async def call(servicer: Any, request: Any, context: Any) -> Any:
            try:
                params, owner = await self._params(op, request, context)
                result = await self.endpoint._dispatch(op, params, Dialect.V10, None, owner)
            except RPCError as err:
                await context.abort(*abort_args(err))
            except Exception as exc:  # context.abort raises to end the call: let that one through
                if type(exc).__name__ == "AbortError":
                    raise
                log.exception("gRPC %s failed", METHODS[op][0])
                await context.abort(*abort_args(InternalError()))
            return to_proto(reply, result)

        return call

    def _streaming(self, op: str) -> Any:
        async def call(servicer: Any, request: Any, context: Any) -> AsyncIterator[Any]:
            try:
                params, owner = await self._params(op, request, context)
                results = await self.endpoint._dispatch(op, params, Dialect.V10, None, owner, wrap=_bare)
            except RPCError as err:
                await context.abort(*abort_args(err))
            async with contextlib.aclosing(results):
                async for result in results:
                    if result is not None:  # a quiet spell: gRPC keeps its own connection alive
                        yield to_proto("StreamResponse", result)

        return call
