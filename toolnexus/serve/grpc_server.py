"""A served toolkit's A2A agent over gRPC (A2A 1.0 §10, and 0.3's service beside it), on its own
port beside the HTTP one.

An adapter, as thin as the HTTP ones: every RPC of the table of operations
(:mod:`toolnexus.protocol.operations`), in 1.0's service ``lf.a2a.v1.A2AService`` and in 0.3's
``a2a.v1.A2AService``, admits its caller as every binding does (auth, then the ``A2A-Version``
metadata: 1.x, or 0.x for 0.3's), runs the endpoint's handler with the request as its 1.0 JSON
(0.3's converted by ``grpc_binding.v03_params``), and encodes the result as its proto message. A failure anywhere, the encoding of the answer
included, ends the call with the gRPC status of its error (``toolnexus.errors``); an unexpected
one is a generic INTERNAL whose detail only the server log sees. Needs
``pip install 'toolnexus[grpc]'`` (see ``protocol.grpc_binding``).
"""

from __future__ import annotations

import contextlib
import logging
import ssl
from collections.abc import AsyncGenerator
from typing import Any

from .._json import is_array
from ..errors import InternalError, InvalidRequestError, RPCError, VersionNotSupportedError
from ..http.server import MAX_CONNECTIONS, MAX_HEAD, ServingCollector, http_url, parse_addr
from ..protocol import rest
from ..protocol.dialects import Dialect
from ..protocol.grpc_binding import (
    abort_args,
    fit,
    message_type,
    modules,
    to_json,
    to_proto,
    v03_params,
)
from ..protocol.operations import OPERATIONS, Binding, Operation
from .a2a import A2AEndpoint, Refusal, as_is, major_version
from .config import MutualTLS

__all__ = ["GrpcServer"]

log = logging.getLogger("toolnexus.serve")

MAX_MESSAGE = 4 * 1024 * 1024
"""The largest request message accepted, in bytes (grpcio's own default)."""


