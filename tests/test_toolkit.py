"""Toolkit assembly, config files, adapters and the unknown-tool error."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from toolnexus import ConfigError, SkillDef, Tool, create_toolkit, tool
from toolnexus.builtins import BUILTIN_NAMES

from .helpers import write_skill


def greet(name: str) -> str:
    """Say hello.

    Args:
        name: who to greet.
    """
    return f"hello {name}"


async def test_assembly_order_and_shadowing(tmp_path: Path):
    write_skill(tmp_path / "s", "s", description="a skill")

    @tool
    def bash(command: str) -> str:
        """My own bash."""
        return "mine"

    tk = await create_toolkit(tmp_path, tools=[greet, bash], root=tmp_path)
    names = [t.name for t in tk.tools()]
    assert names == ["skill", "read", "glob", "grep", "write", "edit", "greet", "bash"]
    assert tk.get("bash").source == "function"
    assert (await tk.execute("bash", {"command": "echo hi"})).output == "mine"
    assert (await tk.execute("greet", {"name": "Ada"})).output == "hello Ada"
    assert [s.name for s in tk.skills()] == ["s"]
    assert tk.skills_prompt().endswith("- **s**: a skill")


async def test_duplicate_tool_names_first_wins(caplog: pytest.LogCaptureFixture):
    async def one(args, ctx):
        return "one"

    async def two(args, ctx):
        return "two"

    a = Tool("same", "", {"type": "object"}, one)
    b = Tool("same", "", {"type": "object"}, two)
    with caplog.at_level(logging.WARNING):
        tk = await create_toolkit(tools=[a, b], builtins=False)
    assert [t.name for t in tk.tools()] == ["same"]
    assert (await tk.execute("same", {})).output == "one"
    assert "duplicate tool name 'same'" in caplog.text


async def test_no_skill_tool_without_skills():
    tk = await create_toolkit(builtins=False, tools=[greet])
    assert [t.name for t in tk.tools()] == ["greet"]
    assert tk.skills_prompt() == ""


async def test_data_skills_join_the_skill_tool():
    tk = await create_toolkit(
        builtins=False, skills=[SkillDef("greet", "says hello", "Say a friendly hello.")]
    )
    r = await tk.execute("skill", {"name": "greet"})
    assert "Say a friendly hello." in r.output
    assert "skill://greet/" in r.output


async def test_unknown_tool_suggests_close_names():
    tk = await create_toolkit(builtins=False, tools=[greet])
    r = await tk.execute("gret", {"name": "x"})
    assert r.is_error
    assert r.output == "Unknown tool 'gret'. Did you mean: greet? Available tools: greet"
    r = await tk.execute("zzzzzz")
    assert "Did you mean" not in r.output


@pytest.mark.parametrize(
    "config, expected",
    [
        (True, list(BUILTIN_NAMES)),
        (None, list(BUILTIN_NAMES)),
        (False, []),
        ({"enabled": False}, []),
        ({"disabled": True}, []),
        ({"enabled": True, "disabled": True}, []),
        ({"disabled": False}, list(BUILTIN_NAMES)),
        ({"tools": {"bash": False}}, ["read", "glob", "grep", "write", "edit"]),
        (
            {"tools": {"bash": False, "write": False, "nonsense": False}},
            ["read", "glob", "grep", "edit"],
        ),
    ],
)
async def test_each_builtins_form(config, expected):
    tk = await create_toolkit(builtins=config)
    assert [t.name for t in tk.tools()] == expected


async def test_config_file(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    write_skill(tmp_path / "skills" / "x", "x", description="from config")
    cfg = tmp_path / "toolnexus.json"
    cfg.write_text(
        json.dumps(
            {
                "skills": "skills",
                "builtins": {"tools": {"bash": False}},
                "a2a": {"name": "desk"},
                "typo": 1,
            }
        )
    )
    with caplog.at_level(logging.WARNING):
        tk = await create_toolkit(config=cfg)
    assert [t.name for t in tk.tools()] == ["skill", "read", "glob", "grep", "write", "edit"]
    assert tk.config["a2a"] == {"name": "desk"}
    assert "ignoring unknown keys typo" in caplog.text
    # an explicit argument wins over the file
    tk = await create_toolkit(config=cfg, builtins=False)
    assert [t.name for t in tk.tools()] == ["skill"]
    # a dict works as well
    tk = await create_toolkit(config={"builtins": False, "skills": [str(tmp_path / "skills")]})
    assert [t.name for t in tk.tools()] == ["skill"]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "config file not found"),
        ("{not json", "invalid JSON at line 1, column 2"),
        ("[1, 2]", "a toolkit config must be a JSON object, got list"),
        ('{"skills": 3}', "skills must be a folder path or a list of folder paths"),
        ('{"builtins": "yes"}', "builtins must be true, false or an object"),
    ],
)
async def test_malformed_config_is_a_clear_error(tmp_path: Path, content, message):
    cfg = tmp_path / "bad.json"
    if content is not None:
        cfg.write_text(content)
    with pytest.raises(ConfigError, match=message) as info:
        await create_toolkit(config=cfg)
    if content is not None and "skills" not in content and "builtins" not in content:
        assert str(cfg) in str(info.value)


async def test_adapters():
    @tool
    def f(x: int | None = None, tags: dict[str, int] | None = None) -> str:
        """F."""
        return ""

    tk = await create_toolkit(builtins=False, tools=[f])
    schema = f.input_schema
    assert tk.to_openai() == [
        {"type": "function", "function": {"name": "f", "description": "F.", "parameters": schema}}
    ]
    assert tk.to_anthropic() == [{"name": "f", "description": "F.", "input_schema": schema}]
    (gem,) = tk.to_gemini()
    (decl,) = gem["functionDeclarations"]
    assert decl["name"] == "f"
    params = decl["parameters"]
    assert "additionalProperties" not in json.dumps(params)
    assert params["properties"]["x"] == {"type": "integer", "nullable": True}


async def test_toolkit_is_an_async_context_manager():
    async with await create_toolkit(builtins=False) as tk:
        assert tk.tools() == []


def test_import_toolnexus_imports_no_ui_package():
    code = (
        "import sys, toolnexus, toolnexus.toolkit, toolnexus.skills, toolnexus.builtins\n"
        "bad = [m for m in ('textual', 'IPython', 'ipywidgets', 'ipykernel') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
