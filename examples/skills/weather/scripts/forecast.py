"""Print the weather for a city from ../reference/climate.csv (offline, deterministic)."""

import csv
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "reference" / "climate.csv"


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if not args:
        print("usage: forecast.py CITY [--fahrenheit]", file=sys.stderr)
        return 2
    city = " ".join(args).strip().lower()
    with TABLE.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["city"].lower() == city:
                temp = float(row["celsius"])
                unit = "°C"
                if "--fahrenheit" in argv:
                    temp, unit = temp * 9 / 5 + 32, "°F"
                print(f"{row['city']}: {row['condition']}, {temp:.0f}{unit}")
                return 0
    print(f"unknown city: {city}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
