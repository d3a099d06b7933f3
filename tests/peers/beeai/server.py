"""BeeAI's A2AServer (beeai-framework) as a real A2A server (its venv: see ../field.py), a
RequirementAgent on the field's stub model through its OpenAI adapter (LiteLLM).

Usage: python server.py '{"model": MODEL_URL}'; prints its URL, serves until killed. Its serve()
runs uvicorn on a fixed port: here its uvicorn.run hands the app it built to field_script.serve.
"""

import sys
from pathlib import Path
from types import SimpleNamespace

import beeai_framework.adapters.a2a.serve.server as beeai_server
from beeai_framework.adapters.a2a.serve.server import A2AServer
from beeai_framework.adapters.openai.backend.chat import OpenAIChatModel
from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.memory import UnconstrainedMemory

sys.path.append(str(Path(__file__).parent.parent))
from field_script import serve, spec  # noqa: E402

SPEC = spec()
built: dict = {}
beeai_server.uvicorn = SimpleNamespace(run=lambda app, **_: built.setdefault("app", app))


def build(url: str):
    llm = OpenAIChatModel("stub-model", api_key="stub", base_url=SPEC["model"] + "/v1")
    agent = RequirementAgent(llm=llm, memory=UnconstrainedMemory(), name="beeai-echo")
    A2AServer().register(agent, url=url, name="beeai-echo", description="Echoes.").serve()
    return built["app"]


serve(build)
