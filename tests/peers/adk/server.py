"""Google ADK's A2A server (``to_a2a(agent)``) as a real A2A server (its venv: see ../field.py), an
LlmAgent on the field's stub model through ADK's Gemini model with its ``base_url`` (the stub's
Gemini-API side; a dummy key).

Usage: python server.py '{"model": MODEL_URL}'; prints its URL, serves until killed.
"""

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from google.adk.a2a.utils.agent_to_a2a import to_a2a
from google.adk.agents import LlmAgent
from google.adk.models.google_llm import Gemini

sys.path.append(str(Path(__file__).parent.parent))
from field_script import serve, spec  # noqa: E402

SPEC = spec()
os.environ["GOOGLE_API_KEY"] = "stub"
os.environ.pop("GOOGLE_GENAI_USE_VERTEXAI", None)


def build(url: str):
    model = Gemini(model="gemini-2.5-flash", base_url=SPEC["model"])
    agent = LlmAgent(name="adk_echo", model=model, instruction="Echo what you are told.")
    where = urlsplit(url)
    return to_a2a(agent, host=where.hostname or "127.0.0.1", port=where.port or 80)


serve(build)
