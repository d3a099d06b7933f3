"""``SERVE_FLAGS``: every ``serve`` flag and the config key it sets, one table that the parser, its
help and the config read."""

from __future__ import annotations

import argparse

from ..serve.quirks import QUIRKS
from ..stores import KINDS, STORE_FORMS, KeepsEnded, Shared, kinds_with
from .flag import Flag, _basic, _bearer, _public_url, _scheme, _signing_key

DRAIN = 30.0
"""``serve --drain``'s default: seconds a stop gives what runs (as long as Kubernetes' default grace)."""


def _names(capability: type, has: bool = True) -> str:
    """The kinds of store that declare ``capability`` (or not), for a sentence: "file and PostgreSQL"."""
    names = [kind.name for kind in kinds_with(capability, has)]
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _forms(capability: type) -> str:
    """How the kinds of store that declare ``capability`` are written: "postgresql://USER@HOST/DB"."""
    return " | ".join(kind.form for kind in kinds_with(capability))


SERVE_FLAGS: tuple[Flag, ...] = (
    Flag("--name", "the agent's name on its card", "a2a.name"),
    Flag(
        "--description",
        "the agent's description on its card (default: one made from its skills)",
        "a2a.description",
        blank=True,
    ),
    Flag("--host", "address to bind (default 127.0.0.1)", options={"default": "127.0.0.1"}),
    Flag("--port", "port to bind (default 0: any free port)", options={"type": int, "default": 0}),
    Flag(
        "--model",
        "demo | openai:MODEL | anthropic:MODEL (default demo)",
        options={"default": "demo"},
    ),
    Flag("--base-url", "the model endpoint (any OpenAI-compatible server works with openai:)"),
    Flag("--api-key-env", "the environment variable holding the model key", env=True),
    Flag(
        "--store",
        f"{STORE_FORMS} (default {KINDS[0].name}; "
        + "; ".join(f"{k.name} needs pip install 'toolnexus[{k.extra}]'" for k in KINDS if k.extra)
        + ")",
        "a2a.store",
    ),
    Flag("--mcp", "also serve MCP at /mcp", "mcpServer", options={"action": "store_true"}),
    Flag(
        "--grpc",
        "also serve the gRPC binding there (needs pip install 'toolnexus[grpc]')",
        "a2a.grpc",
        options={"metavar": "[HOST]:PORT"},
    ),
    Flag("--no-a2a", "serve MCP only", options={"action": "store_true"}),
    Flag(
        "--sign-key",
        "sign the card and push notifications with this private key (PEM or JWK: EC P-256, "
        "Ed25519 or RSA); its public half is served at /.well-known/jwks.json",
        "a2a.signing_key",
        to=_signing_key,
        options={"metavar": "FILE"},
    ),
    Flag(
        "--tenant",
        "serve this tenant (repeatable; A2A 1.0's tenant field and /NAME/... routes), each "
        "its own task space, listed on the card",
        "a2a.tenants",
        options={"action": "append", "metavar": "NAME"},
    ),
    Flag(
        "--extension",
        "declare this extension on the card (repeatable): activated for callers who ask for it",
        "a2a.extensions",
        extends=True,
        options={"action": "append", "metavar": "URI"},
    ),
    Flag(
        "--require-extension",
        "declare this extension as required (repeatable): a call that does not ask for it "
        "(A2A-Extensions) is refused with -32008",
        "a2a.extensions",
        to=lambda uris: [{"uri": u, "required": True} for u in uris],
        extends=True,
        options={"action": "append", "metavar": "URI"},
    ),
    Flag(
        "--quirks",
        "answer as a peer from the field does, to test a client against it: "
        + "; ".join(f"{q.name}: {q.summary}" for q in QUIRKS.values())
        + " (slow=SECONDS for another delay)",
        "a2a.quirks",
        options={"action": "append", "metavar": "NAME[,NAME]"},
    ),
    Flag(
        "--direct-replies",
        "answer a send with a Message when no task is needed: a new message whose run completes "
        "without asking anything, when its caller waits for it (a task otherwise)",
        "a2a.direct_replies",
        options={"action": "store_true", "default": None},
    ),
    Flag("--json", "print JSON lines instead of text", options={"action": "store_true"}),
    Flag(
        "--metrics",
        "Prometheus metrics at /metrics, behind the agent's auth (needs pip install "
        "'toolnexus[metrics]')",
        options={"action": "store_true"},
    ),
    Flag(
        "--metrics-at",
        "Prometheus metrics on a port of their own instead (implies --metrics)",
        options={"metavar": "[HOST:]PORT"},
    ),
    Flag(
        "--auth-token-env",
        "require 'Authorization: Bearer TOKEN' on JSON-RPC and MCP, TOKEN read from this variable",
        "a2a.auth",
        env=True,
        to=_bearer,
        options={"metavar": "NAME"},
    ),
    Flag(
        "--auth-basic-env",
        "require HTTP basic auth on JSON-RPC and MCP, 'user:password' read from this variable",
        "a2a.auth",
        env=True,
        to=_basic,
        options={"metavar": "NAME"},
    ),
    Flag(
        "--auth-oauth2",
        "accept only JWT access tokens from an OAuth 2 issuer (a resource server), checked with "
        "its key set; the card says where to get one. The a2a.auth.oauth2 block as KEY=VALUE,...: "
        "issuer=URL,audience=AUD,jwksUrl=URL and any of scopes='A B' (every call needs them), "
        "metadataUrl=URL, flows.clientCredentials.tokenUrl=URL, flows.deviceCode."
        "deviceAuthorizationUrl=URL, flows.authorizationCode.authorizationUrl=URL, ...",
        "a2a.auth",
        to=_scheme("oauth2", "--auth-oauth2"),
        options={"metavar": "issuer=URL,audience=AUD,jwksUrl=URL[,KEY=VALUE]"},
    ),
    Flag(
        "--auth-openid",
        "accept only JWT access tokens from an OpenID Connect provider, its keys found by its "
        "discovery document: url=DISCOVERY_URL,issuer=URL,audience=AUD[,scopes='A B']",
        "a2a.auth",
        to=_scheme("openIdConnect", "--auth-openid"),
        options={"metavar": "url=URL,issuer=URL,audience=AUD[,KEY=VALUE]"},
    ),
    Flag(
        "--auth-mtls",
        "serve over TLS with this certificate and key, taking only callers whose client "
        "certificate the CA signed (HTTP and gRPC): ca=FILE,cert=FILE,key=FILE",
        "a2a.auth",
        to=_scheme("mutualTLS", "--auth-mtls"),
        options={"metavar": "ca=FILE,cert=FILE,key=FILE"},
    ),
    Flag(
        "--allow-unauthenticated",
        "serve command-running builtins beyond loopback without auth (you mean it)",
        options={"action": "store_true"},
    ),
    Flag(
        "--workers",
        f"serve from N processes on one port (needs a shared store: --store {_forms(Shared)})",
        options={"type": int, "default": 1, "metavar": "N"},
    ),
    Flag(
        "--keep-tasks",
        f"the {_names(KeepsEnded, False)} store keeps at most N finished tasks, oldest dropped "
        "first (default 100000)",
        "a2a.keep_tasks",
        options={"type": int, "metavar": "N"},
    ),
    Flag(
        "--keep-for",
        f"the {_names(KeepsEnded, False)} store drops finished tasks older than this (default: "
        "no limit)",
        "a2a.keep_for",
        options={"type": float, "metavar": "SECONDS"},
    ),
    Flag(
        "--lease",
        f"with a shared store ({_names(Shared)}): how long a dead worker's running tasks wait "
        "before they fail (default 5)",
        "a2a.lease",
        options={"type": float, "metavar": "SECONDS"},
    ),
    Flag(
        "--public-url",
        "the URL callers reach the agent at, behind a balancer or proxy: the card's URLs",
        "a2a.public_url",
        to=_public_url,
        options={"metavar": "URL"},
    ),
    Flag(
        "--max-connections",
        "open connections past which new requests get 503, all workers' together (default: "
        "sized from the open-file limit, which serve raises to its hard limit; the start says "
        "the figure)",
        "maxConnections",
        options={"type": int, "metavar": "N"},
    ),
    Flag(
        "--drain",
        "on SIGTERM or Ctrl-C: stop accepting, then give what runs this long to finish (its "
        "callers answered), and fail what is left, saying so; a second signal stops at once "
        f"(default {DRAIN:g})",
        options={"type": float, "default": DRAIN, "metavar": "SECONDS"},
    ),
    # a worker of --workers: the supervisor's socket, the worker's number, the shared limit
    Flag("--worker-fd", argparse.SUPPRESS, options={"type": int}),
    Flag("--worker-index", argparse.SUPPRESS, options={"type": int}),
    Flag("--worker-share", argparse.SUPPRESS, options={"type": int}),
)
"""Every ``serve`` flag beyond the toolkit's (``_toolkit_options``), in ``--help``'s order; the
``a2a`` block's keys applied in this order, then its auth, then ``A2AConfig.check()``."""
