import json
import math
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, replace

import pytest
import torch

from recourse.benchmark import (
    BenchmarkConfig, BenchmarkResult, BenchmarkRow, BenchmarkSettings, bootstrap_intervals, run_benchmark,
)
from recourse.benchmark.tasks import record_columns
from recourse.benchmark.terms import RECOURSE_METRICS
from recourse.checkpoints import load_classifier, update_config
from recourse.cli import main
from recourse.generation import CounterfactualConfig
from recourse.render.benchmark import display_rows, markdown_report, markdown_table
from tests.conftest import ROOT


def _record(task, teacher_valid, teacher_cost, accepts, valid, cost, cosine, attribute="Smiling",
            teacher_logit=1.0, logit=None, teacher_partial=(-1.0, -0.5), partial=(-1.0, -0.5)):
    logit = (1.0 if accepts else -1.0) if logit is None else logit
    return {"task": task, "attribute": attribute, "target": 1, "teacher_valid": teacher_valid,
            "teacher_cost": teacher_cost, "teacher_logit": teacher_logit, "teacher_partial": list(teacher_partial),
            "students": {"g": {"accepts_teacher": accepts, "valid": valid, "cost": cost, "cosine": cosine,
                               "logit": logit, "partial": list(partial)}}}


def test_recourse_summary_by_hand():
    records = [
        _record(0, True, 0.10, True, True, 0.20, 0.5),  # in S and B
        _record(1, True, 0.30, False, True, 0.30, 1.0),  # in S (rejected) and B
        _record(2, True, 0.20, False, False, 0.90, -1.0),  # in S (rejected), not B
        _record(3, False, 0.50, True, True, 0.10, 0.0),  # in neither
    ]
    summary = record_columns(records, "g").summary()
    assert summary.vd == pytest.approx(100 * 2 / 3) and summary.s == 3
    assert summary.b == 2 and summary.n == 4
    # B = {0, 1}: mean |c_g − c_f| = (0.1 + 0) / 2, mean c_f = (0.1 + 0.3) / 2
    assert summary.crg == pytest.approx(0.05 / 0.2)
    assert summary.dirsim == pytest.approx(100 * (0.5 + 1.0) / 2)
    assert summary.success_rate == pytest.approx(75.0)
    assert record_columns(records, "g").image(2).reason == "the compressed model's recourse is not valid for itself"


def test_bootstrap_intervals_hold_the_estimate_and_a_paired_self_difference_is_zero():
    generator = torch.Generator().manual_seed(0)
    draw = lambda: float(torch.rand(1, generator=generator))  # noqa: E731
    records = [_record(i, draw() < 0.9, 0.1 + draw(), draw() < 0.8, True, 0.2, draw()) for i in range(60)]
    for record in records:
        record["students"]["h"] = dict(record["students"]["g"])
    columns, twin = record_columns(records, "g"), record_columns(records, "h")
    summary = columns.summary()
    intervals = bootstrap_intervals(columns, samples=300)
    for metric in ("vd", "crg", "dirsim"):
        low, high = intervals[metric]
        assert low <= getattr(summary, metric) <= high and low < high
    assert bootstrap_intervals(columns, samples=300) == intervals  # seeded
    assert bootstrap_intervals(columns, samples=300, seed=1) != intervals
    paired = bootstrap_intervals(columns, reference=twin, samples=100)
    assert all(paired[m] == [0.0, 0.0] for m in ("vd", "crg", "dirsim"))


def test_recourse_summary_with_empty_s_and_b_is_undefined_not_zero():
    summary = record_columns([_record(0, False, 0.1, False, False, 0.1, 0.0)], "g").summary()
    assert math.isnan(summary.vd) and math.isnan(summary.crg) and math.isnan(summary.dirsim)
    assert summary.s == 0 and summary.b == 0 and summary.success_rate == 0


def _row(method: str, **values) -> BenchmarkRow:
    base = dict(method=method, acc=90.0, vd=4.0, crg=0.2, dirsim=80.0, success_rate=70.0, overhead=1.0,
                agreement=99.0, twin_integer_agreement=99.5, bits_per_weight=4.0, size_mb=1.0, latency_batch1_ms=1.0,
                latency_batch32_ms=10.0, integer_kernels=True, n=10, s=8, b=6)
    return BenchmarkRow(**{**base, **values})


def test_a_result_with_undefined_metrics_is_strict_json_and_reads_back():
    result = BenchmarkResult(
        date="2026-11-30", command="python -m recourse benchmark", split="test", n=10, attributes=("Smiling",),
        accuracy_images=20, processes=1, seconds=12.0, settings={"n": 10},
        rows=(_row("fp32", vd=None, crg=None, dirsim=None, overhead=None, s=10, b=0),
              _row("ptq-int4", vd=float("nan"), crg=math.inf, dirsim=float("nan"),
                   intervals={"vd": [float("nan")] * 2, "crg": [0.1, 0.3], "dirsim": [float("nan")] * 2})))
    record = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert record["rows"][1]["vd"] is None and record["rows"][1]["crg"] is None
    assert record["rows"][1]["intervals"] == {"vd": [None, None], "crg": [0.1, 0.3], "dirsim": [None, None]}
    again = BenchmarkResult.from_dict(record)
    assert again.rows[1].vd is None and again.rows[0].method == "fp32" and again.n == 10
    headers, cells = display_rows(again)
    assert headers[:3] == ["method", "Acc %", "VD % ↓"] and cells[1][2] == "—"
    table = markdown_table(list(result.rows))
    assert "| ptq-int4 | 90.00 | 99.00 | 4.00 | n/a | — | — | — | — | inf | n/a |" in table  # NaN: undefined; inf says so
    assert markdown_report(again).startswith("Benchmark on test (2026-11-30)")
    with pytest.raises(ValueError, match="not a benchmark record"):
        BenchmarkResult.from_dict({"rows": [{"method": "fp32"}]})


