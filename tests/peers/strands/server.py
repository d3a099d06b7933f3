"""AWS Strands' A2AServer as a real A2A server (its venv: see ../field.py), its agent on the field's
stub model through Strands' OpenAI provider, one agent per context (its agent_factory).

Usage: python server.py '{"model": MODEL_URL, "compliant": false}'; prints its URL, serves until
killed. ``compliant``: ``enable_a2a_compliant_streaming`` (its recommended mode: artifact appends).
"""

import sys
from pathlib import Path

from strands import Agent
from strands.models.openai import OpenAIModel
from strands.multiagent.a2a import A2AServer

sys.path.append(str(Path(__file__).parent.parent))
from field_script import serve, spec  # noqa: E402

SPEC = spec()


def build(url: str):
    model = OpenAIModel(
        client_args={"api_key": "stub", "base_url": SPEC["model"] + "/v1"}, model_id="stub-model"
    )

    def agent(context_id: str) -> Agent:
        return Agent(
            model=model,
            name="strands-echo",
            description="Echoes what it is told (the field's stub model).",
            callback_handler=None,
        )

    server = A2AServer(
        agent_factory=agent,
        http_url=url,
        enable_a2a_compliant_streaming=bool(SPEC.get("compliant")),
    )
    return server.to_starlette_app()


serve(build)
