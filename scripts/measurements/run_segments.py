"""A run's wall time as segments from its timing log, in the form the results pages read
(``{"how", "segments": [{"start", "end", "paused_minutes"}]}``).

The log has a line per moment: ``segment start <ISO time>`` when a launch begins, ``pause <time>``
and ``resume <time>`` around a SIGSTOP (while tests ran beside it), and the run's last segment
ends when its record was written (the record's mtime, or ``--end``):

    python -m scripts.measurements.run_segments out/bench-primary-rerun/segments.log \\
        --record out/bench-primary-rerun/benchmark.json --how "..." --json assets/results/benchmark-primary-run/rerun-segments.json

A segment cut by a session's end closes at the log's last moment before the next start
(``cut <time>`` says when it was cut).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from pathlib import Path

from scripts.docs.results.default_benchmark import segment_seconds


def segments_of(lines: list[str], end: datetime) -> list[dict]:
    """Each segment's start, end and minutes paused, from the log's lines; ``end`` closes the last."""
    segments: list[dict] = []
    paused_at: datetime | None = None
    for line in filter(None, (line.strip() for line in lines)):
        *words, stamp = line.split()
        moment = datetime.fromisoformat(stamp)
        kind = " ".join(words)
        if kind == "segment start":
            segments.append({"start": moment, "end": None, "paused_minutes": 0.0})
        elif not segments:
            raise ValueError(f"{line!r} comes before any 'segment start'")
        elif kind == "pause":
            paused_at = moment
        elif kind == "resume":
            if paused_at is None:
                raise ValueError(f"{line!r} without a pause before it")
            segments[-1]["paused_minutes"] += (moment - paused_at).total_seconds() / 60
            paused_at = None
        elif kind == "cut":
            segments[-1]["end"] = moment
        else:
            raise ValueError(f"unknown line {line!r}")
    if not segments:
        raise ValueError("the log has no 'segment start'")
    if paused_at is not None:
        raise ValueError("the log ends paused: resume the run before it ends")
    if segments[-1]["end"] is None:
        segments[-1]["end"] = end
    if any(s["end"] is None for s in segments):
        raise ValueError("a segment before the last has no 'cut' line")
    return [{"start": s["start"].isoformat(timespec="seconds"), "end": s["end"].isoformat(timespec="seconds"),
             "paused_minutes": round(s["paused_minutes"], 2)} for s in segments]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="the timing log (segment start / pause / resume / cut lines)")
    parser.add_argument("--record", help="the run's benchmark.json: its mtime ends the last segment")
    parser.add_argument("--end", help="the last segment's end (ISO time, UTC) instead of --record's mtime")
    parser.add_argument("--how", required=True, help="how the run was made and timed, in words")
    parser.add_argument("--json", required=True, help="write the segments here")
    args = parser.parse_args(argv)
    if args.end:
        end = datetime.fromisoformat(args.end)
    elif args.record:
        end = datetime.fromtimestamp(Path(args.record).stat().st_mtime, tz=timezone.utc).replace(tzinfo=None)
    else:
        parser.error("give --record or --end")
    try:
        segments = segments_of(Path(args.log).read_text().splitlines(), end)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    Path(args.json).write_text(json.dumps({"how": args.how, "segments": segments}, indent=2) + "\n")
    hours = segment_seconds({"segments": segments}) / 3600
    print(f"{len(segments)} segment(s), {sum(s['paused_minutes'] for s in segments):.1f} min paused: "
          f"{hours:.2f} h of wall time; wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