# --- the whole benchmark, from the command line --------------------------------------------

TRAIN_SECONDS, INT8_SECONDS, INT4_SECONDS = 100.0, 10.0, 30.0
# the walk, whose edits flip the tiny generator's brightness decisions; few finishing steps and a
# small margin (which the integer models also see past): fast tasks, B not empty
FAST = CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, finish_steps=20, margin=2.0)


@pytest.fixture
def tiny_setup(hq_folder, tmp_path, tiny_generator, bright_checkpoint) -> dict:
    """A teacher, two variants with known T_make, a generator and a folder, as a benchmark sees them."""
    from recourse.compression import PTQInt4Config, PTQInt8Config, quantize, save_variant

    root, _ = hq_folder
    shutil.copytree(bright_checkpoint, tmp_path / "fp32")  # decisions the tiny generator flips: S and B not empty
    update_config(tmp_path / "fp32", training_seconds=TRAIN_SECONDS)
    model = load_classifier(tmp_path / "fp32")
    calibration = torch.rand(8, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    for config, seconds in ((PTQInt8Config(calibration_images=8), INT8_SECONDS),
                            (PTQInt4Config(calibration_images=8), INT4_SECONDS)):
        save_variant(quantize(model, config, calibration), model, tmp_path / "variants" / config.method)
        update_config(tmp_path / "variants" / config.method, make_seconds=seconds)  # T_make, known
    tiny_generator.save_pretrained(tmp_path / "generator")
    return {"data": root, "split": "all", "checkpoint": tmp_path / "fp32", "variants_dir": tmp_path / "variants",
            "generator": str(tmp_path / "generator"), "variants": ("ptq-int8", "ptq-int4"), "image_cache": None,
            # one noise draw: the chunk counts below; several draws are tested on their own
            "settings": BenchmarkSettings(n=6, attributes=("Smiling", "Young"), chunk_size=2, counterfactual=FAST,
                                          latency_repeats=2, margins=(1.0, 2.0), bootstrap_samples=100,
                                          noise_draws=1)}


def command_line(setup: dict) -> list[str]:
    """The same benchmark as ``python -m recourse benchmark`` arguments (the generation
    settings the command line has no flag for keep their defaults there)."""
    settings = setup["settings"]
    return ["benchmark", "--data", str(setup["data"]), "--split", setup["split"], "--tasks", str(settings.n),
            "--chunk-size", str(settings.chunk_size), "--checkpoint", str(setup["checkpoint"]),
            "--variants-dir", str(setup["variants_dir"]), "--variants", *setup["variants"],
            "--generator", setup["generator"], "--attributes", *settings.attributes,
            "--counterfactual-method", "pca-walk-cone", "--steps", "10", "--noise-level", "0.5", "--margin", "2",
            "--margins", "1", "2", "--no-cache"]


def _comparable(report: dict) -> list[dict]:
    """The rows without what depends on timing."""
    return [{k: v for k, v in row.items() if not k.startswith("latency")} for row in report["rows"]]


@pytest.mark.slow
def test_benchmark_writes_the_table_and_resumes_from_its_cache(tiny_setup, tmp_path):
    out = tmp_path / "bench"
    result = run_benchmark(BenchmarkConfig(out=out, **tiny_setup))
    report = json.loads((out / "benchmark.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert report == json.loads(json.dumps(result.to_dict()))
    assert [row["method"] for row in report["rows"]] == ["fp32", "ptq-int8", "ptq-int4", "fp32-noise"]
    assert report["n"] == 6 and report["attributes"] == ["Smiling", "Young"] and report["processes"] == 1
    fp32, int8, int4, control = report["rows"]
    assert control["details"]["matched_to"] == "ptq-int4" and control["compression"] == "control"
    assert abs(control["details"]["agreement_on_matching_images"] - control["details"]["target_agreement"]) < 5
    # Overhead = (T_train + T_make(variant)) / (T_train + T_make(ptq-int8)), from the files' times
    assert int8["overhead"] == 1.0
    assert int4["overhead"] == pytest.approx((TRAIN_SECONDS + INT4_SECONDS) / (TRAIN_SECONDS + INT8_SECONDS))
    assert fp32["overhead"] is None and fp32["s"] == round(fp32["success_rate"] * 6 / 100)
    assert int8["integer_kernels"] and int8["n"] == 6 and 0 < int8["b"] <= int8["s"] <= 6
    assert set(int8["per_attribute"]) == {"Smiling", "Young"}
    assert int4["bits_per_weight"] == 4.0 and int8["bits_per_weight"] == 8.0
    markdown = markdown_report(result)
    assert "| ptq-int4 |" in markdown and "| method − ptq-int4 |" in markdown
    versus = int8["paired"]["ptq-int4"]
    assert set(versus) == set(RECOURSE_METRICS) and int4["paired"] == {}
    assert int4["s"] == int8["s"]  # S is the teacher's: the same for every student, so VD is defined for both
    assert versus["vd"][0] == pytest.approx(int8["vd"] - int4["vd"])
    chunks = sorted((out / "cache").glob("*-0000*"))
    # three chunks: the teacher's part, one per student and the control, and the teacher's part at
    # the sweep's margin 1 (its margin 2 is the benchmark's own: read back, not remade)
    assert len(chunks) == 3 * 5
    sweep = {point["margin"]: point for point in report["sweep"]}
    assert set(sweep) == {1.0, 2.0} and sweep[2.0]["s"] == fp32["s"]
    assert sweep[2.0]["students"]["ptq-int4"]["vd"] == pytest.approx(int4["vd"])
    assert sweep[1.0]["teacher_cost"] <= sweep[2.0]["teacher_cost"]
    assert {f["family"] for f in report["families"]} == {"ptq-int8", "ptq-int4", "fp32-noise"}
    # beside the record, every student row's per-task columns: its statistics recompute from them alone
    assert report["columns"]["file"] == "benchmark-columns.npz" and report["settings"]["analysis"] == "v3"
    assert main(["recompute-claims", str(out / "benchmark.json")]) == 0
    stamps = [c.stat().st_mtime_ns for c in chunks]
    run_benchmark(BenchmarkConfig(out=out, **tiny_setup))  # a second run reads every chunk back
    assert [c.stat().st_mtime_ns for c in chunks] == stamps
    assert _comparable(json.loads((out / "benchmark.json").read_text())) == _comparable(report)
    # a rebuilt variant (other calibration images, other weights) recomputes only its own part
    from recourse.compression import PTQInt4Config, quantize, save_variant

    model = load_classifier(tiny_setup["checkpoint"])
    other = torch.rand(8, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    save_variant(quantize(model, PTQInt4Config(calibration_images=8), other), model,
                 tiny_setup["variants_dir"] / "ptq-int4")
    run_benchmark(BenchmarkConfig(out=out, **tiny_setup))
    assert [c.stat().st_mtime_ns for c in chunks] == stamps
    assert len(list((out / "cache").glob("ptq-int4-*"))) == 6


@pytest.mark.slow
def test_a_shifted_run_takes_later_tasks_and_shares_their_chunks(tiny_setup, tmp_path):
    out = tmp_path / "bench"
    settings = replace(tiny_setup["settings"], margins=())
    shifted = {**tiny_setup, "settings": replace(settings, first_task=4, n=2)}
    assert run_benchmark(BenchmarkConfig(out=out, **{**tiny_setup, "settings": settings})).n == 6
    stamps = {c: c.stat().st_mtime_ns for c in (out / "cache").iterdir()}
    alone = run_benchmark(BenchmarkConfig(out=tmp_path / "alone", **shifted))
    assert alone.n == 2  # its one chunk, named as in the longer run
    assert {c.name for c in (tmp_path / "alone" / "cache").iterdir()} == {c.name for c in stamps if "-000004-" in c.name}
    from_longer = run_benchmark(BenchmarkConfig(out=out, **shifted))  # reads the longer run's chunk back
    assert {c: c.stat().st_mtime_ns for c in (out / "cache").iterdir()} == stamps
    assert _comparable(from_longer.to_dict()) == _comparable(alone.to_dict())
    with pytest.raises(ValueError, match=r"first_task 100 is past the split's \d+ images"):
        run_benchmark(BenchmarkConfig(out=tmp_path / "none", **{**tiny_setup, "settings": replace(settings, first_task=100)}))


@pytest.mark.slow
def test_the_command_on_two_processes_gives_the_single_process_result(tiny_setup, tmp_path, capsys):
    arguments = command_line(tiny_setup)
    assert main([*arguments, "--out", str(tmp_path / "one")]) == 0
    assert "| ptq-int4 |" in capsys.readouterr().out
    assert "| method − ptq-int4 |" in (tmp_path / "one" / "benchmark.md").read_text()
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               "-m", "recourse", *arguments, "--out", str(tmp_path / "two")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    one = json.loads((tmp_path / "one" / "benchmark.json").read_text())
    two = json.loads((tmp_path / "two" / "benchmark.json").read_text())
    assert one["processes"] == 1 and two["processes"] == 2
    assert _comparable(two) == _comparable(one)


def test_missing_variant_is_a_clear_error(tiny_setup, tmp_path, capsys):
    arguments = command_line(tiny_setup)
    arguments[arguments.index("ptq-int4")] = "kd-quant"
    assert main([*arguments, "--out", str(tmp_path / "bench")]) == 2
    assert "variant not found" in capsys.readouterr().err


def test_paired_difference_takes_crg_and_dirsim_on_the_tasks_both_have_in_b():
    from recourse.benchmark.terms import paired_difference

    records = [_record(0, True, 0.1, True, True, 0.1, 1.0), _record(1, True, 0.1, True, True, 0.3, 0.0),
               _record(2, True, 0.1, True, False, 0.1, 1.0)]
    for record, (valid, cost, cosine) in zip(records, [(True, 0.1, 1.0), (False, 0.1, 1.0), (True, 0.1, 1.0)]):
        record["students"]["h"] = {**record["students"]["g"], "valid": valid, "cost": cost, "cosine": cosine}
    mine, theirs = record_columns(records, "g"), record_columns(records, "h")
    difference = paired_difference(mine, theirs)
    # only task 0 is in both B: equal costs and cosines there, although g's own B adds task 1
    assert difference["crg"] == 0.0 and difference["dirsim"] == 0.0
    assert mine.summary().crg > 0 and difference["vd"] == 0.0


def test_two_sided_summary_reports_false_acceptance_and_the_lean():
    records = [_record(i, True, 0.1, True, True, 0.1, 1.0, teacher_logit=1.0, logit=3.0,
                       teacher_partial=(-1.0, -0.5), partial=(0.5 if i < 2 else -0.5, 0.5)) for i in range(4)]
    summary = record_columns(records, "g").summary()
    assert summary.vd == 0.0 and summary.fa_50 == pytest.approx(50.0) and summary.fa_75 == pytest.approx(100.0)
    assert summary.logit_gap == pytest.approx(2.0) and summary.logit_lean == pytest.approx(2.0)


def test_seed_bootstrap_and_family_rows_average_over_seeds():
    from recourse.benchmark.bootstrap import seed_bootstrap
    from recourse.benchmark.rows import family_of, family_rows

    assert family_of("cfq-qat-s2") == "cfq-qat" and family_of("ptq-int4") == "ptq-int4"
    generator = torch.Generator().manual_seed(0)
    records = []
    for i in range(40):
        record = _record(i, True, 0.1, True, True, 0.1, 1.0, attribute=("Smiling", "Bangs")[i % 2])
        accepts = [bool(torch.rand(1, generator=generator) < p) for p in (0.9, 0.6)]
        for name, accept in zip(("g", "g-s1"), accepts):
            record["students"][name] = {**record["students"]["g"], "accepts_teacher": accept,
                                        "logit": 1.0 if accept else -1.0}
        records.append(record)
    seeds = [record_columns(records, name) for name in ("g", "g-s1")]
    values = [c.summary().vd for c in seeds]
    low, high = seed_bootstrap(seeds, samples=300)["vd"]
    assert low <= sum(values) / 2 <= high
    one_seed = bootstrap_intervals(seeds[0], samples=300)["vd"]
    assert high - low > one_seed[1] - one_seed[0]  # the seeds' spread widens the interval
    rows = [_row("fp32", family="fp32"), _row("g", family="g", compression="x"), _row("g-s1", family="g", compression="x")]
    settings = BenchmarkSettings(n=40, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",))
    (family,) = family_rows(rows, records, settings)
    assert family.variants == ("g", "g-s1") and family.compression == "x"
    assert family.metrics["all"]["vd"]["mean"] == pytest.approx(sum(values) / 2)
    assert family.metrics["all"]["vd"]["sd"] == pytest.approx(abs(values[0] - values[1]) / 2 ** 0.5)
    assert set(family.metrics) == {"all", "seen", "held_out"}


def test_margin_sweep_points_from_records():
    from recourse.benchmark.sweep import sweep_points

    records = [{"margin": m, "task": i, "target": 1, "teacher_valid": i < 3, "teacher_cost": 0.1 * (1 + m),
                "teacher_logit": m, "teacher_partial": [-1.0, -0.5],
                "students": {"g": {"logit": m - 1.0, "partial": [-1.0, 0.5]}}}
               for m in (0.0, 2.0) for i in range(4)]
    low, high = sweep_points(records, (0.0, 2.0))
    assert low.s == high.s == 3 and low.teacher_success == 75.0
    assert low.students["g"]["vd"] == 100.0 and high.students["g"]["vd"] == 0.0  # logit −1 rejects, +1 accepts
    assert high.teacher_cost == pytest.approx(0.3) and low.students["g"]["fa_75"] == 100.0
    assert low.intervals["g"]["vd"] == [100.0, 100.0] and high.intervals["g"]["vd"] == [0.0, 0.0]
    assert set(low.intervals["g"]) == set(low.students["g"])
    mixed = [dict(r, students={"g": {"logit": (-1.0) ** r["task"], "partial": [-1.0, 0.5]}}) for r in records]
    (point,) = sweep_points(mixed, (0.0,), samples=200)
    assert point.students["g"]["vd"] == pytest.approx(100 / 3)  # tasks 0, 1, 2 in S; task 1 rejected
    assert point.intervals["g"]["vd"][0] < point.students["g"]["vd"] < point.intervals["g"]["vd"][1]


def test_ratio_terms_counted_once_give_the_summary_and_counts_weight_tasks():
    from recourse.benchmark.bootstrap import resampled
    from recourse.benchmark.terms import ratio_terms, summary_values

    generator = torch.Generator().manual_seed(4)
    draw = lambda: float(torch.rand(1, generator=generator))  # noqa: E731
    records = [_record(i, draw() < 0.9, 0.05 + draw(), draw() < 0.7, draw() < 0.9, 0.05 + draw(), draw(),
                       teacher_logit=draw() * 4, logit=draw() * 4 - 1, teacher_partial=(draw() - 0.5, draw() - 0.3),
                       partial=(draw() - 0.4, draw() - 0.2)) for i in range(50)]
    columns = record_columns(records, "g")
    once = resampled(ratio_terms(columns), torch.ones(1, 50, dtype=torch.float64))
    for metric, value in summary_values(columns).items():
        assert float(once[metric][0]) == pytest.approx(value, rel=1e-12), metric
    twice_first = torch.ones(1, 50, dtype=torch.float64)
    twice_first[0, 0] = 2  # task 0 drawn twice: the same as a column set with task 0 repeated
    repeated = columns.select(torch.tensor([0, *range(50)]))
    weighted = resampled(ratio_terms(columns), twice_first)
    for metric, value in summary_values(repeated).items():
        assert float(weighted[metric][0]) == pytest.approx(value, rel=1e-12), metric


def test_a_chunk_is_keyed_by_what_changes_it_only():
    base = BenchmarkSettings(n=40)
    inputs = {"fp32": "abc"}
    assert BenchmarkSettings(n=400, first_task=40, margins=(0.0, 1.0), bootstrap_samples=50).fingerprint(inputs) == \
        base.fingerprint(inputs)
    assert BenchmarkSettings(n=40, counterfactual=CounterfactualConfig(margin=1.0)).fingerprint(inputs) != \
        base.fingerprint(inputs)
    assert base.fingerprint({"fp32": "abd"}) != base.fingerprint(inputs)


# --- issue 26: direction apart from zero-length recourses, stops, floors, statistics -------

def test_zero_length_recourses_are_counted_apart_not_folded_into_dirsim():
    from recourse.benchmark.bootstrap import resampled
    from recourse.benchmark.proportions import proportion_intervals
    from recourse.benchmark.terms import paired_difference, ratio_terms, summary_values

    records = [_record(0, True, 0.1, True, True, 0.1, 1.0), _record(1, True, 0.1, True, True, 0.1, 0.8),
               _record(2, True, 0.1, True, True, 0.0, 0.0),  # the student decides t at x: its edit is zero
               _record(3, False, 0.1, True, True, 0.0, 0.0)]  # not in B
    columns = record_columns(records, "g")
    values = summary_values(columns)
    assert values["dirsim"] == pytest.approx(100 * 1.8 / 3)  # the committed convention: cos = 0 in the mean
    assert values["dirsim_moved"] == pytest.approx(100 * 1.8 / 2) and values["zero_edits"] == pytest.approx(100 / 3)
    once = resampled(ratio_terms(columns), torch.ones(1, 4, dtype=torch.float64))
    assert float(once["dirsim_moved"][0]) == pytest.approx(90.0) and float(once["zero_edits"][0]) == pytest.approx(100 / 3)
    assert proportion_intervals(columns)["zero_edits"]["count"] == 1 and proportion_intervals(columns)["zero_edits"]["n"] == 3
    # paired: DirSim over the tasks where both edits moved, the zero-length share over both B
    for record, (cost, cosine) in zip(records, [(0.1, 0.5), (0.0, 0.0), (0.1, 0.9), (0.1, 0.9)]):
        record["students"]["h"] = {**record["students"]["g"], "cost": cost, "cosine": cosine}
    difference = paired_difference(record_columns(records, "g"), record_columns(records, "h"))
    assert difference["dirsim_moved"] == pytest.approx(100 * (1.0 - 0.5))  # task 0 only
    assert difference["zero_edits"] == 0.0  # one zero edit each among the three shared tasks


def test_the_student_stop_is_a_setting_and_the_committed_runs_keep_the_twins(monkeypatch):
    from types import SimpleNamespace

    from recourse.benchmark import tasks
    from recourse.locations import assets_dir

    asked = []

    def fake_recourse(images, attribute, targets, teacher_counterfactuals, student, config, generator, seeds,
                      stop_on_decider=True):
        asked.append(stop_on_decider)
        n = len(images)
        return SimpleNamespace(counterfactuals=images, accepts_teacher=torch.ones(n, dtype=torch.bool),
                               valid=torch.ones(n, dtype=torch.bool),
                               cost=torch.full((n,), 0.1), cosine=torch.ones(n), logit_on_teacher=torch.ones(n),
                               partial_on_teacher=torch.zeros(n, 2))

    monkeypatch.setattr(tasks, "student_recourse", fake_recourse)
    images = torch.rand(2, 3, 4, 4)
    teacher = {"target": torch.ones(2), "counterfactuals": images}
    for stop, expected in (("decider", True), ("twin", False)):
        settings = BenchmarkSettings(n=2, attributes=("Smiling",), student_stop=stop)
        asked.clear()
        records = tasks.student_part(images, 0, teacher, None, settings, None)
        assert asked == [expected] and len(records) == 2
    assert BenchmarkSettings().student_stop == "decider"  # new runs stop where validity is scored
    with pytest.raises(ValueError, match="student_stop"):
        BenchmarkSettings(student_stop="guide")
    # a student's cached part is keyed by its stop, except the committed runs' twin stop (their keys
    # unchanged); the teacher's part is not keyed by it, nor by the table's statistics
    assert BenchmarkSettings(student_stop="twin").student_inputs() == {}
    assert BenchmarkSettings().student_inputs() == {"student_stop": "decider"}
    inputs = {"fp32": "abc"}
    assert BenchmarkSettings(student_stop="twin", noise_draws=1, seed_level="resample").fingerprint(inputs) == \
        BenchmarkSettings().fingerprint(inputs)
    for name in ("benchmark", "benchmark-second", "benchmark-val-sweep"):
        record = json.loads((assets_dir() / "archive" / f"{name}.json").read_text())
        assert BenchmarkResult.from_dict(record).to_dict() == record  # readable, new fields not added
        settings = BenchmarkSettings.from_record(record["settings"])
        assert (settings.student_stop, settings.noise_draws, settings.noise_match_split, settings.seed_level,
                settings.equivalence_margins) == ("twin", 1, None, "resample", ())
        assert settings.counterfactual.method == "pca-walk-cone"  # the only method there was
        written = json.loads(json.dumps(asdict(settings)))
        assert {k: written[k] for k in record["settings"] if k != "counterfactual"} == \
            {k: v for k, v in record["settings"].items() if k != "counterfactual"}
        assert {k: written["counterfactual"][k] for k in record["settings"]["counterfactual"]} == \
            record["settings"]["counterfactual"]


def test_noise_draws_are_matched_each_on_the_given_faces(bright_checkpoint):
    from recourse.audit.paired import Student
    from recourse.benchmark.compared_models import noise_controls
    from recourse.benchmark.weight_noise_floor import noisy_copy

    teacher = load_classifier(bright_checkpoint)
    student = noisy_copy(teacher, 0.3, seed=5)
    matching = (torch.rand(40, 3, 16, 16, generator=torch.Generator().manual_seed(3)) * 255).to(torch.uint8)
    controls = noise_controls(teacher, {"ptq-int4": Student("ptq-int4", student, student)}, matching, "ptq-int4",
                              1000, draws=3, matching_split="val")
    assert list(controls) == ["fp32-noise", "fp32-noise-s1", "fp32-noise-s2"]
    details = [fact.details for _, fact in controls.values()]
    assert [d["seed"] for d in details] == [0, 1, 2] and all(d["matching_split"] == "val" for d in details)
    assert all(d["matching_images"] == 40 and abs(d["agreement_on_matching_images"] - d["target_agreement"]) < 3
               for d in details)
    assert len({d["sigma"] for d in details}) == 3  # each draw's own sigma
    (legacy,) = noise_controls(teacher, {"ptq-int4": Student("ptq-int4", student, student)}, matching, "ptq-int4",
                               1000).values()
    assert "matching_split" not in legacy[1].details  # the committed runs' details, so their cache keys


def test_a_reference_row_from_any_classifier_folder(bright_checkpoint, tmp_path):
    from recourse.benchmark.compared_models import reference_rows

    shutil.copytree(bright_checkpoint, tmp_path / "classifier-seed1")
    ((name, (student, fact, digest)),) = reference_rows((tmp_path / "classifier-seed1",)).items()
    assert name == "fp32-ref-classifier-seed1" and student.twin is student.decider and student.kind == "twin"
    from recourse.checkpoints import WEIGHTS_FILE, file_digest

    assert fact.method == "reference" and fact.details["weights_digest"] == digest
    assert digest == file_digest(bright_checkpoint / WEIGHTS_FILE)  # keys its cached parts
    base = dict(data=tmp_path, out=tmp_path / "out", variants=("ptq-int4",))
    with pytest.raises(ValueError, match="distinct"):
        BenchmarkConfig(**base, reference_models=(tmp_path / "a" / "m", tmp_path / "b" / "m"))
    with pytest.raises(ValueError, match="variants must be"):
        BenchmarkConfig(data=tmp_path, out=tmp_path, variants=("fp32-noise-s1",))


def _family_records(tasks: int = 60) -> list[dict]:
    """Students g (3 seeds), the reference ptq-int4, and two noise draws: g rejects more of S."""
    generator = torch.Generator().manual_seed(7)
    records = []
    for i in range(tasks):
        record = _record(i, True, 0.1, True, True, 0.1, 1.0, attribute=("Smiling", "Bangs")[i % 2])
        for name, reject in (("g", 0.3), ("g-s1", 0.25), ("g-s2", 0.35), ("ptq-int4", 0.05), ("fp32-noise", 0.0),
                             ("fp32-noise-s1", 0.0)):
            accept = bool(torch.rand(1, generator=generator) >= reject)
            cosine = 0.9 + 0.1 * float(torch.rand(1, generator=generator))
            record["students"][name] = {**record["students"]["g"], "accepts_teacher": accept, "cosine": cosine,
                                        "logit": 1.0 if accept else -1.0}
        records.append(record)
    return records


def test_family_statistics_wilson_tests_equivalence_and_corrected_claims():
    from recourse.benchmark.bootstrap import seed_draws
    from recourse.benchmark.claims import claims
    from recourse.benchmark.rows import family_of, family_rows

    records = _family_records()
    names = ("g", "g-s1", "g-s2", "ptq-int4", "fp32-noise", "fp32-noise-s1")
    rows = [_row("fp32", family="fp32"), *(_row(n, family=family_of(n)) for n in names)]
    settings = BenchmarkSettings(n=60, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                                 bootstrap_samples=400)
    families = {f.family: f for f in family_rows(rows, records, settings)}
    g, noise = families["g"], families["fp32-noise"]
    assert noise.variants == ("fp32-noise", "fp32-noise-s1")
    # zero rejections by the noise draws: the bootstrap interval is [0, 0], Wilson's is not
    assert noise.metrics["all"]["vd"]["high"] == 0.0
    assert noise.wilson["all"]["vd"][0] == 0.0 and noise.wilson["all"]["vd"][1] == pytest.approx(
        100 * 1.959964 ** 2 / (60 + 1.959964 ** 2), rel=1e-5)
    # g rejects ~30% of S against ptq-int4's ~5%: a clear difference, small p
    test = g.tests["ptq-int4"]["all"]["vd"]
    assert test["p"] < 0.01 and test["se"] > 0 and test["score_interval"][0] > 0
    assert g.paired["ptq-int4"]["all"]["vd"][0] > 15
    # TOST against the floor: g's VD is 30 points off the noise draws, not within the 2-point margin
    assert not g.equivalence["fp32-noise"]["all"]["vd"]["equivalent"]
    assert g.equivalence["fp32-noise"]["all"]["vd"]["margin"] == 2.0
    assert "fp32-noise" not in noise.equivalence  # a floor is not tested against itself
    found = claims(list(families.values()))
    # every family against ptq-int4 (g, the noise draws) and TOST against the noise draws (g,
    # ptq-int4), every group: all tasks the primary family, the groups the secondary one
    assert {(c.kind, c.family, c.reference) for c in found} == {
        ("difference", "g", "ptq-int4"), ("difference", "fp32-noise", "ptq-int4"),
        ("equivalence", "g", "fp32-noise"), ("equivalence", "ptq-int4", "fp32-noise")}
    assert all(c.correction_family == ("primary" if c.group == "all" else "secondary") for c in found)
    for name in ("primary", "secondary"):
        tested = [c for c in found if c.p == c.p and c.correction_family == name]
        smallest = min(tested, key=lambda c: c.p)
        assert smallest.p_holm == pytest.approx(min(1.0, len(tested) * smallest.p))  # Holm's first step, in its family
        assert all(c.p <= c.p_bh <= c.p_holm for c in tested)
    tested = [c for c in found if c.p == c.p]
    g_vd = next(c for c in found if (c.kind, c.family, c.group, c.metric) == ("difference", "g", "all", "vd"))
    assert g_vd.p == test["p"] and g_vd.difference == g.paired["ptq-int4"]["all"]["vd"][0]
    assert g_vd.low < g_vd.difference < g_vd.high and [g_vd.low, g_vd.high] == test["interval"]
    # Bonferroni's family-wise interval holds the 95% one and excludes zero (or, for a TOST, lies
    # inside the margins) only where Holm rejects
    bounded = [c for c in tested if c.corrected_low == c.corrected_low]
    assert g_vd in bounded and g_vd.corrected_low < g_vd.low and g_vd.high < g_vd.corrected_high
    for c in bounded:
        assert c.corrected_low <= c.low and c.high <= c.corrected_high
        shown = (c.corrected_low > 0 or c.corrected_high < 0) if c.kind == "difference" else \
            -c.margin < c.corrected_low and c.corrected_high < c.margin
        if shown:
            assert c.p_holm < 0.05
    assert any(c.corrected_low > 0 or c.corrected_high < 0 for c in bounded)
    # no partial edit is accepted by either side: the bootstrap's se is 0, Newcombe's floor is not,
    # so TOST does not call a difference of 0 on 60 tasks certain
    fa = g.equivalence["fp32-noise"]["all"]["fa_75"]
    assert fa["estimate"] == 0.0 and fa["standard_error"] > 0 and fa["p"] > 0
    # the parametric seed level is continuous: far more than the 10 distinct draws of resampling 3 seeds
    seeds = [record_columns(records, n) for n in ("g", "g-s1", "g-s2")]
    parametric = seed_draws(seeds, samples=300, seed_level="parametric")["vd"]
    resampled = seed_draws([seeds[0]] * 3, samples=300, seed_level="resample")["vd"]
    assert len(set(parametric)) == 300 and len(set(resampled)) < 300
    legacy = BenchmarkSettings(n=60, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                               bootstrap_samples=400, seed_level="resample", equivalence_margins=(),
                               analysis="2026-12-02")
    old = {f.family: f for f in family_rows(rows, records, legacy)}
    assert old["g"].equivalence == {} and old["g"].metrics["all"]["vd"]["mean"] == g.metrics["all"]["vd"]["mean"]
    # the committed runs' claims: every test of every family against ptq-int4, one family of claims
    assert len(claims(list(old.values()), analysis="2026-12-02")) == 2 * 3 * len(RECOURSE_METRICS)


def test_a_result_with_claims_reads_back():
    from recourse.benchmark.claims import Claim

    claim = Claim("g", "ptq-int4", "all", "vd", 3.0, 1.0, 5.0, 0.01, 0.04, float("nan"))
    result = BenchmarkResult(date="2026-12-02", command="c", split="test", n=1, attributes=("Smiling",),
                             accuracy_images=1, processes=1, seconds=1.0, settings={}, rows=(_row("fp32"),),
                             claims=(claim,))
    record = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert record["claims"][0]["p_bh"] is None and "proportions" not in record["rows"][0]
    again = BenchmarkResult.from_dict(record).claims[0]
    assert again.p_holm == 0.04 and math.isnan(again.p_bh) and again.holds() and not again.holds(correction="bh")


def test_power_script_prints_the_tasks_a_stated_claim_needs(capsys, tmp_path):
    from recourse.benchmark.statistics import pairs_for_mean_difference, pairs_for_paired_proportions
    from recourse.cli import main

    assert main(["power", "--proportion", "fa", "10", "20", "0.5", "20", "--mean", "dirsim", "1.0", "2.0", "1.0",
                       "--json", str(tmp_path / "power.json")]) == 0
    table = json.loads((tmp_path / "power.json").read_text())["claims"]
    units = pairs_for_paired_proportions(-0.1, 0.2)
    assert (table[0]["units"], table[0]["tasks"]) == (units, math.ceil(units / 0.5))
    assert table[1]["units"] == table[1]["tasks"] == pairs_for_mean_difference(1.0, 2.0)
    assert f"| fa | proportion | -10 | discordance 20.0% | {units:,} |" in capsys.readouterr().out
    assert main(["power", "--family-size", "10", "--mean", "d", "1", "2", "1", "--json", str(tmp_path / "p.json")]) == 0
    assert json.loads((tmp_path / "p.json").read_text())["claims"][0]["units"] == \
        pairs_for_mean_difference(1.0, 2.0, alpha=0.005)


def test_the_statistics_report_draws_new_runs_and_says_what_old_ones_lack():
    from recourse.benchmark.claims import claims
    from recourse.benchmark.rows import family_of, family_rows
    from recourse.locations import assets_dir
    from recourse.render.claims import statistics_report

    cone_walk = json.loads((assets_dir() / "archive" / "benchmark.json").read_text())
    old = statistics_report(BenchmarkResult.from_dict(cone_walk))
    assert "(this run has no corrected claims)" in old and "(this run has no equivalence tests)" in old
    records = _family_records(20)
    names = ("g", "g-s1", "ptq-int4", "fp32-noise")
    rows = [_row("fp32", family="fp32"), *(_row(n, family=family_of(n)) for n in names)]
    settings = BenchmarkSettings(n=20, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                                 bootstrap_samples=50)
    families = family_rows(rows, records, settings)
    result = BenchmarkResult(date="d", command="c", split="test", n=20, attributes=("Smiling", "Bangs"),
                             accuracy_images=1, processes=1, seconds=1.0,
                             settings=json.loads(json.dumps(asdict(settings))), rows=tuple(rows),
                             families=tuple(families), claims=tuple(claims(families)))
    record = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert BenchmarkResult.from_dict(record).to_dict() == record
    # a run written before claims carried their family-wise interval gets it on reading
    older = {**record, "claims": [{k: v for k, v in c.items() if not k.startswith("corrected_")}
                                  for c in record["claims"]]}
    assert BenchmarkResult.from_dict(older).to_dict() == record
    report = statistics_report(BenchmarkResult.from_dict(record))
    assert "| fp32-noise (floor) | 1 |" in report and "| g − fp32-noise | VD |" in report
    # a new run's claims: differences and TOST, per correction family, each read by its own correction
    primary = sum(c.correction_family == "primary" and c.p == c.p for c in result.claims)
    assert f"{sum(c.p == c.p for c in result.claims)} claims, " in report and "paired differences tested" not in report
    assert f"**Primary family** (every claim on all attributes), read by Holm (family-wise error): {primary} claims" \
        in report and "read by Benjamini–Hochberg (false discovery rate)" in report
    assert "| g − fp32-noise | equivalence within ±0.02 | all | CRG |" in report  # both sides' CRG is 0 here
    assert "| claim | group |" in report and "| Holm p |" in report and "| Benjamini–Hochberg p |" in report


def test_the_margin_rule_reads_the_mean_of_the_noise_draws():
    from recourse.benchmark.sweep import SweepPoint, chosen_margin, noise_control_vd

    def point(margin: float, *draws: float) -> SweepPoint:
        students = {"ptq-int4": {"vd": 50.0}}
        students.update({("fp32-noise" if k == 0 else f"fp32-noise-s{k}"): {"vd": vd} for k, vd in enumerate(draws)})
        return SweepPoint(margin=margin, teacher_success=100.0, teacher_cost=0.01, s=10, students=students)

    points = [point(3, 0.0, 0.0, 0.0), point(1, 20.0, 18.0, 19.0), point(2, 2.0, 5.2, 0.0)]
    assert noise_control_vd(points[2]) == pytest.approx(7.2 / 3)
    # one draw above 5% at margin 2 does not move the rule, whose reading is the draws' mean
    assert chosen_margin(points) == 2
    assert chosen_margin(points, limit=1.0) == 3
    assert chosen_margin(points, every_draw=True) == 3  # the stricter reading: draw s1 is at 5.2 at margin 2
    assert chosen_margin([point(1, 20.0)], limit=5.0) is None
    no_control = SweepPoint(margin=0, teacher_success=100.0, teacher_cost=0.01, s=1, students={"g": {"vd": 0.0}})
    assert noise_control_vd(no_control) is None and chosen_margin([no_control]) is None


def test_an_undefined_sweep_value_reads_back_undefined_not_missing():
    """NaN (an empty S at that margin) is written as null; read back it is NaN again, so the
    sweep table says "n/a" from the file as it did from the run."""
    from recourse.benchmark.sweep import SweepPoint
    from recourse.render.benchmark import sweep_table

    point = SweepPoint(margin=6.0, teacher_success=100.0, teacher_cost=0.02, s=4,
                       students={"g": {"vd": 0.0, "fa_50": float("nan"), "fa_75": float("nan"), "logit_gap": 0.2,
                                       "logit_lean": 0.1}})
    record = json.loads((ROOT / "assets" / "results" / "val-sweep-primary" / "benchmark.json").read_text())
    written = BenchmarkResult.from_dict(record).to_dict()
    written["sweep"] = [json.loads(json.dumps(BenchmarkResult.from_dict({**record, "sweep": [point.to_dict()]})
                                              .to_dict()["sweep"][0]))]
    assert written["sweep"][0]["students"]["g"]["fa_75"] is None  # JSON has no NaN
    (read,) = BenchmarkResult.from_dict(written).sweep
    assert math.isnan(read.students["g"]["fa_75"]) and read.students["g"]["vd"] == 0.0
    assert sweep_table([read], ["g"]) == sweep_table([point], ["g"]) and "/ n/a |" in sweep_table([read], ["g"])
