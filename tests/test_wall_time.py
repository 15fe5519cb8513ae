"""A run's wall time from its timing log (recourse/benchmark/wall_time.py, ``recourse run-segments``)."""

from datetime import datetime

import pytest

from recourse.benchmark.wall_time import segment_seconds, segments_of
from recourse.cli import main

LOG = ["segment start 2026-12-06T10:00:00", "pause 2026-12-06T10:20:00", "resume 2026-12-06T10:30:00",
       "cut 2026-12-06T11:00:00", "", "segment start 2026-12-07T09:00:00", "pause 2026-12-07T09:10:00",
       "resume 2026-12-07T09:11:30"]


def test_segments_add_up_their_spans_less_their_pauses():
    segments = segments_of(LOG, end=datetime(2026, 12, 7, 10, 0))
    assert segments == [{"start": "2026-12-06T10:00:00", "end": "2026-12-06T11:00:00", "paused_minutes": 10.0},
                        {"start": "2026-12-07T09:00:00", "end": "2026-12-07T10:00:00", "paused_minutes": 1.5}]
    assert segment_seconds({"segments": segments}) == (50 + 58.5) * 60  # the page reads them the same way


def test_times_with_an_offset_read_as_utc_beside_a_naive_end():
    # scripts/chores/placement_run.sh writes `date -u +...+00:00`; the record's mtime is a naive UTC time
    lines = ["segment start 2026-12-07T14:00:00+00:00", "cut 2026-12-07T15:00:00+00:00",
             "segment start 2026-12-07T17:00:00+01:00"]
    segments = segments_of(lines, end=datetime(2026, 12, 7, 16, 30))
    assert segments == [{"start": "2026-12-07T14:00:00", "end": "2026-12-07T15:00:00", "paused_minutes": 0.0},
                        {"start": "2026-12-07T16:00:00", "end": "2026-12-07T16:30:00", "paused_minutes": 0.0}]
    assert segment_seconds({"segments": segments}) == 90 * 60


@pytest.mark.parametrize("lines, message", [
    (["pause 2026-12-06T10:00:00"], "before any 'segment start'"),
    (["segment start 2026-12-06T10:00:00", "resume 2026-12-06T10:01:00"], "without a pause"),
    (["segment start 2026-12-06T10:00:00", "pause 2026-12-06T10:01:00"], "ends paused"),
    (["segment start 2026-12-06T10:00:00", "segment start 2026-12-06T11:00:00"], "no 'cut' line"),
    (["segment start 2026-12-06T10:00:00", "stopped 2026-12-06T10:01:00"], "unknown line"),
    ([], "no 'segment start'"),
])
def test_a_log_that_cannot_be_read_says_why(lines, message):
    with pytest.raises(ValueError, match=message):
        segments_of(lines, end=datetime(2026, 12, 7))


def test_the_command_writes_what_the_page_reads(tmp_path, capsys):
    (tmp_path / "segments.log").write_text("\n".join(LOG) + "\n")
    out = tmp_path / "segments.json"
    assert main(["run-segments", str(tmp_path / "segments.log"), "--end", "2026-12-07T10:00:00", "--how", "timed",
                 "--json", str(out)]) == 0
    assert "2 segment(s), 11.5 min paused: 1.81 h of wall time" in capsys.readouterr().out
    assert '"how": "timed"' in out.read_text()


def test_a_missing_log_or_end_is_said_in_one_line(tmp_path, capsys):
    out = str(tmp_path / "segments.json")
    assert main(["run-segments", str(tmp_path / "absent.log"), "--end", "2026-12-07T10:00:00", "--how", "x",
                 "--json", out]) == 2
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "segments.log").write_text("\n".join(LOG) + "\n")
    assert main(["run-segments", str(tmp_path / "segments.log"), "--how", "x", "--json", out]) == 2
    assert "give --record or --end" in capsys.readouterr().err
