"""The registered benchmark's section (scripts/docs/results/primary_benchmark.py) on a run made of
random task records with judge readings, and the registration's place in the history."""

import json
import shlex
import shutil
import subprocess
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from recourse.benchmark import BenchmarkResult
from recourse.benchmark.claims import claims
from recourse.benchmark.recompute import check_run
from recourse.benchmark.rows import family_of, family_rows, row_recourse
from recourse.benchmark.saved_columns import COLUMNS_FILE, columns_of_records, write_columns
from recourse.benchmark.semantic import RegisteredFamily
from recourse.cli import build_parser
from recourse.benchmark.settings import FAMILIES_ANALYSIS
from recourse.cli.benchmark import _benchmark_settings
from recourse.locations import assets_dir, project_root
from scripts.docs.results import primary_benchmark
from tests.test_benchmark import _row
from tests.test_benchmark_semantic import judged_records

REGISTRATION = assets_dir() / "results" / primary_benchmark.REGISTRATION
# two registered rows (one that sees less, one like the teacher) and the floors beside them
RATES = {"ptq-int8": 0.05, "gptq-int2": 0.4, "fp32-rerun": 0.02, "fp32-ref-classifier-seed1": 0.3,
         "fp32-ref-classifier-seed2": 0.3, "fp32-noise@ptq-int8": 0.05}
COMMAND = ("python -m recourse benchmark --data ../shared/data/celeba-hq-64 --split test --first-task 700 --tasks 120 "
           "--attributes Smiling Young --margin 2 --primary-family assets/results/benchmark-primary.json --out out/b")


def fake_run(folder: Path) -> Path:
    """A run of the registered family's settings on 120 random tasks, written as the benchmark
    writes it: ``benchmark.json`` and its columns beside it."""
    registered = replace(RegisteredFamily.from_file(REGISTRATION), source=f"assets/results/{REGISTRATION.name}")
    settings = replace(_benchmark_settings(build_parser().parse_args(shlex.split(COMMAND)[3:])),
                       primary_family=registered, analysis=FAMILIES_ANALYSIS)  # the registered run's analysis
    records = judged_records(RATES, tasks=120, seed=3, seen={"ptq-int8": 0.65, "gptq-int2": 0.1},
                             attributes=("Smiling", "Young"))
    saved = columns_of_records(records, list(RATES))
    rows = [_row("fp32", family="fp32"),
            *(replace(_row(n, family=family_of(n)), **row_recourse(n, saved.rows, list(saved.attributes), settings,
                                                                   saved.semantic)) for n in RATES)]
    families = family_rows(rows, records, settings)
    folder.mkdir(parents=True)
    result = BenchmarkResult(date="2026-12-06", command=COMMAND, split="test", n=120,
                             attributes=("Smiling", "Young"), accuracy_images=120, processes=2, seconds=60.0,
                             settings=asdict(settings), rows=tuple(rows), families=tuple(families),
                             claims=tuple(claims(families, registered=registered)),
                             columns=write_columns(folder / COLUMNS_FILE, saved))
    path = folder / "benchmark.json"
    path.write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n")
    return path


@pytest.fixture
def committed_run(tmp_path, monkeypatch):
    """The fake run where the page looks for the registered run, the registration beside it."""
    results = tmp_path / "assets" / "results"
    fake_run(results / primary_benchmark.RUN_FOLDER)
    segments = {"how": "two sessions", "segments": [
        {"start": "2026-12-06T04:00:00", "end": "2026-12-06T05:00:00", "paused_minutes": 30.0},
        {"start": "2026-12-06T06:00:00", "end": "2026-12-06T07:30:00", "paused_minutes": 0.0}]}
    (results / primary_benchmark.SEGMENTS).write_text(json.dumps(segments))
    shutil.copy(REGISTRATION, results / primary_benchmark.REGISTRATION)
    monkeypatch.setattr("scripts.docs.results.files.assets_dir", lambda: tmp_path / "assets")
    from scripts.docs.results import files
    return files.load


def _tables(title: str, name: str, record: dict) -> list[str]:
    return [f"### {title}", ""]


@pytest.mark.slow
def test_the_section_reads_the_registered_claims_and_the_judges(committed_run):
    text = "\n".join(primary_benchmark.section(committed_run, _tables))
    # the registration, its amendment, and the order the test below checks
    assert "Does compression make a model's recourse less of a change a person sees?" in text
    assert "**Amended 2026-12-05, before any result:** tasks 240 → 120" in text
    # every registered row has its line, a row the run lacks says it was not tested
    assert "| ptq-int8 | 1 | 60 |" in text and "| gptq-int2 | 1 | 60 |" in text
    assert "| ptq-int4 | — | — | — | — | — | — | — | — | not tested |" in text
    # the rarely seen row reads "less seen" by Holm; the counts of readings are said
    assert "| gptq-int2 |" in text and "**less seen**" in text.split("| gptq-int2 |")[1].split("\n")[0]
    assert "Readings: " in text and "not tested" in text
    # the judges per attribute, the teacher first, the floors among the rows
    judges = text.split("### What each judge saw")[1]
    assert "| model | Smiling (n = 60): seen % / shift |" in judges
    assert judges.index("| fp32 (teacher) |") < judges.index("| ptq-int8 |") < judges.index("| fp32-rerun |")
    assert "### The run: tasks 700–819" in text
    assert primary_benchmark.RECOMPUTE in text
    # the wall time over both segments, less the pause: 0.5 h + 1.5 h
    assert "Wall time: 2.00 h on 2 cores in 2 segments, pauses left out (within the 3 h the benchmark is allowed)" in text


