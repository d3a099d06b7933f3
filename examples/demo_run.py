"""Run prompts through the demo model (offline) with the example skills, and print the telemetry.

Run: python examples/demo_run.py ["your prompt" ...]
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import toolnexus as tn

SKILLS = Path(__file__).resolve().parent / "skills"
PROMPTS = [
    "hello there",
    "what's the weather in Oslo?",
    "greet Ada",
    "draft the weekly report",
    "please confirm the order",
]


async def main(prompts: list[str]) -> None:
    tk = await tn.create_toolkit(SKILLS, builtins=False)
    client = tn.demo_client()
    for prompt in prompts:
        print(f"> {prompt}")
        result = await client.run(prompt, tk)
        if result.status == "pending":
            print(f"  pending: {result.pending.prompt}  -> answering 'yes'")
            result = await client.resume(result, tn.Answer(result.pending.id, True, "yes"))
        print(f"  answer: {result.text}")
        telemetry = {
            k: v
            for k, v in result.to_dict().items()
            if k in ("model", "turns", "usage", "tool_call_count")
        }
        telemetry["tools"] = [c["name"] for c in result.tool_calls]
        print("  telemetry:", json.dumps(telemetry))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or PROMPTS))
