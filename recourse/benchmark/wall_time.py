"""A run's wall time as segments, from its timing log: what the results pages read
(``{"how", "segments": [{"start", "end", "paused_minutes"}]}``) and add up (:func:`segment_seconds`).

The log has a line per moment: ``segment start <ISO time>`` when a launch begins, ``pause <time>``
and ``resume <time>`` around a SIGSTOP (while tests ran beside it), and the run's last segment
ends when its record was written (the record's mtime, or a given end). A segment cut by a
session's end closes at the log's last moment before the next start (``cut <time>`` says when
it was cut). ``recourse run-segments`` writes the segments of a log.
"""

from __future__ import annotations

from datetime import datetime, timezone


def _utc(moment: datetime) -> datetime:
    """``moment`` as a naive UTC time: a log may give its times with an offset (``+00:00``) or without."""
    return moment if moment.tzinfo is None else moment.astimezone(timezone.utc).replace(tzinfo=None)


def segments_of(lines: list[str], end: datetime) -> list[dict]:
    """Each segment's start, end and minutes paused, from the log's lines; ``end`` closes the last."""
    segments: list[dict] = []
    paused_at: datetime | None = None
    for line in filter(None, (line.strip() for line in lines)):
        *words, stamp = line.split()
        moment = _utc(datetime.fromisoformat(stamp))
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
        segments[-1]["end"] = _utc(end)
    if any(s["end"] is None for s in segments):
        raise ValueError("a segment before the last has no 'cut' line")
    return [{"start": s["start"].isoformat(timespec="seconds"), "end": s["end"].isoformat(timespec="seconds"),
             "paused_minutes": round(s["paused_minutes"], 2)} for s in segments]


def segment_seconds(segments: dict) -> float:
    """Wall seconds of a resumed run: each segment's end − start, less its pauses."""
    return sum((datetime.fromisoformat(s["end"]) - datetime.fromisoformat(s["start"])).total_seconds()
               - 60 * s.get("paused_minutes", 0.0) for s in segments["segments"])
