"""A toolkit served over stdio whose tools change it, for the tests of what MCP clients are told:
``python -m tests.peers.mcp_changing SKILLS_DIR``. ``grow`` adds a tool, ``reload`` discovers the
skills again (after an edit of their folder), ``count`` reports progress as it counts."""

from __future__ import annotations

import asyncio
import os
import sys

import toolnexus as tn


@tn.tool
async def count(n: int, ctx: tn.ToolContext) -> str:
    """Count to n, a report at each step (slower than progress is sent: each is sent)."""
    for i in range(1, n + 1):
        await ctx.progress(i, n, f"counted {i}")
        await asyncio.sleep(0.15)
    return f"counted to {n}"


async def main(skills: str) -> None:
    tk = await tn.create_toolkit(skills, builtins=False)

    def grown(text: str) -> str:
        """A tool added while the server runs."""
        return text[::-1]

    @tn.tool
    def grow() -> str:
        """Add the tool ``grown``."""
        return ", ".join(t.name for t in tk.add_tool(grown)) or "nothing new"

    @tn.tool
    def reload(touch: str = "") -> str:
        """Discover the skills again; ``touch``: a file of the skills folder to add a line to
        first (as an editor would)."""
        if touch:
            with open(os.path.join(skills, touch), "a", encoding="utf-8") as f:
                f.write("touched\n")
        return ", ".join(s.name for s in tk.reload_skills())

    tk.add_tool(grow, reload, count)
    await tk.serve_stdio()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
