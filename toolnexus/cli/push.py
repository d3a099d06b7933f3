"""``toolnexus push set|get|list|delete``: where an agent POSTs a task's changes."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..display import printable
from .following import _talking
from .options import _command, _peer_options
from .output import EXIT_OK, UsageError, say
from .peer import _client, _out, _trace
from .values import _env_secret


def _push_parser(sub: Any) -> None:
    p = _command(
        sub,
        "push",
        "set, read, list or delete where an agent POSTs a task's changes (push notifications)",
        "toolnexus push set URL TASK_ID https://hooks.example.com/a2a --token-env HOOK_TOKEN",
        "toolnexus push list URL TASK_ID --json",
        "toolnexus push get URL TASK_ID [CONFIG_ID]",
        "toolnexus push delete URL TASK_ID CONFIG_ID",
    )
    verbs = p.add_subparsers(dest="verb", required=True, metavar="{set,get,list,delete}")
    put = _command(
        verbs,
        "set",
        "have the agent POST every change of the task to this webhook",
        "HOOK_TOKEN=s3cret toolnexus push set URL TASK_ID https://hooks.example.com/a2a "
        "--token-env HOOK_TOKEN",
    )
    get = _command(
        verbs,
        "get",
        "a config of the task (its first without an id)",
        "toolnexus push get URL TASK_ID CONFIG_ID",
    )
    listed = _command(
        verbs, "list", "every config of the task", "toolnexus push list URL TASK_ID --json"
    )
    delete = _command(
        verbs,
        "delete",
        "stop notifying a config's webhook",
        "toolnexus push delete URL TASK_ID CONFIG_ID",
    )
    for verb in (put, get, listed, delete):
        verb.add_argument("url", help="the agent's card URL or base URL")
        verb.add_argument("task", help="the task's id")
    put.add_argument("webhook", help="the http(s) URL the agent POSTs to")
    put.add_argument("--id", help="the config's id (default: the agent makes one)")
    put.add_argument(
        "--token-env",
        metavar="NAME",
        help="the token the agent sends back with each notification, read from this variable",
    )
    put.add_argument(
        "--auth-scheme", metavar="SCHEME", help="the Authorization scheme of each notification"
    )
    put.add_argument(
        "--credentials-env",
        metavar="NAME",
        help="with --auth-scheme: the credentials, read from this variable",
    )
    get.add_argument("config", nargs="?", help="the config's id")
    delete.add_argument("config", help="the config's id")
    for verb in (put, get, listed, delete):
        _peer_options(verb, timeout=30.0, follows=False)


async def _push(args: argparse.Namespace) -> int:
    """``toolnexus push set|get|list|delete``."""
    setting: dict[str, Any] = {}
    if args.verb == "set":
        if not args.webhook.startswith(("http://", "https://")):
            raise UsageError(
                f"the webhook must be an http:// or https:// URL, not {args.webhook!r}"
            )
        if bool(args.auth_scheme) != bool(args.credentials_env):
            raise UsageError("--auth-scheme and --credentials-env go together")
        setting = {
            "config_id": args.id,
            "token": _env_secret("--token-env", args.token_env) if args.token_env else None,
            "scheme": args.auth_scheme,
            "credentials": _env_secret("--credentials-env", args.credentials_env)
            if args.credentials_env
            else None,
        }
    client = _client(args, args.timeout)
    configs: list[Any] = []

    async def work() -> None:
        if args.verb == "set":
            configs.append(await client.set_push(args.task, args.webhook, **setting))
        elif args.verb == "get":
            configs.append(await client.get_push(args.task, args.config))
        elif args.verb == "list":
            configs.extend(await client.list_push(args.task))
        else:
            await client.delete_push(args.task, args.config)

    code = await _talking(args, client, None, work)
    if code == EXIT_OK:
        _pushed(args, client, configs)
    if args.trace:
        _trace(client)
    return code


def _pushed(args: argparse.Namespace, client: Any, configs: list[Any]) -> None:
    """What ``push`` did: each config (its token and credentials never shown), or the deletion."""
    shown = [
        {
            "id": c.id,
            "task": c.task_id,
            "url": c.url,
            "token": bool(c.token),
            "scheme": c.scheme,
        }
        for c in configs
    ]
    if args.json:
        if args.verb == "delete":
            print(json.dumps({"deleted": args.config, "task": args.task}))
        else:
            print(json.dumps({"configs": shown} if args.verb == "list" else shown[0]))
        return
    if args.verb == "delete":
        say(f"deleted push config {printable(args.config)} of task {printable(args.task)}")
    for c in shown:
        _out(
            client,
            f"{c['id']}  {c['url']}"
            + ("  (token set)" if c["token"] else "")
            + (f"  (auth {c['scheme']})" if c["scheme"] else ""),
        )
    if args.verb == "list" and not shown:
        say(f"task {printable(args.task)} has no push config", file=sys.stderr)
