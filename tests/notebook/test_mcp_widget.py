"""``%toolnexus mcp``: the MCP inspector as a notebook widget, through a real IPython shell,
against the official Python SDK's server written for the tests over stdio (2026-07-28) and the
TypeScript SDK's over HTTP (the handshake era): its tools, a question answered in the widget's
form, a sampling approved with its button, resources (a blob, a template, a subscription's
update), a prompt, the notifications; every peer string escaped; mistakes are one-line errors."""

from __future__ import annotations

import shlex
import sys

import pytest

pytest.importorskip("IPython")
pytest.importorskip("ipywidgets")

from IPython.core.error import UsageError  # noqa: E402

import toolnexus as tn  # noqa: E402

from ..conftest import EXAMPLE_SKILLS  # noqa: E402
from ..helpers import eventually  # noqa: E402
from ..peers import mcp_peers  # noqa: E402
from .test_magics import ip  # noqa: E402, F401 - the shell fixture


def choose(dropdown, label: str) -> None:
    dropdown.value = dict(dropdown.options)[label]


def button(box, description: str):
    return next(
        b
        for row in box.children
        for b in getattr(row, "children", ())
        if getattr(b, "description", "") == description
    )


PY_STDIO = (
    "PYTHONPATH=" + shlex.quote(mcp_peers.ENV["PYTHONPATH"]) + " " + shlex.join(mcp_peers.PY_STDIO)
)
"""The official Python SDK's server written for the tests, as a command line."""


async def test_the_inspector_widget_against_a_stdio_server(ip):  # noqa: F811
    m = ip.run_line_magic("toolnexus", f"mcp -- {PY_STDIO}")
    await m.ready()
    assert not m.error, m.error
    assert "everything-py 1.0.0" in m.status.value and "2026-07-28" in m.status.value
    assert repr(m) == "<MCPWidget (shown above)>"
    assert {label for label, _ in m.tool.options} >= {"add", "greet", "haiku"}

    choose(m.tool, "add")
    m.tool_form.fill(a="2", b="3")
    await m.call()
    assert "structured content" in m.result.value and "&quot;total&quot;: 5" in m.result.value

    choose(m.tool, "greet")  # the server asks: a form above the tabs
    calling = m.call()
    await eventually(lambda: len(m.asking.children) == 4)
    assert "Who are you?" in m.asking.children[0].value
    button(m.asking, "accept").click()  # the required name is empty: said, nothing sent
    assert "fill in the required argument: name" in m.asking.children[3].value
    m.elicitation.fill(name="<b>Ada</b>")
    button(m.asking, "accept").click()
    await calling
    assert "Hello &lt;b&gt;Ada&lt;/b&gt;, 30, who likes blue!" in m.result.value  # escaped

    choose(m.tool, "haiku")  # the server asks our model: approved with the button
    m.tool_form.fill(topic="sea")
    calling = m.call()
    await eventually(lambda: len(m.asking.children) == 5)  # also a box for a reply written
    assert "You are a poet." in m.asking.children[0].value
    m.approve_button.click()
    await calling
    assert "You said: A haiku about sea" in m.result.value and not m.asking.children

    choose(m.resource, "note://logo")
    await m.read()
    assert "image/png, 70 bytes" in m.content.value and "binary: 89 50 4e 47" in m.content.value
    choose(m.resource, "note://items/{item}")
    m.template_form.fill(item="bolt")
    await m.read()
    assert "item bolt" in m.content.value
    choose(m.resource, "note://counter")
    await m.read()
    m.subscribe_button.value = True
    await eventually(lambda: "note://counter" in m.session.subscribed)
    choose(m.tool, "touch")
    await m.call()
    await eventually(lambda: "updated just now" in m.content.value)
    assert "&quot;counter&quot;: 1" in m.content.value

    choose(m.prompt, "review")
    m.prompt_form.fill(code="x = 1", language="go")
    await m.get_prompt()
    assert "Please review this go code" in m.messages.value

    m.roots.value = "/tmp/project"
    await m.declare_roots()
    choose(m.tool, "where")
    await m.call()
    assert "file:///tmp/project" in m.result.value
    await eventually(
        lambda: all(
            method in m.notices.value
            for method in ("elicitation/create", "sampling/createMessage", "roots/list")
        )
    )
    await m.aclose()


async def test_the_widget_against_the_typescript_server_over_http_and_its_mistakes(ip):  # noqa: F811
    with mcp_peers.http_server("ts") as said:
        m = ip.run_line_magic("toolnexus", f"mcp {said['MCP']}")
        await m.ready()
        assert "everything-ts" in m.status.value and "handshake era" in m.status.value
        choose(m.tool, "greet")
        calling = m.call()
        await eventually(lambda: len(m.asking.children) == 4)
        button(m.asking, "decline").click()
        await calling
        assert "you chose to decline" in m.result.value
        report = await m.doctor()  # the doctor on the same server, as HTML
        assert report.failed("error") and "origin" in m.doctor_view.value
        assert "evil.example" in m.doctor_view.value and "<b>1 error" in m.doctor_view.value
        await m.aclose()
    gone = ip.run_line_magic("toolnexus", f"mcp {said['MCP']}")  # the server stopped
    await gone.ready()
    assert gone.error and "ConnectError" in gone.error and "ConnectError" in gone.status.value
    with pytest.raises(UsageError, match="is not NAME: VALUE"):
        ip.run_line_magic("toolnexus", "mcp http://127.0.0.1:1/mcp --header nocolon")
    with pytest.raises(UsageError, match="no command to run"):
        ip.run_line_magic("toolnexus", "mcp -- A=1 B=2")


