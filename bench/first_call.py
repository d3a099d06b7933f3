"""Benchmark: the first call of a tool with a schema against its tenth, and the validators compared.

Each measurement runs in a fresh interpreter (imports are the subject). Printed:

- ``toolnexus``: the first and the tenth ``Tool.execute`` of a small ``@tool`` (target: the first
  costs no more than the tenth plus 50 ms);
- per validator installed (``jsonschema-rs``, which toolnexus uses, ``jsonschema`` and
  ``fastjsonschema`` when present): import, compile and first validation, then the mean of 10,000
  validations of the same arguments.

Run: python bench/first_call.py [--runs 5]   (medians of the runs)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
        "units": {"enum": ["metric", "imperial"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}
ARGS = {"city": "Lisbon", "days": 3, "units": "metric"}

TOOL = """
import asyncio, json, time
t0 = time.perf_counter()
import toolnexus as tn
@tn.tool
def forecast(city: str, days: int = 1) -> str:
    '''The forecast.'''
    return city
async def main():
    times = []
    for i in range(10):
        t = time.perf_counter()
        await forecast.execute({"city": "Lisbon", "days": i + 1})
        times.append((time.perf_counter() - t) * 1000)
    print(json.dumps({"first": times[0], "tenth": times[9]}))
asyncio.run(main())
"""

VALIDATORS = {
    "jsonschema-rs": (
        "import jsonschema_rs",
        "v = jsonschema_rs.validator_for(SCHEMA)",
        "v.is_valid(ARGS)",
    ),
    "jsonschema": (
        "import jsonschema",
        "v = jsonschema.Draft202012Validator(SCHEMA)",
        "v.is_valid(ARGS)",
    ),
    "fastjsonschema": ("import fastjsonschema", "v = fastjsonschema.compile(SCHEMA)", "v(ARGS)"),
}

VALIDATOR = """
import json, time
SCHEMA, ARGS = json.loads({schema!r}), json.loads({args!r})
t = time.perf_counter()
{imp}
{make}
{check}
first = (time.perf_counter() - t) * 1000
t = time.perf_counter()
for _ in range(10000):
    {check}
print(json.dumps({{"first": first, "each_us": (time.perf_counter() - t) * 100}}))
"""


def run(code: str) -> dict | None:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tool = [run(TOOL) for _ in range(args.runs)]
    first = statistics.median(t["first"] for t in tool if t)
    tenth = statistics.median(t["tenth"] for t in tool if t)
    print(
        f"toolnexus tool call: first {first:.2f} ms, tenth {tenth:.3f} ms "
        f"(target: first <= tenth + 50 ms: {'met' if first <= tenth + 50 else 'NOT met'})"
    )
    print(
        "\n| validator | import + compile + first check (ms) | each check after (µs) |\n|---|---|---|"
    )
    for name, (imp, make, check) in VALIDATORS.items():
        code = VALIDATOR.format(
            schema=json.dumps(SCHEMA), args=json.dumps(ARGS), imp=imp, make=make, check=check
        )
        results = [r for r in (run(code) for _ in range(args.runs)) if r]
        if not results:
            print(f"| {name} | not installed | |")
            continue
        print(
            f"| {name} | {statistics.median(r['first'] for r in results):.1f} | "
            f"{statistics.median(r['each_us'] for r in results):.2f} |"
        )


if __name__ == "__main__":
    main()