@pytest.mark.slow
def test_the_page_and_the_recomputation_read_the_same_record(committed_run, tmp_path):
    path = tmp_path / "assets" / "results" / primary_benchmark.RUN
    _, again, problems = check_run(path)
    assert problems == []
    headline = primary_benchmark.headline(committed_run)
    registered = sum(c.correction_family == "registered" and c.holds() for c in again.claims)  # 2 rows tested of 11
    assert headline.startswith("N = 120 test tasks, registered: ")
    assert f"{registered:,} of 4 registered claims hold after Holm's correction" in headline


def test_before_the_run_the_section_gives_its_command():
    text = "\n".join(primary_benchmark.section(lambda name: None, _tables))
    assert "not finished yet" in text and primary_benchmark.RUN_COMMAND in text


def _commits(*paths: str) -> list[str]:
    """The commit times (oldest first) that touched ``paths``; [] where there is no history."""
    try:
        out = subprocess.run(["git", "log", "--reverse", "--format=%ct", "--", *paths], cwd=project_root(),
                             capture_output=True, text=True, timeout=60, check=True).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return []
    return out


def test_the_registration_was_committed_before_any_result_of_its_run():
    registration = _commits(f"assets/results/{primary_benchmark.REGISTRATION}")
    results = _commits(primary_benchmark.PARTS, f"assets/results/{primary_benchmark.RUN_FOLDER}")
    if not registration:
        pytest.skip("no git history here (an export without .git)")
    assert results, "the run's kept parts are committed"
    # every commit of the registration (the amendment included) precedes the first result
    assert int(registration[-1]) < int(results[0])


def test_the_vd_curve_says_where_each_row_leaves_its_draws():
    from tests.test_benchmark_floors import _points

    reading = primary_benchmark.band_reading(_points())
    assert reading[0] == ("Against the draws' range of VD % (min–max of 3, not a test): `ptq-int4` outside it at "
                          "margins 0 (above), 1 (above); `cfq-qat` outside it at margins 0 (below), 1 (below), 2 (above).")
    # the signed Δlogit: the draws lie in [-0.4, -0.2]; ptq-int4's seeds' mean -0.4, -0.45, -0.5; cfq-qat +0.25
    assert reading[2] == ("Against the draws' range of signed Δlogit (min–max of 3, not a test): `ptq-int4` outside it "
                          "at margins 1 (below), 2 (below); `cfq-qat` outside it at margins 0 (above), 1 (above), "
                          "2 (above).")
    assert primary_benchmark.band_reading(_points(draws=0)) == []


def test_the_wall_time_gives_the_timed_repeat_and_whether_it_reproduced_the_run():
    segments = {"how": "two sessions, tests beside it", "segments": [
        {"start": "2026-12-06T04:00:00", "end": "2026-12-06T08:00:00", "paused_minutes": 0.0}]}
    rerun = {"how": "alone", "segments": [
        {"start": "2026-12-06T10:00:00", "end": "2026-12-06T12:40:00", "paused_minutes": 10.0}]}
    compared = {"command": "python -m scripts.measurements.compare_runs a b --records x y",
                "parts": {"teacher": 6, "student": 150}, "largest_difference": {"teacher": 0.0, "student": 0.0},
                "identical": True, "record_differences": []}
    text = "\n".join(primary_benchmark.wall_time(segments, rerun, compared))
    assert "Wall time: 4.00 h on 2 cores in 1 segments, pauses left out (over the 3 h the benchmark is allowed)" in text
    assert ("The same command again, from an empty cache and keep-dir: 2.50 h on 2 cores in 1 segment(s), "
            "10 min of pauses left out (within the 3 h): alone") in text
    assert ("it reproduced the run: 6 teacher and 150 other parts compared, largest difference 0; "
            "0 values of the record differ") in text
    assert "python -m recourse compare-runs a b --records x y" in text  # the recorded script, by today's command
    changed = {**compared, "identical": False, "record_differences": ["rows[3].acc"]}
    assert "did **not** reproduce the run" in "\n".join(primary_benchmark.wall_time(segments, rerun, changed))
    assert "(rows[3].acc)" in "\n".join(primary_benchmark.wall_time(segments, rerun, changed))
    assert primary_benchmark.wall_time(segments) == primary_benchmark.wall_time(segments, None, None)[:2]
