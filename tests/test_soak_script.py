"""scripts/measurements/soak.py: its summary (RSS at 2 minutes, at the end, the growth), the verdict line,
the outcome of a completion message, and the loopback-only --url."""

import argparse
import os

import pytest

from scripts.measurements.soak import (Sample, attached_app, folder_usage, loopback_url, outcome_of, parse_args,
                                       proc_mib, summarize, usage_by_suffix, verdict_line)


def samples(*points, phase="load"):
    return [Sample(t_s=t, rss_mib=rss, hwm_mib=rss + 10, requests_done=0, errors=0, phase=phase) for t, rss in points]


def test_the_growth_is_counted_from_the_first_sample_at_2_minutes():
    summary = summarize(samples((0, 900), (110, 1000), (120.3, 1010), (130, 1050), (1200, 1200))
                        + samples((1230, 1180), phase="settle"))
    assert summary["rss_at_2_min_mib"] == 1010 and summary["baseline_t_s"] == 120.3
    assert summary["rss_end_mib"] == 1200 and summary["end_t_s"] == 1200  # the settle sample is not the end
    assert summary["growth_after_2_min_mib"] == 190 and summary["within_target"] is False
    assert summary["rss_after_settle_mib"] == 1180 and summary["peak_hwm_mib"] == 1210
    assert summary["rss_idle_before_mib"] == 900 and summary["idle_growth_mib"] == 280
    assert summary["idle_within_target"] is False  # more than 100 MiB over idle after the rest
    assert verdict_line(summary) == ("RSS after 2 min 1010 MiB, after 20 min 1200 MiB, growth 190 MiB "
                                     "(target: within 150 MiB)")


def test_a_run_shorter_than_2_minutes_counts_from_its_first_sample():
    summary = summarize(samples((0, 900), (60, 950), (90, 960)))
    assert summary["baseline_t_s"] == 0 and summary["growth_after_2_min_mib"] == 60
    assert summary["within_target"] is True and summary["idle_growth_mib"] is None  # no settle samples
    assert summary["idle_within_target"] is None
    assert verdict_line(summary).startswith("RSS after 0 min 900 MiB, after 1.5 min 960 MiB, growth 60 MiB")


def test_no_memory_measured_is_said_plainly():
    summary = summarize([Sample(0, None, None, 0, 0)])
    assert summary["rss_end_mib"] is None and "not measured" in verdict_line(summary)


@pytest.mark.parametrize("message, outcome", [
    ({"msg": "process_completed", "success": True, "output": {"data": []}}, "ok"),
    ({"msg": "process_completed", "success": False, "output": {"error": "unknown choice"}}, "refused"),
    ({"success": False, "http": 422, "output": {"error": "no"}}, "refused"),
    ({"success": False, "http": 500, "output": {"error": "boom"}}, "unexpected"),
    ({"success": False, "unexpected": True, "output": {"error": "stream ended"}}, "unexpected"),
    (None, "stopped"),
])
def test_the_outcome_of_a_completion_message(message, outcome):
    assert outcome_of(message)[0] == outcome


def test_only_a_loopback_url_is_attached_to():
    assert loopback_url("http://127.0.0.1:7860/") == "http://127.0.0.1:7860/"
    assert loopback_url("http://localhost:7860") == "http://localhost:7860"
    for url in ("http://example.org:7860/", "http://10.0.0.2:7860/", "http://127.0.0.1.example.org/"):
        with pytest.raises(argparse.ArgumentTypeError):
            loopback_url(url)
    with pytest.raises(SystemExit):
        parse_args(["--url", "http://example.org/", "--pid", "1"])
    with pytest.raises(SystemExit):
        parse_args(["--url", "http://127.0.0.1:7860/"])  # no --pid: nothing to measure
    assert parse_args(["--url", "http://127.0.0.1:7860/", "--pid", "1"]).pid == 1


def test_memory_and_files_are_read_from_proc_and_the_folder(tmp_path):
    assert proc_mib(os.getpid(), "VmRSS") > 0 and proc_mib(os.getpid(), "VmHWM") > 0
    assert proc_mib(2**22 + 12345, "VmRSS") is None  # no such process
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jpg").write_bytes(b"x" * 10)
    (tmp_path / "y").write_bytes(b"y" * 5)
    assert folder_usage(tmp_path) == (2, 15) and folder_usage(None) is None
    (tmp_path / "a" / "z.JPG").write_bytes(b"z" * 20)
    assert usage_by_suffix(tmp_path) == {".jpg": {"files": 2, "bytes": 30}, "(none)": {"files": 1, "bytes": 5}}


def test_an_attached_app_is_watched_through_its_pid():
    target = attached_app("http://127.0.0.1:7860", os.getpid(), None, None)
    assert target.url == "http://127.0.0.1:7860/" and target.alive() and not target.started
    assert not attached_app("http://127.0.0.1:7860/", 2**22 + 12345, None, None).alive()
