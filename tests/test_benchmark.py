import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from recourse.benchmark import recourse_summary
from recourse.checkpoints import save_classifier
from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _record(task, teacher_valid, teacher_cost, accepts, valid, cost, cosine, attribute="Smiling"):
    return {"task": task, "attribute": attribute, "target": 1, "teacher_valid": teacher_valid,
            "teacher_cost": teacher_cost,
            "students": {"g": {"accepts_teacher": accepts, "valid": valid, "cost": cost, "cosine": cosine}}}


def test_recourse_summary_by_hand():
    records = [
        _record(0, True, 0.10, True, True, 0.20, 0.5),  # in S and B
        _record(1, True, 0.30, False, True, 0.30, 1.0),  # in S (rejected) and B
        _record(2, True, 0.20, False, False, 0.90, -1.0),  # in S (rejected), not B
        _record(3, False, 0.50, True, True, 0.10, 0.0),  # in neither
    ]
    summary = recourse_summary(records, "g")
    assert summary["vd"] == pytest.approx(100 * 2 / 3) and summary["s"] == 3
    assert summary["b"] == 2 and summary["n"] == 4
    # B = {0, 1}: mean |c_g − c_f| = (0.1 + 0) / 2, mean c_f = (0.1 + 0.3) / 2
    assert summary["crg"] == pytest.approx(0.05 / 0.2)
    assert summary["dirsim"] == pytest.approx(100 * (0.5 + 1.0) / 2)
    assert summary["success_rate"] == pytest.approx(75.0)


def test_bootstrap_intervals_hold_the_estimate_and_a_paired_self_difference_is_zero():
    from recourse.benchmark import bootstrap_intervals

    generator = torch.Generator().manual_seed(0)
    records = [_record(i, bool(torch.rand(1, generator=generator) < 0.9), 0.1 + float(torch.rand(1, generator=generator)),
                       bool(torch.rand(1, generator=generator) < 0.8), True, 0.2, float(torch.rand(1, generator=generator)))
               for i in range(60)]
    for record in records:
        record["students"]["h"] = dict(record["students"]["g"])
    summary = recourse_summary(records, "g")
    intervals = bootstrap_intervals(records, "g", samples=300)
    for metric in ("vd", "crg", "dirsim"):
        low, high = intervals[metric]
        assert low <= summary[metric] <= high and low < high
    assert bootstrap_intervals(records, "g", samples=300) == intervals  # seeded
    paired = bootstrap_intervals(records, "g", reference="h", samples=100)
    assert all(paired[m] == [0.0, 0.0] for m in ("vd", "crg", "dirsim"))


def test_recourse_summary_with_empty_s_and_b_is_undefined_not_zero():
    summary = recourse_summary([_record(0, False, 0.1, False, False, 0.1, 0.0)], "g")
    assert math.isnan(summary["vd"]) and math.isnan(summary["crg"]) and math.isnan(summary["dirsim"])
    assert summary["s"] == 0 and summary["b"] == 0 and summary["success_rate"] == 0


