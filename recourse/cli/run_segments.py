"""``recourse run-segments``: a run's wall time as segments from its timing log
(:mod:`recourse.benchmark.wall_time`), written where the results pages read it.

    recourse run-segments out/bench-primary-rerun/segments.log --record out/bench-primary-rerun/benchmark.json \\
        --how "..." --json assets/results/benchmark-primary-run/rerun-segments.json
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from pathlib import Path


def register(commands) -> None:
    command = commands.add_parser(
        "run-segments", help="a run's wall time as segments from its timing log",
        description="Read a timing log (segment start / pause / resume / cut lines, each with an ISO time) and "
                    "write the run's segments, each with its minutes paused, as the results pages read them; "
                    "the last segment ends at --end or when --record was written.")
    command.add_argument("log", help="the timing log (segment start / pause / resume / cut lines)")
    command.add_argument("--record", help="the run's benchmark.json: its mtime ends the last segment")
    command.add_argument("--end", help="the last segment's end (ISO time, UTC) instead of --record's mtime")
    command.add_argument("--how", required=True, help="how the run was made and timed, in words")
    command.add_argument("--json", required=True, help="write the segments here")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from recourse.benchmark.wall_time import segment_seconds, segments_of

    try:
        if args.end:
            end = datetime.fromisoformat(args.end)
        elif args.record:
            end = datetime.fromtimestamp(Path(args.record).stat().st_mtime, tz=timezone.utc).replace(tzinfo=None)
        else:
            raise ValueError("give --record or --end")
        segments = segments_of(Path(args.log).read_text().splitlines(), end)
    except OSError as error:
        raise ValueError(f"cannot read {error.filename}: {error.strerror}") from None
    Path(args.json).write_text(json.dumps({"how": args.how, "segments": segments}, indent=2) + "\n")
    hours = segment_seconds({"segments": segments}) / 3600
    print(f"{len(segments)} segment(s), {sum(s['paused_minutes'] for s in segments):.1f} min paused: "
          f"{hours:.2f} h of wall time; wrote {args.json}")
    return 0
