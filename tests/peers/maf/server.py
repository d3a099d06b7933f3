"""Microsoft Agent Framework's A2A hosting (agent-framework-a2a's A2AExecutor on the a2a-sdk 1.3
server, as its docstring sets it up) as a real A2A server (its venv: see ../field.py), its agent on
the field's stub model through agent-framework-openai's chat-completions client, streaming.

Usage: python server.py '{"model": MODEL_URL}'; prints its URL, serves until killed.
"""

import sys
from pathlib import Path

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface
from agent_framework_a2a import A2AExecutor
from agent_framework_openai import OpenAIChatCompletionClient
from starlette.applications import Starlette

sys.path.append(str(Path(__file__).parent.parent))
from field_script import serve, spec  # noqa: E402

SPEC = spec()


def build(url: str) -> Starlette:
    card = AgentCard(
        name="maf-echo",
        description="Echoes what it is told (the field's stub model).",
        version="1.0.0",
        default_input_modes=["text"],
        default_output_modes=["text"],
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[AgentInterface(url=url + "/", protocol_binding="JSONRPC")],
        skills=[],
    )
    chat = OpenAIChatCompletionClient(
        model="stub-model", api_key="stub", base_url=SPEC["model"] + "/v1"
    )
    agent = chat.as_agent(name="maf-echo", instructions="Echo.")
    handler = DefaultRequestHandler(
        agent_executor=A2AExecutor(agent, stream=True),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])


serve(build)
