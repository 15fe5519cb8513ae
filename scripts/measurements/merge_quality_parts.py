"""One test-run file from parts measured by several processes, each on some of the attributes
(``scripts/measurements/quality_visible.py --attributes ...``), on the same faces and settings.

    python -m scripts.measurements.merge_quality_parts out/qv/part-a.json out/qv/part-b.json \\
        --json assets/results/quality-visible-test.json

Parts that differ in split, faces, stops or settings are refused; the merged file keeps each
part's command (``commands``), and its ``command`` is this merge's.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

SHARED = ("split", "n", "stops", "settings", "threads")


def merged(parts: list[dict], command: str) -> dict:
    """The parts' rows in one record, or ValueError where they were not made alike."""
    if not parts:
        raise ValueError("no parts to merge")
    first = parts[0]
    for part in parts[1:]:
        differing = [key for key in SHARED if part.get(key) != first.get(key)]
        if differing:
            raise ValueError(f"the parts differ in {', '.join(differing)}: they are not one run")
    names = [row["attribute"] for part in parts for row in part["attributes"] if row["stop"] == "visible"]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"attributes measured in more than one part: {', '.join(repeated)}")
    return {"command": command, "commands": [part["command"] for part in parts],
            "date": max(part["date"] for part in parts), **{key: first[key] for key in SHARED},
            "seconds_this_run": round(sum(part["seconds_this_run"] for part in parts), 1),
            "attributes": [row for part in parts for row in part["attributes"]]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("parts", nargs="+")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    command = "python -m scripts.measurements.merge_quality_parts " + shlex.join(sys.argv[1:] if argv is None else argv)
    try:
        record = merged([json.loads(Path(part).read_text()) for part in args.parts], command)
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"cannot merge: {error}")
    Path(args.json).write_text(json.dumps(record, indent=2, allow_nan=False) + "\n")
    print(f"written {args.json}: {len(record['attributes']) // 2} attributes on {record['n']} faces")


if __name__ == "__main__":
    main()