class GrpcServer:
    """The gRPC services of one endpoint (1.0's and 0.3's), at ``addr`` (loopback by default)."""

    def __init__(
        self, endpoint: A2AEndpoint, addr: str | int | None = None, tls: MutualTLS | None = None
    ) -> None:
        self.endpoint = endpoint
        self.host, self.port = parse_addr(addr)
        self.tls = tls
        """Serve over TLS taking only callers with a certificate its CA signed (mutual TLS)."""
        self._server: Any = None
        self._calls = 0  # in progress

    @property
    def target(self) -> str:
        """``host:port``, as a gRPC client dials it (and the card lists it)."""
        return http_url(self.host, self.port).removeprefix("http://")

    @property
    def url(self) -> str:
        """Where the card says it is: :attr:`target`, or over TLS ``https://`` and the target (the
        spec's own example writes a gRPC interface so; a client opens a TLS channel for it)."""
        return self.target if self.tls is None else "https://" + self.target

    async def start(self) -> None:
        grpc, _, _ = modules()
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                # a call's metadata bounded as an HTTP request's head is: grpcio's own bounds are
                # 8 KiB soft (past it, calls refused at random) and 16 KiB hard
                ("grpc.max_metadata_size", MAX_HEAD),
                ("grpc.absolute_max_metadata_size", MAX_HEAD),
            ],
            maximum_concurrent_rpcs=MAX_CONNECTIONS,
        )  # past it: RESOURCE_EXHAUSTED
        for v03 in (False, True):  # the services the official stubs call, one handler per row
            _, pb, _ = modules(v03)
            handlers = {}
            for op in OPERATIONS.values():
                names = op.v03_grpc if v03 else (op.v10, op.grpc_request, op.grpc_response)
                if names is None:
                    continue
                kind = (
                    grpc.unary_stream_rpc_method_handler
                    if op.streams
                    else grpc.unary_unary_rpc_method_handler
                )
                handlers[names[0]] = kind(
                    self._streaming(op, v03) if op.streams else self._unary(op, v03),
                    request_deserializer=_decoder(message_type(names[1], v03)),
                    response_serializer=message_type(names[2], v03).SerializeToString,
                )
            service = pb.DESCRIPTOR.services_by_name["A2AService"].full_name
            server.add_generic_rpc_handlers(
                (grpc.method_handlers_generic_handler(service, handlers),)
            )
        if self.tls is None:
            port = server.add_insecure_port(self.target)
        else:
            ca, cert, key = self.tls.pem()
            port = server.add_secure_port(
                self.target,
                grpc.ssl_server_credentials(
                    [(key, cert)], root_certificates=ca, require_client_auth=True
                ),
            )
        if port == 0:
            raise OSError(f"cannot bind gRPC to {self.target}")
        self.port = port
        await server.start()
        self._server = server
        ServingCollector.hold(self)

    def holding(self) -> int:
        """Its calls in progress (``http.server.Holder``): a stream's objects live as long as its
        call, and one connection carries any number of calls (a channel of the official client)."""
        return self._calls

    async def stop(self, grace: float = 0.5) -> None:
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None

    async def _params(
        self, op: Operation, request: Any, context: Any, v03: bool
    ) -> tuple[dict[str, Any], str | None]:
        """The request as its 1.0 JSON and the caller's owner key; a refusal ends the call. The
        extensions it activates are answered in the initial metadata (``a2a-extensions``)."""
        grpc, _, _ = modules()
        if isinstance(request, _Undecodable):
            raise InvalidRequestError(
                f"Invalid request: not a valid {request.type_name} (malformed, or nested "
                "deeper than protobuf decodes)"
            )
        metadata = {
            k.lower(): v for k, v in context.invocation_metadata() or () if isinstance(v, str)
        }
        try:
            owner = await self.endpoint.owner_of(metadata, _certificate(context))
        except Refusal as refusal:
            code = (
                grpc.StatusCode.UNAUTHENTICATED
                if refusal.status == 401
                else grpc.StatusCode.PERMISSION_DENIED
            )
            await context.abort(code, str(refusal))  # ends the call: it raises
            raise
        version = metadata.get("a2a-version")
        if version is not None and major_version(version) != (0 if v03 else 1):
            speaks = "0.3 (a2a.v1.A2AService)" if v03 else "1.0 (lf.a2a.v1.A2AService)"
            raise VersionNotSupportedError(
                f"Version not supported: A2A-Version {version} (this gRPC service speaks {speaks})",
                data={"supportedVersions": "0.3" if v03 else "1.0"},
            )
        every = [(k.lower(), v) for k, v in context.invocation_metadata() or ()]
        activated = self.endpoint.activated(
            lambda name: [v for k, v in every if k == name and isinstance(v, str)],
            Dialect.V03 if v03 else Dialect.V10,
        )
        if activated:
            await context.send_initial_metadata(tuple((k.lower(), v) for k, v in activated.items()))
        params = to_json(request)
        return (v03_params(op.key, params) if v03 else params), owner

    async def _failed(self, op: Operation, exc: Exception, context: Any, v03: bool) -> None:
        """End the call with ``exc``'s status: an RPCError's own, anything else a generic INTERNAL
        (context.abort raises to end the call: that one goes through as it is)."""
        if type(exc).__name__ == "AbortError":
            raise exc
        if not isinstance(exc, RPCError):
            log.error("gRPC %s failed", op.v10, exc_info=exc)
            exc = InternalError()
        await context.abort(*abort_args(exc, v03))

    def _unary(self, op: Operation, v03: bool) -> Any:
        async def call(request: Any, context: Any) -> Any:
            self._calls += 1
            try:
                params, owner = await self._params(op, request, context, v03)
                result = await self.endpoint.dispatch(
                    op, params, Dialect.V10, None, owner, binding=Binding.GRPC
                )
                return _answer(op, result, v03)
            except Exception as exc:
                await self._failed(op, exc, context, v03)
            finally:
                self._calls -= 1

        return call

    def _streaming(self, op: Operation, v03: bool) -> Any:
        async def call(request: Any, context: Any) -> AsyncGenerator[Any, None]:
            self._calls += 1
            try:
                params, owner = await self._params(op, request, context, v03)
                results = await self.endpoint.dispatch(
                    op, params, Dialect.V10, None, owner, wrap=as_is, binding=Binding.GRPC
                )
                async with contextlib.aclosing(results):
                    async for result in results:
                        if result is not None:  # a quiet spell: gRPC keeps its own connection alive
                            yield _answer(op, result, v03)
            except Exception as exc:
                await self._failed(op, exc, context, v03)
            finally:  # a call its caller cancels too (grpcio cancels the handler's task)
                self._calls -= 1

        return call


class _Undecodable:
    """A request protobuf could not decode: handed to the handler, which refuses it plainly (a
    deserializer that raises makes grpcio answer UNKNOWN with the parser's class name and words)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name


def _decoder(cls: Any) -> Any:
    def decode(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except Exception:  # a caller's bytes: anything protobuf refuses is the caller's mistake
            log.info("gRPC: a request that is not a valid %s", cls.DESCRIPTOR.name)
            return _Undecodable(cls.DESCRIPTOR.name)

    return decode


def _answer(op: Operation, result: Any, v03: bool) -> Any:
    """A handler's result as the RPC's response message (``v03``: 0.3's, through 0.3's HTTP+JSON
    shapes), every value cut to what every gRPC decoder reads (``grpc_binding.fit``); one that
    still does not fit is this server's fault, never the caller's: a generic INTERNAL, the
    parser's words in the log only."""
    response = op.v03_grpc[2] if v03 and op.v03_grpc else op.grpc_response
    result, cut = fit(rest.v03_result(op.key, result) if v03 else result)
    if cut:
        log.warning(
            "gRPC %s: a value nested deeper than gRPC carries was cut from the answer", op.v10
        )
    try:
        return to_proto(response, result, v03)
    except RPCError as exc:
        log.error("gRPC %s: the answer is not a valid %s: %s", op.v10, response, exc.message)
        raise InternalError() from None


def _certificate(context: Any) -> bytes | None:
    """The client certificate (DER) a call's TLS channel presented (mutual TLS), or None: as the
    HTTP host reads it (``http.server.peer_certificate``), so a caller is the same on every binding."""
    auth: Any = context.auth_context()  # grpcio's: property name -> its values (bytes)
    found: object = auth.get("x509_pem_cert") if auth else None
    if not is_array(found) or not found or not isinstance(found[0], bytes):
        return None
    return ssl.PEM_cert_to_DER_cert(found[0].decode("ascii"))
