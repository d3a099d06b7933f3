"""@tool: schemas from hints and docstrings, argument checks, results and failures."""

from __future__ import annotations

import asyncio
import enum
import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest

from toolnexus import Request, Tool, ToolContext, ToolResult, sanitize, tool
from toolnexus.tools import schema_for


def test_sanitize_replaces_everything_outside_the_safe_set():
    assert sanitize("weather-desk") == "weather-desk"
    assert sanitize("my agent.v2/ü") == "my_agent_v2__"
    assert sanitize("a_b-C9") == "a_b-C9"


@pytest.mark.parametrize(
    "hint, schema",
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (Optional[int], {"type": ["integer", "null"]}),  # noqa: UP045  # the older spelling
        (int | None, {"type": ["integer", "null"]}),
        (Literal["c", "f"], {"enum": ["c", "f"], "type": "string"}),
        (Literal[1, 2], {"enum": [1, 2], "type": "integer"}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict, {"type": "object"}),
        (Any, {}),
        (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        (Annotated[str, "the city"], {"type": "string", "description": "the city"}),
    ],
)
def test_schema_for_each_kind_of_hint(hint, schema):
    assert schema_for(hint) == schema


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(enum.IntEnum):
    S = 1
    L = 3


@dataclass
class Point:
    """A point.

    Args:
        x: horizontal.
    """

    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)


class Movie(TypedDict):
    title: str
    year: int


class PartialMovie(TypedDict, total=False):
    title: str


def test_enums_dataclasses_and_typeddicts():
    assert schema_for(Color) == {"enum": ["red", "blue"], "type": "string"}
    assert schema_for(Size) == {"enum": [1, 3], "type": "integer"}
    assert schema_for(Point) == {
        "type": "object",
        "properties": {
            "x": {"type": "integer", "description": "horizontal."},
            "y": {"type": "integer", "default": 0},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["x"],
        "additionalProperties": False,
    }
    assert schema_for(Movie) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["title", "year"],
        "additionalProperties": False,
    }
    assert "required" not in schema_for(PartialMovie)
    assert schema_for(Optional[Point])["type"] == ["object", "null"]  # noqa: UP045  # the older spelling
    assert schema_for(Optional[Color]) == {  # noqa: UP045  # the older spelling
        "anyOf": [{"enum": ["red", "blue"], "type": "string"}, {"type": "null"}]
    }


class Opaque:
    pass


def test_unsupported_hint_is_a_clear_type_error():
    def bad(x: Opaque) -> str:
        return ""

    with pytest.raises(TypeError, match="tool bad, parameter 'x': cannot derive a JSON Schema"):
        tool(bad)
    assert tool(lambda x: x).input_schema == {
        "type": "object",
        "properties": {"x": {}},
        "required": ["x"],
        "additionalProperties": False,
    }


def test_function_schema_from_hints_and_google_docstring():
    @tool
    def weather(
        city: str,
        units: Literal["c", "f"] = "c",
        days: int | None = None,
        where: Point | None = None,
    ) -> str:
        """Report the weather.

        Longer explanation.

        Args:
            city: The city
                to report on.
            units (str): Celsius or Fahrenheit.
            days: How many days.

        Returns:
            A sentence.
        """
        return city

    assert weather.name == "weather"
    assert weather.source == "function"
    assert weather.description == "Report the weather.\n\nLonger explanation."
    s = weather.input_schema
    assert s["required"] == ["city"]
    assert s["additionalProperties"] is False
    assert s["properties"]["city"] == {"type": "string", "description": "The city to report on."}
    assert s["properties"]["units"] == {
        "enum": ["c", "f"],
        "type": "string",
        "description": "Celsius or Fahrenheit.",
        "default": "c",
    }
    assert s["properties"]["days"] == {
        "type": ["integer", "null"],
        "description": "How many days.",
        "default": None,
    }
    assert s["properties"]["where"]["type"] == ["object", "null"]
    assert weather("Oslo") == "Oslo"  # still callable as a function


def test_sphinx_docstring_and_overrides():
    @tool(name="add_numbers", description="Adds.")
    def add(a: int, b: int = 2) -> int:
        """Add.

        :param a: first
        :param int b: second
        """
        return a + b

    assert add.name == "add_numbers"
    assert add.description == "Adds."
    assert add.input_schema["properties"]["a"]["description"] == "first"
    assert add.input_schema["properties"]["b"]["description"] == "second"


async def test_arguments_are_checked_before_the_call():
    calls = []

    @tool
    def f(city: str, n: int = 1, where: Point | None = None, color: Color = Color.RED) -> str:
        calls.append(city)
        return "ok"

    cases = {
        "missing": ({}, "missing required argument 'city'"),
        "type": ({"city": 3}, "invalid argument 'city': 3 is not of type 'string'"),
        "extra": ({"city": "a", "zz": 1}, "unexpected argument 'zz'"),
        "nested": ({"city": "a", "where": {"y": 1}}, "missing required argument 'where.x'"),
        "enum": ({"city": "a", "color": "green"}, "invalid argument 'color'"),
        "bool-is-not-int": ({"city": "a", "n": True}, "invalid argument 'n'"),
    }
    for label, (args, needle) in cases.items():
        r = await f.execute(args)
        assert r.is_error, label
        assert needle in r.output, (label, r.output)
        assert r.output.startswith("f: ")
    r = await f.execute(["not", "an", "object"])  # type: ignore[arg-type]
    assert r.is_error and "must be a JSON object, got array" in r.output
    assert calls == []


