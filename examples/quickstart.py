"""Build a toolkit from the example skills and a Python function, and use it.

Run: python examples/quickstart.py
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import toolnexus as tn

SKILLS = Path(__file__).resolve().parent / "skills"


@tn.tool
def convert(celsius: float) -> str:
    """Convert a temperature from Celsius to Fahrenheit.

    Args:
        celsius: the temperature in degrees Celsius.
    """
    return f"{celsius * 9 / 5 + 32:.1f}°F"


async def main() -> None:
    async with await tn.create_toolkit(
        SKILLS, tools=[convert], builtins={"tools": {"bash": False}}
    ) as tk:
        print("tools:", ", ".join(f"{t.name} ({t.source})" for t in tk.tools()))
        print()
        print(tk.skills_prompt())
        print()
        print((await tk.execute("skill", {"name": "weather"})).output)
        print()
        print("convert(17) ->", (await tk.execute("convert", {"celsius": 17})).output)
        print("convert('x') ->", (await tk.execute("convert", {"celsius": "x"})).output)


if __name__ == "__main__":
    asyncio.run(main())
