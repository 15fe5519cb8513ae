import json
import math
import os
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

from recourse.benchmark import (
    BenchmarkConfig, BenchmarkResult, BenchmarkRow, BenchmarkSettings, bootstrap_intervals, run_benchmark,
)
from recourse.benchmark.rows import RECOURSE_METRICS
from recourse.benchmark.tasks import record_columns
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
# few finishing steps and a small margin (which the integer models also see past): fast tasks, B not empty
FAST = CounterfactualConfig(steps=10, noise_level=0.5, finish_steps=20, margin=2.0)


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
            "--generator", setup["generator"], "--attributes", *settings.attributes, "--steps", "10",
            "--noise-level", "0.5", "--margin", "2", "--margins", "1", "2", "--no-cache"]


def _comparable(report: dict) -> list[dict]:
    """The rows without what depends on timing."""
    return [{k: v for k, v in row.items() if not k.startswith("latency")} for row in report["rows"]]


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
    from recourse.benchmark.rows import paired_difference

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
    from recourse.benchmark.rows import family_of, family_rows, seed_bootstrap

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
    from recourse.benchmark.rows import _resampled, ratio_terms, summary_values

    generator = torch.Generator().manual_seed(4)
    draw = lambda: float(torch.rand(1, generator=generator))  # noqa: E731
    records = [_record(i, draw() < 0.9, 0.05 + draw(), draw() < 0.7, draw() < 0.9, 0.05 + draw(), draw(),
                       teacher_logit=draw() * 4, logit=draw() * 4 - 1, teacher_partial=(draw() - 0.5, draw() - 0.3),
                       partial=(draw() - 0.4, draw() - 0.2)) for i in range(50)]
    columns = record_columns(records, "g")
    once = _resampled(ratio_terms(columns), torch.ones(1, 50, dtype=torch.float64))
    for metric, value in summary_values(columns).items():
        assert float(once[metric][0]) == pytest.approx(value, rel=1e-12), metric
    twice_first = torch.ones(1, 50, dtype=torch.float64)
    twice_first[0, 0] = 2  # task 0 drawn twice: the same as a column set with task 0 repeated
    repeated = columns.select(torch.tensor([0, *range(50)]))
    weighted = _resampled(ratio_terms(columns), twice_first)
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
