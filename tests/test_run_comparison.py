"""Two benchmark runs compared part by part (recourse/benchmark/run_comparison.py) and by
``recourse compare-runs``: identical parts pass, any difference fails and is named."""

import json

import torch
from safetensors.torch import save_file

from recourse.benchmark.run_comparison import compare_runs, record_differences
from recourse.cli import main


def _run(folder, teacher_value: float, cost: float) -> None:
    cache = folder / "cache"
    cache.mkdir(parents=True)
    save_file({"counterfactuals": torch.full((2, 3, 4, 4), teacher_value), "cost": torch.tensor([0.1, 0.2])},
              str(cache / "fp32-000000-abc.safetensors"))
    record = {"accepts_teacher": True, "valid": False, "cost": cost, "cosine": 0.5, "logit": 1.0, "partial": [0.1, 0.2]}
    (cache / "ptq-int4-000000-def.json").write_text(json.dumps({"records": [record, record]}))


def test_identical_runs_pass_and_a_changed_part_fails(tmp_path, capsys):
    _run(tmp_path / "a", 0.5, 0.1)
    _run(tmp_path / "b", 0.5, 0.1)
    assert main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "teacher parts compared: 1; largest difference: 0" in capsys.readouterr().out
    _run(tmp_path / "c", 0.5, 0.125)
    assert main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    assert "student parts compared: 1; largest difference: 0.025" in capsys.readouterr().out


def test_kept_parts_and_the_records_compare_with_the_clock_left_out(tmp_path, capsys):
    for name, sigma in (("a", 0.01), ("b", 0.01), ("c", 0.02)):
        kept = tmp_path / name
        kept.mkdir()
        (kept / "noise-sigma-abc.json").write_text(json.dumps({"sigma": sigma, "agreement": 97.5}))
        (kept / "ptq-int4-000700-def.json").write_text(json.dumps({"records": [{"cost": 0.1, "logit": 1.0}]}))
    record = {"date": "2026-12-06", "seconds": 9.0, "rows": [{"method": "fp32", "acc": 90.0, "latency_batch1_ms": 7.0}]}
    again = {**record, "date": "2026-12-07", "seconds": 5.0,
             "rows": [{"method": "fp32", "acc": 90.0, "latency_batch1_ms": 6.0}]}
    changed = {**again, "rows": [{"method": "fp32", "acc": 90.5, "latency_batch1_ms": 6.0}]}
    for name, value in (("first", record), ("again", again), ("changed", changed)):
        (tmp_path / f"{name}.json").write_text(json.dumps(value))
    records = ["--records", str(tmp_path / "first.json")]
    assert main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "b"), *records, str(tmp_path / "again.json")]) == 0
    out = capsys.readouterr().out
    assert "student parts compared: 2; largest difference: 0" in out and "records: 0 values differ" in out
    assert main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "b"), *records, str(tmp_path / "changed.json")]) == 1
    assert "records: 1 values differ (clock readings left out): rows[0].acc" in capsys.readouterr().out
    found = tmp_path / "found.json"
    assert main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "b"), *records, str(tmp_path / "changed.json"),
                              "--json", str(found)]) == 1
    written = json.loads(found.read_text())
    assert written["parts"] == {"teacher": 0, "student": 2} and written["record_differences"] == ["rows[0].acc"]
    assert not written["identical"] and written["command"].startswith("python -m recourse compare-runs ")
    assert main(["compare-runs", str(tmp_path / "a"), str(tmp_path / "c")]) == 1  # another sigma
    assert "largest difference: inf" in capsys.readouterr().out


def test_the_library_says_what_it_compared(tmp_path):
    _run(tmp_path / "a", 0.5, 0.1)
    _run(tmp_path / "b", 0.25, 0.1)
    found = compare_runs(tmp_path / "a", tmp_path / "b")
    assert found.compared == {"teacher": 1, "student": 1} and found.largest == {"teacher": 0.25, "student": 0.0}
    assert not found.identical and found.record_differences is None
    differences = record_differences({"date": 1, "rows": [1, 2]}, {"date": 2, "rows": [1, 3], "extra": 0})
    assert differences == ["extra", "rows[1]"]  # the date is a clock reading
