"""Check a benchmark run against a second run on other tasks: do its values and claims hold?

The second run starts at another ``--first-task``: is each family value and paired difference
of one run inside the other's 95% interval, and do the first run's claims (paired differences
whose interval excludes zero) hold in the second?

    python -m scripts.measurements.replicate assets/archive/benchmark.json out/bench-second/benchmark.json \
        [--json assets/archive/benchmark-replication.json]

Prints the claims on all attributes with both runs' values, and the counts over every group;
``--json`` writes every comparison.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from recourse.benchmark.replication import replications, summarise
from recourse.benchmark.run import BenchmarkResult


def _shown(value: tuple[float, float, float]) -> str:
    return f"{value[0]:+.3g} [{value[1]:.3g}, {value[2]:.3g}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", help="benchmark.json of the first run")
    parser.add_argument("second", help="benchmark.json of the second run")
    parser.add_argument("--json", help="write every comparison and the counts here")
    args = parser.parse_args(argv)
    first, second = (BenchmarkResult.from_dict(json.loads(Path(p).read_text())) for p in (args.first, args.second))
    found = replications(first, second)
    summary = summarise(found)
    print("| family − reference | group | metric | first run | second run | second in first's interval | holds |")
    print("|---|---|---|---|---|---|---|")
    for d in found:
        if d.reference and d.claim and d.group == "all":
            print(f"| {d.family} − {d.reference} | {d.group} | {d.metric} | {_shown(d.first)} | {_shown(d.second)} "
                  f"| {'yes' if d.second_inside_first else 'no'} | {'yes' if d.held else 'no'} |")
    print(f"\ncompared {summary.compared} values (family values, paired differences and the sweep): the second "
          f"run's value is inside the first's interval for {summary.second_inside_first}, the first's inside the second's for "
          f"{summary.first_inside_second}")
    print(f"claims of the first run (paired intervals excluding 0): {summary.claims}; held in the second run: "
          f"{summary.claims_held}; second run's value inside the first's interval: {summary.claims_second_inside_first}")
    if args.json:
        command = "python -m scripts.measurements.replicate " + shlex.join(sys.argv[1:] if argv is None else argv)
        record = {"command": command, "first": {"file": args.first, "command": first.command, "n": first.n,
                            "first_task": first.settings.get("first_task", 0)},
                  "second": {"file": args.second, "command": second.command, "n": second.n,
                             "first_task": second.settings.get("first_task", 0)},
                  "summary": summary.to_dict(), "values": [d.to_dict() for d in found]}
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
