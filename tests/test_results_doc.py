"""Published numbers tied to their files: docs/results.md, the benchmark's markdown and the
recorded accuracies must agree with the result files under assets/."""

import json

import pytest

from recourse.benchmark import BenchmarkResult
from recourse.benchmark.replication import replications, summarise
from recourse.checkpoints import read_config
from recourse.paths import assets_dir, project_root, teacher_dir
from recourse.render.benchmark import markdown_report
from scripts import results_doc

BENCHMARKS = ("benchmark", "benchmark-second", "benchmark-val-sweep")


def test_results_page_is_generated_from_the_assets():
    assert (project_root() / "docs" / "results.md").read_text() == results_doc.render()


@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_markdown_is_its_json_rendered(name):
    record = json.loads((assets_dir() / f"{name}.json").read_text())
    assert markdown_report(BenchmarkResult.from_dict(record)) == (assets_dir() / f"{name}.md").read_text()


@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_json_round_trips(name):
    record = json.loads((assets_dir() / f"{name}.json").read_text())
    assert BenchmarkResult.from_dict(record).to_dict() == record


def test_recorded_accuracy_is_the_evaluated_one():
    evaluated = json.loads((assets_dir() / "results" / "eval-classifier-test.json").read_text())
    config = read_config(teacher_dir())
    assert evaluated["mean_accuracy"] == config["test_accuracy"]
    assert evaluated["per_attribute"] == config["test_accuracy_per_attribute"]
    assert evaluated["recorded_test_accuracy"] == config["test_accuracy"]


def test_results_page_shows_the_benchmark_rows():
    page = (project_root() / "docs" / "results.md").read_text()
    record = json.loads((assets_dir() / "benchmark.json").read_text())
    for row in record["rows"]:
        assert f"| {row['method']} | {row['acc']:.2f} |" in page


def test_a_changed_asset_makes_the_page_stale(tmp_path, monkeypatch):
    committed = (project_root() / "docs" / "results.md").read_text()
    results = tmp_path / "assets" / "results"
    results.mkdir(parents=True)
    for path in (assets_dir() / "results").glob("*.json"):
        (results / path.name).write_text(path.read_text())
    record = json.loads((assets_dir() / "benchmark.json").read_text())
    record["rows"][1]["acc"] = 12.34
    (tmp_path / "assets" / "benchmark.json").write_text(json.dumps(record))
    for name in ("benchmark-second.json", "benchmark-val-sweep.json", "benchmark-replication.json"):
        (tmp_path / "assets" / name).write_text((assets_dir() / name).read_text())
    monkeypatch.setenv("RECOURSE_HOME", str(tmp_path))
    page = results_doc.render()
    assert "| ptq-int8 | 12.34 |" in page and page != committed


def test_the_replication_section_lists_the_first_runs_claims(monkeypatch):
    claim = {"family": "cfq-qat", "reference": "ptq-int4", "group": "all", "metric": "vd", "first": [-2.0, -3.0, -1.0],
             "second": [0.5, -0.5, 1.5], "claim": True, "second_inside_first": False, "first_inside_second": False,
             "held": False}
    record = {"command": "python -m scripts.replicate a.json b.json", "first": {"n": 180, "first_task": 0},
              "second": {"n": 180, "first_task": 180},
              "summary": {"compared": 2, "second_inside_first": 1, "first_inside_second": 1, "claims": 1,
                          "claims_held": 0, "claims_second_inside_first": 0},
              "values": [claim, {**claim, "reference": "", "claim": False, "held": False}]}
    monkeypatch.setattr(results_doc, "_load", lambda name: record if name == "benchmark-replication.json" else None)
    text = "\n".join(results_doc.replication_section())
    assert "Tasks 0–179 against tasks 180–359" in text and "The first run makes 1 claims" in text
    assert "| cfq-qat − ptq-int4 | VD | -2.0 [-3.0, -1.0] | +0.5 [-0.5, 1.5] | no | **no** |" in text
    assert text.count("| cfq-qat") == 1  # a family's own value is not a claim


def test_the_committed_replication_compares_the_two_committed_runs():
    record = json.loads((assets_dir() / "benchmark-replication.json").read_text())
    assert (record["first"]["file"], record["second"]["file"]) == ("assets/benchmark.json", "assets/benchmark-second.json")
    first, second = (BenchmarkResult.from_dict(json.loads((project_root() / record[run]["file"]).read_text()))
                     for run in ("first", "second"))
    assert (record["first"]["first_task"], record["second"]["first_task"]) == (0, first.n)  # disjoint tasks
    found = replications(first, second)
    assert record["values"] == json.loads(json.dumps([d.to_dict() for d in found]))
    assert record["summary"] == summarise(found).to_dict()