async def test_the_widget_has_the_controls_of_the_tuis_mcp_mode(ip):  # noqa: F811
    """Issue 60: what the TUI's MCP mode gained (the era chosen, lists a page at a time with the
    server's cursor, ping, the log level, a call cancelled, an MCP App's resource marked, the stdio
    server's stderr) in the notebook's widget, against the low-level SDK server that pages."""
    paged = shlex.join([sys.executable, "-m", "tests.peers.mcp_paged", "stdio"])
    command = f"PYTHONPATH={shlex.quote(mcp_peers.ENV['PYTHONPATH'])} sh -c " + shlex.quote(
        f"echo a-line-on-stderr >&2; exec {paged}"
    )
    m = ip.run_line_magic("toolnexus", f"mcp --era legacy -- {command}")
    await m.ready()
    assert not m.error, m.error
    assert "handshake era" in m.status.value
    assert [label for label, _ in m.tool.options] == ["tool1", "tool2", "tool3"]
    assert m.more["tools"].layout.display is None and "tools-3" in m.more_said["tools"].value
    await m.next_page("tools")
    assert [label for label, _ in m.tool.options][3:] == ["tool4", "tool5", "tool6"]
    while m.more["resources"].layout.display is None:
        await m.next_page("resources")
    assert "[app] ui://paged/app" in dict(m.resource.options)
    choose(m.resource, "[app] ui://paged/app")
    await m.read()
    assert "an MCP App's HTML" in m.content.value

    await m.ping()
    assert "ping answered in" in m.said.value and " ms" in m.status.value
    m.level.value = "warning"
    await eventually(lambda: "log level warning" in m.status.value)
    while m.more["tools"].layout.display is None:
        await m.next_page("tools")
    choose(m.tool, "log")
    await m.call()
    await eventually(lambda: "a warning line" in m.notices.value)
    assert "a debug line" not in m.notices.value

    choose(m.tool, "wait")
    calling = m.call()
    await eventually(lambda: bool(m.session.running))
    assert m.cancel() and "cancelled: " in m.said.value
    await calling
    assert "cancel" in m.result.value
    choose(m.tool, "cancelled")
    await m.call()
    assert "cancelled 1 times" in m.result.value
    assert m.cancel() == [] and "nothing in flight" in m.said.value
    await eventually(lambda: "a-line-on-stderr" in m.stderr.value)
    await m.aclose()


async def test_a_sampling_request_answered_with_a_reply_written_and_a_forms_choices(ip):  # noqa: F811
    m = ip.run_line_magic("toolnexus", f"mcp -- {PY_STDIO}")
    await m.ready()
    choose(m.tool, "greet")  # its question's colour is a choice, its default chosen
    calling = m.call()
    await eventually(lambda: len(m.asking.children) == 4)
    colour = m.elicitation.boxes[2]
    assert [label for label, _ in colour.options] == ["", "red", "green", "blue"]
    assert colour.value == 2
    m.elicitation.fill(name="Ada", colour="green")
    button(m.asking, "accept").click()
    await calling
    assert "who likes green" in m.result.value

    choose(m.tool, "haiku")
    m.tool_form.fill(topic="sea")
    calling = m.call()
    await eventually(lambda: bool(m.asking.children))
    m.send_button.click()  # nothing written: said, nothing sent
    assert "nothing written" in m.asking.children[-1].value
    m.reply_box.value = "<i>waves</i> by hand"
    m.send_button.click()
    await calling
    assert "&lt;i&gt;waves&lt;/i&gt; by hand" in m.result.value and not m.asking.children
    await m.aclose()


async def test_an_argument_is_completed_as_it_is_typed(ip):  # noqa: F811
    """The server's completion/complete offered in the box as it is typed (our /mcp serves the
    weather skill's cities from its table, and a skill's files for its template)."""
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    async with await tk.serve(mcp=True) as served:
        m = ip.run_line_magic("toolnexus", f"mcp {served.mcp_url}")
        await m.ready()
        choose(m.prompt, "weather")
        city, unit = m.prompt_form.boxes[:2]
        city.value = "Li"
        await eventually(lambda: "Lisbon" in city.options)
        unit.value = "f"
        await eventually(lambda: list(unit.options) == ["fahrenheit"])
        city.value, unit.value = "Lisbon", "fahrenheit"
        await m.get_prompt()
        assert "Lisbon" in m.messages.value and "fahrenheit" in m.messages.value
        choose(m.resource, "skill://weather/{+path}")
        [path] = m.template_form.boxes
        path.value = "ref"
        await eventually(lambda: any(o.startswith("reference/") for o in path.options))
        await m.aclose()
