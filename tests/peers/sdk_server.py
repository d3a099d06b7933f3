"""An agent on the official a2a-sdk 1.x server, as a real peer for our client.

Its script: "echo" answers ``echo: <text>``; "which tenant" answers ``tenant: <the request's
tenant>`` (``-`` for none); "which extensions" answers ``extensions: <the URIs asked for>`` in an
artifact whose ``extensions`` are those URIs; a message containing "question" asks for input and answers
``answered: <reply>`` on the same task; "slow" waits 30 s (for cancel tests), "late" makes its
task a second after the send arrives (so the send's answer comes that late); "chunked" streams
``echo: chunked reply please`` in three pieces ("paced": 0.3 s apart; "held": the rest after
:func:`hold`'s event is set); "fail"
fails the task with a reason. File and data parts come back as an artifact "echoed" (and
"../../escape.txt", a name no client should write outside its folder). "many files N" answers one
artifact of N file parts all called ``a.txt``, then parts named as a shell would run them and
``links.txt``, and a part that only links to a URL. "a message, not a task" is answered with a
Message and no task.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Callable

import httpx
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskStore,
    TaskUpdater,
)
from a2a.types import a2a_pb2 as pb
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolnexus.http.server import AsgiServer

from .tls import Pki

HOSTILE_NAMES = (
    "$(touch PWNED).txt",
    "`touch PWNED`.sh",
    "a;touch PWNED;.txt",
    "-rf",
    "x|touch PWNED",
    "a&&touch PWNED",
    "~root",
    "links.txt",
    "two words.txt",
    "*",
    "'q'\"q\"",
    "> out",
    "#!x",
    "{a,b}",
)
"""File names as a shell would read them: saved, each must paste into a shell as one plain word."""


SAID: list[float] = []
"""When the script agent said each piece of a chunked reply (the loop's clock): a test that
streams from it can tell a piece shown as it came from one shown at the end."""

_released: asyncio.Event | None = None


def hold() -> asyncio.Event:
    """A chunked reply asked with "held" in its text waits after its first piece until the event
    returned here is set, 60 s at most (one per test: an event belongs to the loop that first
    awaits it)."""
    global _released  # noqa: PLW0603 (the script agent's one hold, set by the test that asks)
    _released = asyncio.Event()
    return _released


class ScriptExecutor(AgentExecutor):
    def __init__(self, *, detached: bool = False, chunked: bool = False) -> None:
        self.detached = detached
        self.chunked = chunked

    async def execute(self, context: RequestContext, event_queue) -> None:  # type: ignore[override]
        text = context.get_user_input()
        task = context.current_task
        if task is None and text == "a message, not a task":  # the spec lets an agent answer so
            await event_queue.enqueue_event(
                new_text_message("here is a message", context_id=context.context_id)
            )
            return
        if task is None and "late" in text:  # the send's answer comes a second after it is asked
            await asyncio.sleep(1.0)
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
            if self.detached:  # the work left to run elsewhere: the task stays submitted
                return
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        waiting = task.status.state == pb.TASK_STATE_INPUT_REQUIRED
        await updater.start_work()
        if waiting:
            await self._reply(updater, f"answered: {text}")
        elif "question" in text:
            await updater.requires_input(
                new_text_message(
                    "What is your favourite colour?", context_id=task.context_id, task_id=task.id
                )
            )
        elif text == "which tenant":  # what the SDK read from the request (body or path)
            await self._reply(updater, f"tenant: {context.tenant or '-'}")
        elif (
            text == "which extensions"
        ):  # what the SDK read from A2A-Extensions: an artifact of them
            asked = sorted(context.requested_extensions)
            await updater.add_artifact(
                [pb.Part(text=f"extensions: {' '.join(asked) or '-'}")],
                name="reply",
                extensions=asked,
                last_chunk=True,
            )
            await updater.complete()
        elif "slow" in text:
            await asyncio.sleep(30)
            await self._reply(updater, "slow done")
        elif (
            "chunked" in text or self.chunked
        ):  # one reply streamed as three appends to one artifact
            gap = 0.3 if "paced" in text else 0.05  # paced: a piece a reader sees arrive
            said, third = f"echo: {text}", (len(text) + 6) // 3
            pieces = (
                ("echo: chu", "nked repl", "y please")
                if "chunked" in text
                else (said[:third], said[third : 2 * third], said[2 * third :])
            )
            for i, piece in enumerate(pieces):
                if i == 1 and "held" in text and _released is not None:
                    with contextlib.suppress(TimeoutError):  # (a test that failed meanwhile)
                        await asyncio.wait_for(_released.wait(), 60)
                await asyncio.sleep(gap)
                SAID.append(asyncio.get_running_loop().time())
                await updater.add_artifact(
                    [pb.Part(text=piece)],
                    artifact_id="reply-1",
                    name="reply",
                    append=i > 0,
                    last_chunk=i == 2,
                )
            await updater.complete()
        elif text.startswith("many files"):
            n = int(text.split()[-1])
            parts = [pb.Part(raw=f"a{i}".encode(), filename="a.txt") for i in range(n)]
            parts += [pb.Part(raw=name.encode(), filename=name) for name in HOSTILE_NAMES]
            parts.append(
                pb.Part(
                    url="https://elsewhere.example/x.pdf",
                    filename="x.pdf",
                    media_type="application/pdf",
                )
            )
            await updater.add_artifact(parts, name="many")
            await self._reply(updater, f"{n} files")
        elif "fail" in text:
            await updater.failed(
                new_text_message(
                    "the agent could not do it", context_id=task.context_id, task_id=task.id
                )
            )
        elif others := [p for p in context.message.parts if p.WhichOneof("content") != "text"]:
            await updater.add_artifact(list(others), name="echoed")
            await updater.add_artifact(
                [pb.Part(raw=b"outside?", filename="../../escape.txt")], name="hostile"
            )
            await self._reply(updater, f"echo: {text} (+{len(others)} parts)")
        else:
            await self._reply(updater, f"echo: {text}")

    async def _reply(self, updater: TaskUpdater, text: str) -> None:
        await updater.add_artifact([pb.Part(text=text)], name="reply", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:  # type: ignore[override]
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card(
    url: str, *, compat: bool, push: bool = False, binding: str = "JSONRPC", versioned: bool = True
) -> pb.AgentCard:
    interfaces = [
        pb.AgentInterface(
            url=url, protocol_binding=binding, protocol_version="1.0" if versioned else ""
        )
    ]
    if compat:
        interfaces.append(
            pb.AgentInterface(url=url, protocol_binding=binding, protocol_version="0.3")
        )
    return pb.AgentCard(
        name="sdk-echo",
        description="Echo agent on the official a2a-sdk 1.3.0",
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=push),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            pb.AgentSkill(
                id="echo",
                name="Echo",
                description="Replies with the text",
                tags=["echo", "test"],
                examples=["hello"],
            )
        ],
    )


EXTENSION = "https://toolnexus.example/ext/trace-depth/v1"
"""The extension the featured card requires."""
TENANT = "acme"
BEARER = "sdk-token-1"
"""The token ``enforce=True`` asks for (``Authorization: Bearer``)."""


def featured(agent_card: pb.AgentCard, url: str) -> tuple[pb.AgentCard, pb.AgentCard, dict]:
    """``agent_card`` with every feature a card declares: a required extension, a tenant on every
    interface, an extended card, five security schemes (an API key, HTTP bearer, OAuth 2 client
    credentials, OpenID Connect, mutual TLS) with requirements, input modes for files, and a
    signature (ES256, its key in a JWK set at ``url`` + ``jwks.json``, named by ``jku``). Returns
    the card, the extended card, and the JWK set."""
    from a2a.utils.signing import create_agent_card_signer
    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm
    from jwt.api_jwk import PyJWK

    card = pb.AgentCard()
    card.CopyFrom(agent_card)
    card.capabilities.extensions.append(
        pb.AgentExtension(uri=EXTENSION, required=True, description="a depth every call carries")
    )
    card.capabilities.extended_agent_card = True
    for interface in card.supported_interfaces:
        interface.tenant = TENANT
    schemes = {
        "apikey": pb.SecurityScheme(
            api_key_security_scheme=pb.APIKeySecurityScheme(location="header", name="X-API-Key")
        ),
        "bearer": pb.SecurityScheme(
            http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
                scheme="Bearer", bearer_format="JWT"
            )
        ),
        "oauth": pb.SecurityScheme(
            oauth2_security_scheme=pb.OAuth2SecurityScheme(
                flows=pb.OAuthFlows(
                    client_credentials=pb.ClientCredentialsOAuthFlow(
                        token_url="https://auth.example/token", scopes={"a2a": "call the agent"}
                    )
                )
            )
        ),
        "oidc": pb.SecurityScheme(
            open_id_connect_security_scheme=pb.OpenIdConnectSecurityScheme(
                open_id_connect_url="https://auth.example/.well-known/openid-configuration"
            )
        ),
        "mtls": pb.SecurityScheme(mtls_security_scheme=pb.MutualTlsSecurityScheme()),
    }
    for name, scheme in schemes.items():
        card.security_schemes[name].CopyFrom(scheme)
    for name in ("bearer", "apikey"):
        requirement = card.security_requirements.add()
        requirement.schemes[name].SetInParent()
    card.default_input_modes.extend(["application/pdf", "image/png"])
    extended = pb.AgentCard()
    extended.CopyFrom(card)
    extended.skills.append(
        pb.AgentSkill(
            id="ledger", name="Ledger", description="For callers who signed in", tags=["x"]
        )
    )
    key = ec.generate_private_key(ec.SECP256R1())
    public = json.loads(ECAlgorithm.to_jwk(key.public_key()))
    public.update(kid="card-key-1", use="sig", alg="ES256")
    private = PyJWK(json.loads(ECAlgorithm.to_jwk(key)) | {"kid": "card-key-1"}, "ES256")
    sign = create_agent_card_signer(
        private,
        {"kid": "card-key-1", "alg": "ES256", "jku": url + "jwks.json", "typ": "JOSE"},
    )
    return sign(card), sign(extended), {"keys": [public]}


def takes_anything(card: pb.AgentCard) -> None:
    """A ``shaped`` for :func:`sdk_server`: the echo agent echoes any part, and its card says so
    (our client sends only what a card says the agent takes)."""
    card.default_input_modes.append("*/*")


@contextlib.asynccontextmanager
async def sdk_server(
    *,
    compat: bool = False,
    basic: tuple[str, str] | None = None,
    push: bool = False,
    binding: str = "JSONRPC",
    task_store: TaskStore | None = None,
    features: bool = False,
    enforce: bool = False,
    tenant: str = "",
    token_url: str | None = None,
    oidc_url: str | None = None,
    versioned: bool = True,
    detached: bool = False,
    chunked: bool = False,
    shaped: Callable[[pb.AgentCard], None] | None = None,
    check_modes: bool = False,
    heard: list[dict[str, str]] | None = None,
    tls: Pki | None = None,
) -> AsyncIterator[str]:
    """Serve the script agent on a loopback port; yields its base URL (without a trailing slash).
    ``basic``: JSON-RPC calls need HTTP basic auth with this user and password (the card stays
    public and declares the scheme), as a deployment behind a basic-auth proxy does. ``push``:
    the SDK's own push-notification store and sender, the card saying so. ``binding="HTTP+JSON"``:
    the SDK's REST routes instead of JSON-RPC, the only interface on its card; ``binding="GRPC"``:
    the SDK's gRPC handler on a port of its own, the card (still served over HTTP) listing only it
    (with ``compat``, 0.3's gRPC service too, listed after 1.0's).
    ``task_store``: the SDK's own store to keep tasks in (default: its in-memory one).
    ``features``: the card declares every feature a card can (:func:`featured`: signed, a
    required extension, a tenant, an extended card, five security schemes), push on; the SDK
    serves them as it does (it enforces neither the extension nor the schemes). ``enforce``: a
    proxy in front asks for ``Authorization: Bearer`` :data:`BEARER` on every POST and on the
    extended card's REST route, as a deployment behind an auth proxy does. ``tenant``: every
    interface on the card names it (the SDK serves its REST routes under ``/{tenant}/`` too).
    ``token_url``: the card declares OAuth 2 client credentials at that token endpoint, ``oidc_url``: OpenID Connect at
    that discovery URL; either enforces the bearer token as ``enforce`` does. ``versioned=False``:
    the card's interface names no protocolVersion, as Microsoft Agent Framework's hosting builds
    it (agent-framework-a2a 1.0.0b261022): the SDK's card route then writes 0.3's ``url`` and
    ``protocolVersion "0.3"`` too, while its routes answer 1.0 only (without ``compat``).
    ``detached``: the executor makes the task and returns, its work left to run elsewhere (never
    done here), so that a blocking send is answered with the task ``submitted``. ``chunked``: every
    reply is streamed as three appends, the last with ``lastChunk`` (as "chunked" ones are).
    ``shaped``: called with the card before it is served, to give it more (as the SDK serves it).
    ``check_modes``: the SDK refuses a part whose media type no mode on the card names (as
    ``features`` does). ``heard``: each POST's headers are added to it (as the server got them).
    ``tls``: served over TLS with the server certificate of that PKI, a client certificate its
    CA signed required (mutual TLS: uvicorn's, or grpcio's with ``grpcs://`` on the card)."""
    enforce = enforce or token_url is not None or oidc_url is not None
    holder: dict[str, AsgiServer] = {}
    app = Starlette()
    front = app
    if enforce:

        async def front(scope, receive, send):  # type: ignore[no-untyped-def]
            given = dict(scope.get("headers") or []).get(b"authorization")
            guarded = scope["type"] == "http" and (
                scope["method"] == "POST" or scope["path"].endswith("extendedAgentCard")
            )
            if guarded and given != f"Bearer {BEARER}".encode():
                refusal = JSONResponse(
                    {"error": "a bearer token is required"},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="a2a"'},
                )
                return await refusal(scope, receive, send)
            return await app(scope, receive, send)

    if basic is not None:
        expected = (
            "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
        ).encode()

        async def front(scope, receive, send):  # type: ignore[no-untyped-def]
            given = dict(scope.get("headers") or []).get(b"authorization")
            if scope["type"] == "http" and scope["method"] == "POST" and given != expected:
                refusal = JSONResponse(
                    {"error": "basic auth required"},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Basic realm="a2a"'},
                )
                return await refusal(scope, receive, send)
            return await app(scope, receive, send)

    if heard is not None:
        inner = front

        async def front(scope, receive, send):  # type: ignore[no-untyped-def]
            if scope["type"] == "http" and scope["method"] == "POST":
                heard.append({k.decode(): v.decode() for k, v in scope.get("headers") or []})
            return await inner(scope, receive, send)

    options = {}
    if tls is not None:
        import ssl

        options = {
            "ssl_certfile": str(tls.server_cert),
            "ssl_keyfile": str(tls.server_key),
            "ssl_ca_certs": str(tls.ca),
            "ssl_cert_reqs": ssl.CERT_REQUIRED,
        }
    server = AsgiServer(front, **options)
    holder["s"] = server
    # the card needs the port, known only once bound: bind first, then add the routes
    await server.start()
    base = server.url.replace("http://", "https://") if tls is not None else server.url
    url = base + "/"
    grpc_server = None
    if binding == "GRPC":
        import grpc
        from a2a.server.request_handlers import GrpcHandler
        from a2a.types import a2a_pb2_grpc

        grpc_server = grpc.aio.server()
        if tls is None:
            url = f"127.0.0.1:{grpc_server.add_insecure_port('127.0.0.1:0')}"
        else:
            credentials = grpc.ssl_server_credentials(
                [(tls.server_key.read_bytes(), tls.server_cert.read_bytes())],
                root_certificates=tls.ca.read_bytes(),
                require_client_auth=True,
            )
            url = f"grpcs://127.0.0.1:{grpc_server.add_secure_port('127.0.0.1:0', credentials)}"
    agent_card = card(
        url, compat=compat, push=push or features, binding=binding, versioned=versioned
    )
    extended_card, jwks = None, None
    if features:
        agent_card, extended_card, jwks = featured(agent_card, url)
        push = True
    for interface in agent_card.supported_interfaces if tenant else ():
        interface.tenant = tenant
    if token_url is not None:
        flow = pb.ClientCredentialsOAuthFlow(token_url=token_url, scopes={"a2a": "call it"})
        agent_card.security_schemes["oauth"].CopyFrom(
            pb.SecurityScheme(
                oauth2_security_scheme=pb.OAuth2SecurityScheme(
                    flows=pb.OAuthFlows(client_credentials=flow)
                )
            )
        )
    if oidc_url is not None:
        agent_card.security_schemes["oidc"].CopyFrom(
            pb.SecurityScheme(
                open_id_connect_security_scheme=pb.OpenIdConnectSecurityScheme(
                    open_id_connect_url=oidc_url
                )
            )
        )
    if basic is not None:
        agent_card.security_schemes["basic"].CopyFrom(
            pb.SecurityScheme(http_auth_security_scheme=pb.HTTPAuthSecurityScheme(scheme="Basic"))
        )
    if shaped is not None:
        shaped(agent_card)
    push_http = httpx.AsyncClient(timeout=5)
    push_store = InMemoryPushNotificationConfigStore() if push else None
    handler = DefaultRequestHandlerV2(
        agent_executor=ScriptExecutor(detached=detached, chunked=chunked),
        task_store=task_store or InMemoryTaskStore(),
        agent_card=agent_card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(push_http, push_store) if push else None,
        extended_agent_card=extended_card,
        validate_input_modes=features or check_modes,
    )
    served = (
        create_rest_routes(handler, enable_v0_3_compat=compat)
        if binding == "HTTP+JSON"
        else []
        if binding == "GRPC"
        else create_jsonrpc_routes(handler, "/", enable_v0_3_compat=compat)
    )
    if grpc_server is not None:
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
        if compat:  # 0.3's service beside it, as the SDK serves it (a2a.v1.A2AService)
            from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc
            from a2a.compat.v0_3.grpc_handler import CompatGrpcHandler

            a2a_v0_3_pb2_grpc.add_A2AServiceServicer_to_server(
                CompatGrpcHandler(handler), grpc_server
            )
        await grpc_server.start()
    for route in create_agent_card_routes(agent_card) + served:
        app.router.routes.append(route)
    if jwks is not None:
        keys = jwks
        app.router.routes.append(Route("/jwks.json", lambda request: JSONResponse(keys)))
    try:
        yield base
    finally:
        await server.stop()
        if grpc_server is not None:
            await grpc_server.stop(0)
        await push_http.aclose()


HOOK = "http://127.0.0.1:9/hook"


async def follow_the_script(client, hello: str):  # type: ignore[no-untyped-def]
    """Our client (an ``A2AClient`` on any binding) through every behaviour of the script agent:
    an echo and its GetTask, a reply streamed as appends, a question answered on the same task, a
    cancel, an unknown task, a finished task that cannot be canceled, a push config set, listed,
    read with and without its id, deleted. Returns the echo's task."""
    import pytest

    from toolnexus.errors import TaskNotCancelableError, TaskNotFoundError
    from toolnexus.protocol.model import TaskState

    task = await client.send(hello, blocking=True)
    assert task.state is TaskState.COMPLETED and task.reply == f"echo: {hello}"
    got = await client.get(task.id)
    assert got.state is TaskState.COMPLETED and got.reply == f"echo: {hello}"
    streamed = [t async for t in client.stream("chunked reply please")]
    assert (
        streamed[-1].state is TaskState.COMPLETED
        and streamed[-1].reply == "echo: chunked reply please"
    )
    question = await client.send("a question", blocking=True)
    assert question.state is TaskState.INPUT_REQUIRED
    answered = await client.send(
        "blue", task_id=question.id, context_id=question.context_id, blocking=True
    )
    assert answered.reply == "answered: blue"
    slow = await client.send("slow")
    assert (await client.cancel(slow.id)).state is TaskState.CANCELED
    with pytest.raises(TaskNotFoundError):  # the binding's error, read back as the A2A error
        await client.get("no-such-task")
    with pytest.raises(TaskNotCancelableError):
        await client.cancel(task.id)
    config = await client.set_push(task.id, HOOK, token="tok-script")
    assert [c.id for c in await client.list_push(task.id)] == [config.id]
    assert (await client.get_push(task.id, config.id)).url == HOOK
    assert (await client.get_push(task.id)).id == config.id  # no id: its first, as over JSON-RPC
    await client.delete_push(task.id, config.id)
    assert await client.list_push(task.id) == []
    return task