async def test_values_are_converted_to_the_hinted_python_types():
    seen: dict[str, Any] = {}

    @tool
    def f(
        p: Point,
        color: Color,
        size: Size,
        pair: tuple[int, str],
        uniq: set[int],
        x: float,
        pts: list[Point] | None = None,
    ) -> str:
        seen.update(p=p, color=color, size=size, pair=pair, uniq=uniq, x=x, pts=pts)
        return "ok"

    r = await f.execute(
        {
            "p": {"x": 1, "tags": ["a"]},
            "color": "blue",
            "size": 3,
            "pair": [1, "a"],
            "uniq": [1, 2],
            "x": 2,
            "pts": [{"x": 5}],
        }
    )
    assert not r.is_error, r.output
    assert seen["p"] == Point(1, 0, ["a"])
    assert seen["color"] is Color.BLUE and seen["size"] is Size.L
    assert seen["pair"] == (1, "a") and seen["uniq"] == {1, 2}
    assert isinstance(seen["x"], float)
    assert seen["pts"] == [Point(5)]


async def test_results_and_errors():
    @tool
    def text() -> str:
        return "plain"

    @tool
    def data() -> dict:
        return {"a": [1, 2], "p": Point(1), "c": Color.RED}

    @tool
    def nothing() -> None:
        return None

    @tool
    def raises() -> str:
        raise ValueError("the city is unknown")

    @tool
    def raises_blank() -> str:
        raise KeyError()

    @tool
    def explicit() -> ToolResult:
        return ToolResult("custom", is_error=True, metadata={"k": 1})

    assert (await text.execute()).output == "plain"
    assert (
        await data.execute()
    ).output == '{"a": [1, 2], "p": {"x": 1, "y": 0, "tags": []}, "c": "red"}'
    assert (await nothing.execute()).output == ""
    r = await raises.execute()
    assert r.is_error and r.output == "the city is unknown"
    r = await raises_blank.execute()
    assert r.is_error and r.output == "KeyError"
    r = await explicit.execute()
    assert r == ToolResult("custom", True, {"k": 1})


async def test_sync_functions_run_off_the_event_loop():
    @tool
    def slow() -> str:
        time.sleep(0.3)
        return "done"

    ticks = 0

    async def ticker():
        nonlocal ticks
        for _ in range(10):
            await asyncio.sleep(0.02)
            ticks += 1

    r, _ = await asyncio.gather(slow.execute(), ticker())
    assert r.output == "done"
    assert ticks == 10


async def test_async_functions_get_the_context():
    got: list[ToolContext] = []

    @tool
    async def f(x: int, ctx: ToolContext) -> str:
        got.append(ctx)
        return str(x * 2)

    assert "ctx" not in f.input_schema["properties"]
    ctx = ToolContext(timeout=5)
    assert (await f.execute({"x": 21}, ctx)).output == "42"
    assert got == [ctx]


async def test_timeout_and_cancellation():
    @tool
    async def sleepy() -> str:
        await asyncio.sleep(10)
        return "late"

    t0 = time.monotonic()
    r = await sleepy.execute({}, ToolContext(timeout=0.1))
    assert r.is_error and r.output == "sleepy: timed out after 0.1s"
    assert time.monotonic() - t0 < 2

    cancel = asyncio.Event()
    asyncio.get_running_loop().call_later(0.1, cancel.set)
    r = await sleepy.execute({}, ToolContext(cancel=cancel))
    assert r.is_error and r.output == "sleepy: canceled"

    r = await sleepy.execute({}, ToolContext(cancel=cancel))  # already set: never starts
    assert r.output == "sleepy: canceled"

    task = asyncio.ensure_future(sleepy.execute({}))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_pending_metadata_round_trips_through_the_wire_names():
    req = Request(id="r1", kind="confirm", prompt="Approve?", expires_at="2026-12-01T00:00:00Z")
    assert req.to_dict() == {
        "id": "r1",
        "kind": "confirm",
        "prompt": "Approve?",
        "expiresAt": "2026-12-01T00:00:00Z",
    }
    assert Request.from_dict(req.to_dict()) == req
    assert ToolResult("", metadata={"pending": req.to_dict()}).pending == req
    assert ToolResult("").pending is None


async def test_plain_tool_object():
    async def handler(args, ctx):
        return args["a"] + 1

    t = Tool(
        "inc",
        "adds one",
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        handler,
        source="mcp",
    )
    assert (await t.execute({"a": 1})).output == "2"
    assert (await t.execute({})).is_error


async def test_a_broken_input_schema_is_an_error_result_not_a_crash():
    from toolnexus import Tool

    async def handler(args, ctx):
        return "ran"

    broken = Tool(
        "broken",
        "a peer's tool with an unusable schema",
        {"type": "object", "properties": {"a": {"type": 5}}},
        handler,
    )
    result = await broken.execute({"a": 1})
    assert result.is_error and "the input schema cannot be used" in result.output
