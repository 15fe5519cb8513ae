"""scripts/docs/results/default_benchmark.py and benchmark.py: the results pages' benchmark on the default generator
and the index's headline of it."""

import json
from dataclasses import asdict

from recourse.locations import assets_dir
from scripts.docs.results import default_benchmark as results_benchmark
from scripts.docs.results.benchmark import benchmark_tables


def _sweep(draws_at_2: tuple[float, ...]) -> dict:
    def point(margin: float, draws: tuple[float, ...]) -> dict:
        students = {"ptq-int4": {"vd": 4.0}}
        students.update({("fp32-noise" if k == 0 else f"fp32-noise-s{k}"): {"vd": vd} for k, vd in enumerate(draws)})
        return {"margin": margin, "teacher_success": 100.0, "teacher_cost": 0.02, "s": 10, "students": students}

    return {"n": 10, "split": "val", "seconds": 100.0, "processes": 2, "command": "python -m recourse benchmark …",
            "settings": {"noise_match_split": "val"},
            "sweep": [point(1, (20.0, 18.0, 19.0)), point(2, draws_at_2), point(3, (0.0, 1.0, 0.0))]}


def test_the_margin_choice_reads_the_rule_off_the_sweep():
    text = "\n".join(results_benchmark.margin_choice(_sweep((2.0, 5.2, 0.0)), used=2.0))
    assert "picks **margin 2** (margin 3 if every draw had to pass). The test run uses it." in text
    assert "| noise control VD %, mean of 3 draws | 19.0 | 2.4 | 0.3 |" in text
    strict = "\n".join(results_benchmark.margin_choice(_sweep((2.0, 1.0, 0.0)), used=3.0))
    assert "picks **margin 2**. **The test run uses margin 3.**" in strict


def test_a_sweep_where_no_margin_passes_says_so_instead_of_failing():
    sweep = _sweep((20.0, 18.0, 19.0))
    sweep["sweep"][2]["students"].update({"fp32-noise": {"vd": 9.0}, "fp32-noise-s1": {"vd": 8.0}})
    text = "\n".join(results_benchmark.margin_choice(sweep, used=2.0))
    assert "picks **no margin**: none of the swept margins passes. **The test run uses margin 2.**" in text


def test_the_power_choice_says_which_claims_n_tasks_carry():
    power = {"command": "python -m scripts.power …", "alpha": 0.05, "power": 0.8, "family_size": 100,
             "claims": [{"label": "big", "kind": "mean", "effect": -8.0, "assumption": "sd 4", "tasks": 14},
                        {"label": "small", "kind": "proportion", "effect": 0.7, "assumption": "d", "tasks": 27000}]}
    text = "\n".join(results_benchmark.power_choice(power, 200))
    assert "N = 200 tasks carries 1 of these 2: big." in text
    assert "Underpowered at N = 200" in text and "small." in text


def test_the_section_waits_for_the_test_run_and_then_draws_it():
    sweep = _sweep((2.0, 5.2, 0.0))
    files = {results_benchmark.VAL_SWEEP: sweep}
    waiting = "\n".join(results_benchmark.section(files.get, benchmark_tables))
    assert "_The test run: not finished yet._" in waiting and results_benchmark.TEST_COMMAND in waiting
    # a run with families, claims and floor rows stands in for the test run
    record = json.loads((assets_dir() / "results" / "dirsim-references-val.json").read_text())
    files[results_benchmark.TEST_RUN] = record
    done = "\n".join(results_benchmark.section(files.get, benchmark_tables))
    assert "not finished yet" not in done
    assert f"the test run {record['seconds']:.0f} s" in done
    statistics = "\n".join(results_benchmark.statistics(files.get))  # on its own page, results_benchmark.CLAIMS_PAGE
    assert "#### Directions, zero-length recourses apart" in statistics and "[family-wise 95%]" in statistics
    assert "| fp32-ref-classifier-seed1 (floor) |" in statistics


