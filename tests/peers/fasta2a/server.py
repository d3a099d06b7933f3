"""pydantic's fasta2a server (``fasta2a.pydantic_ai.agent_to_a2a``; pydantic-ai 2 removed
``agent.to_a2a()``) as a real A2A server (its venv: see ../field.py), a pydantic-ai agent on the
field's stub model through its OpenAI provider.

Usage: python server.py '{"model": MODEL_URL}'; prints its URL, serves until killed.
"""

import sys
from pathlib import Path

from fasta2a.pydantic_ai import agent_to_a2a
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

sys.path.append(str(Path(__file__).parent.parent))
from field_script import serve, spec  # noqa: E402

SPEC = spec()


def build(url: str):
    provider = OpenAIProvider(base_url=SPEC["model"] + "/v1", api_key="stub")
    agent = Agent(OpenAIChatModel("stub-model", provider=provider), name="fasta2a-echo")
    return agent_to_a2a(agent, url=url, name="fasta2a-echo", description="Echoes what it is told.")


serve(build)
