"""An A2A peer as the command line describes it: the client its flags make, its lines masked, its
exchanges traced (``send``, ``task``, ``push``; ``card``'s credentials)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import toolnexus as tn

from ..errors import UnsupportedOperationError
from ..protocol.operations import OPERATIONS
from .output import UsageError, say
from .values import _env_secret, _headers

PER_REQUEST = 30.0
"""Seconds one request to a peer may take (``send`` and ``task resubscribe``: each frame)."""


def _credentials(args: argparse.Namespace) -> dict[str, Any]:
    """``A2AClient``'s credential arguments from the flags of :func:`_credential_options`."""
    out: dict[str, Any] = {}
    if args.bearer_env:
        out["bearer"] = _env_secret("--bearer-env", args.bearer_env)
    if args.api_key_env:
        out["api_key"] = _env_secret("--api-key-env", args.api_key_env)
    secret = (
        _env_secret("--client-secret-env", args.client_secret_env)
        if args.client_secret_env
        else None
    )
    if args.oauth and not args.client_id:
        raise UsageError("--oauth needs --client-id")
    if args.oauth == "client":
        if secret is None:
            raise UsageError("--oauth client needs --client-secret-env")
        out["oauth"] = tn.ClientCredentials(args.client_id, secret, scopes=args.scope)
    elif args.oauth == "device":
        out["oauth"] = tn.DeviceCode(args.client_id, args.scope, client_secret=secret)
    elif args.oauth == "browser":
        out["oauth"] = tn.AuthorizationCode(args.client_id, args.scope, client_secret=secret)
    if args.cert_key and not args.cert:
        raise UsageError("--cert-key needs --cert")
    if args.cert or args.ca:
        if not args.cert:
            raise UsageError("--ca is for mutual TLS here: give --cert too")
        out["certificate"] = tn.ClientCertificate(args.cert, args.cert_key, ca=args.ca)
    return out


def _client(args: argparse.Namespace, timeout: float = PER_REQUEST) -> Any:
    """The client the command's flags describe (not yet connected), each request given
    ``timeout`` seconds; a flag it cannot use is a usage error."""
    headers = _headers(args.header)
    basic = None
    if args.basic_env:
        user, colon, password = _env_secret("--basic-env", args.basic_env).partition(":")
        if not colon or not user:
            raise UsageError(f"--basic-env {args.basic_env}: must hold user:password")
        basic = (user, password)
    try:
        return tn.A2AClient(
            args.url,
            basic=basic,
            headers=headers,
            dialect=args.dialect,
            secret_headers=tuple(headers),
            binding=args.binding,
            record=args.record,
            tenant=args.tenant,
            extensions=args.extension,
            timeout=timeout,
            **_credentials(args),
        )
    except OSError as exc:
        raise UsageError(f"--record {args.record}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a binding the dialect has not, a certificate that will not load
        raise UsageError(str(exc)) from None


def _out(client: Any, text: str, **kwargs: Any) -> None:
    """A line from a peer's answer: the headers' secrets masked, even in what the peer echoes."""
    say(client.traffic.mask(text), **kwargs)


def _trace(client: Any) -> None:
    """``--trace``: every exchange the client had, masked, on stderr."""
    for ev in client.traffic.events:
        _out(
            client,
            f"--> {ev.method} {ev.url} {ev.rpc_method or ''} [{ev.status}] {ev.ms:.1f} ms",
            file=sys.stderr,
        )
        for k, v in ev.request_headers.items():
            _out(client, f"    {k}: {v}", file=sys.stderr)
        if ev.request_body:
            _out(client, f"    {ev.request_body}", file=sys.stderr)
        _out(client, f"<-- {ev.response_body[:2000]}", file=sys.stderr)
        if _ended_before_followed(ev):
            _out(
                client,
                "    (expected, not a problem: the task had ended before the subscription "
                "reached the peer, so there was nothing to follow; it is read with GetTask)",
                file=sys.stderr,
            )


_SUBSCRIBE = {OPERATIONS["resubscribe"].v10, OPERATIONS["resubscribe"].v03}


def _ended_before_followed(ev: Any) -> bool:
    """Whether an exchange is a subscription to a task the peer refused because the task had
    already ended (``UnsupportedOperation``, in any binding's spelling): the client reads the
    finished task next, as it should. A quick task ends so before ``send`` can follow it."""
    if ev.rpc_method not in _SUBSCRIBE:
        return False
    body = ev.response_body
    return UnsupportedOperationError.reason in body or (
        f'"code":{UnsupportedOperationError.code}' in body.replace(" ", "")
    )