def test_a_resumed_run_adds_up_its_segments_less_their_pauses():
    segments = {"how": "cut by a session's end, resumed from its cache",
                "segments": [{"start": "2026-12-02T15:53:07", "end": "2026-12-02T18:53:07", "paused_minutes": 9.0},
                             {"start": "2026-12-03T09:00:00", "end": "2026-12-03T09:30:00"}]}
    record = json.loads((assets_dir() / "results" / "dirsim-references-val.json").read_text())
    files = {results_benchmark.VAL_SWEEP: _sweep((2.0, 5.2, 0.0)), results_benchmark.TEST_RUN: record,
             results_benchmark.SEGMENTS: segments}
    text = "\n".join(results_benchmark.section(files.get, benchmark_tables))
    assert "the test run in 2 segments (cut by a session's end, resumed from its cache;" in text
    assert f"= {(100 + 3 * 3600 - 9 * 60 + 30 * 60) / 3600:.2f} h on 2 cores" in text


def test_the_margin_line_quotes_the_check_and_its_command():
    reached = {"command": "python -m scripts.margin_reached out/x --margin 2", "margin": 2.0, "chunks": 2,
               "tasks": 12, "valid": 12, "reached": 12, "minimum": 2.0, "median": 2.0015, "maximum": 2.0047}
    text = "\n".join(results_benchmark.margin_line(reached))
    assert "reaches margin 2 on 12 of its 12 valid tasks" in text and "2.000–2.005 (median 2.002)" in text
    assert results_benchmark.margin_line(None) == []


def test_the_headline_counts_each_correction_family_by_its_own_correction(monkeypatch):
    """The committed test run's one family of paired differences by Holm, as the index has it;
    a newer run's primary family by Holm and its secondary one by Benjamini–Hochberg."""
    from scripts.docs.results import benchmark, files
    from tests.test_render_claims import NEW

    record = json.loads((assets_dir() / "benchmark-denoised.json").read_text())
    monkeypatch.setattr(files, "load", {results_benchmark.TEST_RUN: record}.get)
    assert benchmark.headline() == "N = 200 test tasks; 537 of 1,458 paired differences hold after Holm's correction"
    newer = {**record, "settings": {**record["settings"], "analysis": "2026-12-03"},
             "claims": [json.loads(json.dumps(asdict(c))) for c in NEW]}
    monkeypatch.setattr(files, "load", {results_benchmark.TEST_RUN: newer}.get)
    # the secondary claim of Holm p 0.2 and BH p 0.01 holds, the primary one of Holm p 0.06 and BH p 0.04 does not
    assert benchmark.headline() == ("N = 200 test tasks; 2 of 3 primary claims hold after Holm's correction, "
                                    "2 of 3 secondary claims hold after Benjamini–Hochberg's correction")
    monkeypatch.setattr(files, "load", {}.get)
    assert benchmark.headline() == "the test run: not finished yet"


def test_the_held_out_heading_counts_the_held_out_attributes_the_run_holds():
    """The registered run holds one held-out attribute and the first test run eight: each heading
    says its own run's count and names them, read from the record."""
    from scripts.docs.results import primary_benchmark

    registered = json.loads((assets_dir() / "results" / primary_benchmark.RUN).read_text())
    text = "\n".join(benchmark_tables("The run", primary_benchmark.RUN, registered))
    assert "On the 1 held-out attribute only (Mouth_Slightly_Open):" in text
    first = json.loads((assets_dir() / results_benchmark.TEST_RUN).read_text())
    text = "\n".join(benchmark_tables("The test run", results_benchmark.TEST_RUN, first))
    assert ("On the 8 held-out attributes only (Blond_Hair, Bangs, Mouth_Slightly_Open, Heavy_Makeup, Black_Hair, "
            "Wavy_Hair, High_Cheekbones, Wearing_Lipstick):") in text
