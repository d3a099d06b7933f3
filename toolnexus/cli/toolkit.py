"""The toolkit the command line describes (``serve``, ``mcp``): its skills, config, agents and the
Python functions ``--tools`` names."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
from pathlib import Path
from typing import Any

import toolnexus as tn

from ..hosting import EXAMPLE_SKILLS
from .output import UsageError


def _functions(specs: list[str] | None) -> list[Any]:
    """The functions ``--tools`` names: ``MODULE:NAME,NAME`` or ``path/file.py:NAME``; a module
    alone gives what its ``__all__`` lists."""

    out: list[Any] = []
    for spec in specs or []:
        where, _, names = spec.rpartition(":") if ":" in spec else (spec, "", "")
        try:
            if where.endswith(".py"):
                path = Path(where).expanduser()
                loader = importlib.util.spec_from_file_location(path.stem, path)
                if loader is None or loader.loader is None or not path.is_file():
                    raise UsageError(f"--tools {spec}: no Python file at {path}")
                module = importlib.util.module_from_spec(loader)
                loader.loader.exec_module(module)
            else:
                module = importlib.import_module(where)
        except UsageError:
            raise
        except (
            Exception
        ) as exc:  # the user's module failed to import: say which and why, on one line
            raise UsageError(
                f"--tools {spec}: cannot import {where}: {type(exc).__name__}: {exc}"
            ) from None
        wanted = (
            [n for n in names.split(",") if n] if names else list(getattr(module, "__all__", []))
        )
        if not wanted:
            raise UsageError(
                f"--tools {spec}: name the functions ({where}:FUNCTION), or list them in its __all__"
            )
        for name in wanted:
            fn = getattr(module, name, None)
            if inspect.isroutine(fn):
                out.append(fn)
            elif names:  # named, and not a function (a class, a constant, nothing)
                raise UsageError(f"--tools {spec}: {where} has no function {name!r}")
    return out


async def _toolkit(args: argparse.Namespace) -> tuple[Any, bool]:
    """The toolkit the command line describes, and whether it is the demo (no toolkit option given:
    the example skills). A bad option is a usage error."""

    demo = not (args.config or args.skills or args.tools or args.agent)
    skills = args.skills or ([str(EXAMPLE_SKILLS)] if demo and EXAMPLE_SKILLS.is_dir() else [])
    try:
        return await tn.create_toolkit(
            skills,
            builtins=args.builtins,
            config=args.config,
            tools=_functions(args.tools),
            agents=[tn.Agent(card=url) for url in args.agent or []],
        ), demo
    except tn.ConfigError as exc:
        raise UsageError(str(exc)) from None