@pytest.fixture
def tiny_setup(hq_folder, tmp_path, tiny_generator):
    from recourse.compression import PTQInt4Config, PTQInt8Config, quantize, save_variant

    root, _ = hq_folder
    torch.manual_seed(0)
    model = AttributeClassifier(ClassifierConfig(widths=(4,), resolution=16)).eval()
    with torch.no_grad():
        model.head[2].weight.mul_(40)  # decisions that small edits can flip, so S and B are not empty
    save_classifier(model, tmp_path / "fp32", {"training_seconds": 100.0})
    calibration = torch.rand(8, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    for config in (PTQInt8Config(calibration_images=8), PTQInt4Config(calibration_images=8)):
        save_variant(quantize(model, config, calibration), model, tmp_path / "variants" / config.method)
    tiny_generator.save_pretrained(tmp_path / "generator")
    return [
        "benchmark", "--data", str(root), "--split", "all", "--tasks", "6", "--chunk-size", "2",
        "--checkpoint", str(tmp_path / "fp32"), "--variants-dir", str(tmp_path / "variants"),
        "--methods", "ptq-int8", "ptq-int4", "--generator", str(tmp_path / "generator"),
        "--attributes", "Smiling", "Young", "--steps", "10", "--no-cache",
    ]


def _comparable(report: dict) -> list[dict]:
    """The rows without what depends on timing."""
    return [{k: v for k, v in row.items() if not k.startswith("latency")} for row in report["rows"]]


def test_benchmark_writes_the_table_and_resumes_from_its_cache(tiny_setup, tmp_path, capsys):
    out = tmp_path / "bench"
    assert main([*tiny_setup, "--out", str(out)]) == 0
    report = json.loads((out / "benchmark.json").read_text())
    assert [row["method"] for row in report["rows"]] == ["fp32", "ptq-int8", "ptq-int4"]
    assert report["n"] == 6 and report["attributes"] == ["Smiling", "Young"] and report["processes"] == 1
    int8 = report["rows"][1]
    assert int8["overhead"] == pytest.approx(1.0) and int8["integer_kernels"]
    assert int8["n"] == 6 and 0 < int8["b"] <= int8["s"] <= 6
    assert set(int8["per_attribute"]) == {"Smiling", "Young"}
    assert report["rows"][2]["bits_per_weight"] == 4.0
    assert "| ptq-int4 |" in (out / "benchmark.md").read_text()
    assert "| method − ptq-int4 |" in (out / "benchmark.md").read_text()
    versus = report["rows"][1]["paired"]["ptq-int4"]
    assert set(versus) == {"vd", "crg", "dirsim"} and report["rows"][2]["paired"] == {}
    assert versus["vd"][0] == pytest.approx(report["rows"][1]["vd"] - report["rows"][2]["vd"])
    chunks = sorted((out / "cache").glob("*-0000*"))
    assert len(chunks) == 3 * 3  # three chunks: the teacher's part and one per student
    stamps = [c.stat().st_mtime_ns for c in chunks]
    assert main([*tiny_setup, "--out", str(out)]) == 0  # a second run reads every chunk back
    assert [c.stat().st_mtime_ns for c in chunks] == stamps
    assert _comparable(json.loads((out / "benchmark.json").read_text())) == _comparable(report)
    # a rebuilt variant recomputes only its own part
    from recourse.compression import load_variant, save_variant

    variant_dir = Path(tiny_setup[tiny_setup.index("--variants-dir") + 1]) / "ptq-int4"
    variant = load_variant(variant_dir)
    with torch.no_grad():
        dict(variant.twin.named_parameters())["head.2.bias"].add_(0.01)
    save_variant(variant, AttributeClassifier(ClassifierConfig(widths=(4,), resolution=16)), variant_dir,
                 {"layer_bits": variant.layer_bits})
    assert main([*tiny_setup, "--out", str(out)]) == 0
    assert [c.stat().st_mtime_ns for c in chunks] == stamps
    assert len(list((out / "cache").glob("ptq-int4-*"))) == 6


def test_two_processes_give_the_single_process_result(tiny_setup, tmp_path):
    assert main([*tiny_setup, "--out", str(tmp_path / "one")]) == 0
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               "-m", "recourse", *tiny_setup, "--out", str(tmp_path / "two")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    one = json.loads((tmp_path / "one" / "benchmark.json").read_text())
    two = json.loads((tmp_path / "two" / "benchmark.json").read_text())
    assert two["processes"] == 2
    assert _comparable(two) == _comparable(one)


def test_missing_variant_is_a_clear_error(tiny_setup, tmp_path, capsys):
    args = [*tiny_setup, "--out", str(tmp_path / "bench")]
    args[args.index("ptq-int4")] = "kd-quant"
    assert main(args) == 2
    assert "variant not found" in capsys.readouterr().err
