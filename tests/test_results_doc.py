"""Published numbers tied to their files: the pages under docs/results/, the benchmark's markdown
and the recorded accuracies must agree with the result files under assets/."""

import json

import pytest

from recourse.benchmark import BenchmarkResult
from recourse.benchmark.replication import replications, summarise
from recourse.checkpoints import read_config
from recourse.locations import assets_dir, project_root, teacher_dir
from recourse.render.benchmark import markdown_report
from scripts.docs.results import default_benchmark, instruments, pages, primary_benchmark, quality
from scripts.docs.results import files as results_files

BENCHMARKS = ("benchmark", "benchmark-second", "benchmark-val-sweep")
ARCHIVE = assets_dir() / "archive"  # runs of other settings, the cone walk's benchmarks among them; on no page


@pytest.mark.slow
@pytest.mark.parametrize("name", pages.PAGES)
def test_results_page_is_generated_from_the_assets(name):
    assert (pages.DOCS / name).read_text() == pages.render(name)


def test_every_page_under_docs_results_is_generated():
    assert sorted(path.name for path in pages.DOCS.glob("*.md")) == sorted(pages.PAGES)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_markdown_is_its_json_rendered(name):
    record = json.loads((ARCHIVE / f"{name}.json").read_text())
    assert markdown_report(BenchmarkResult.from_dict(record)) == (ARCHIVE / f"{name}.md").read_text()


@pytest.mark.parametrize("record, page", [
    ("benchmark-denoised.json", "benchmark-denoised.md"),
    ("results/benchmark-foreign.json", "benchmark-foreign.md"),
    ("results/val-sweep-denoised.json", "results/val-sweep-denoised.md"),
    ("results/benchmark-primary-run/benchmark.json", "results/benchmark-primary-run/benchmark.md"),
    ("results/val-sweep-primary/benchmark.json", "results/val-sweep-primary/benchmark.md"),
])
def test_every_committed_benchmark_markdown_is_its_json_rendered(record, page):
    loaded = json.loads((assets_dir() / record).read_text())
    assert markdown_report(BenchmarkResult.from_dict(loaded)) == (assets_dir() / page).read_text()


@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_json_round_trips(name):
    record = json.loads((ARCHIVE / f"{name}.json").read_text())
    assert BenchmarkResult.from_dict(record).to_dict() == record


def test_recorded_accuracy_is_the_evaluated_one():
    evaluated = json.loads((assets_dir() / "results" / "eval-classifier-test.json").read_text())
    config = read_config(teacher_dir())
    assert evaluated["mean_accuracy"] == config["test_accuracy"]
    assert evaluated["per_attribute"] == config["test_accuracy_per_attribute"]
    assert evaluated["recorded_test_accuracy"] == config["test_accuracy"]


def test_results_page_shows_the_benchmark_rows():
    page = (pages.DOCS / "benchmark.md").read_text()
    for name in (default_benchmark.TEST_RUN, primary_benchmark.RUN):
        record = results_files.load(name)
        for row in record["rows"]:
            assert f"| {row['method']} | {row['acc']:.2f} |" in page, (name, row["method"])


def test_a_changed_asset_makes_the_page_stale(tmp_path, monkeypatch):
    committed = (pages.DOCS / "benchmark.md").read_text()
    for folder in ("results", "results/benchmark-primary-run", "results/val-sweep-primary"):
        (tmp_path / "assets" / folder).mkdir(parents=True)
        for path in (assets_dir() / folder).glob("*.*"):
            (tmp_path / "assets" / folder / path.name).write_bytes(path.read_bytes())
    record = json.loads((assets_dir() / default_benchmark.TEST_RUN).read_text())
    record["rows"][1]["acc"] = 12.34
    (tmp_path / "assets" / default_benchmark.TEST_RUN).write_text(json.dumps(record))
    monkeypatch.setenv("RECOURSE_HOME", str(tmp_path))
    page = pages.render("benchmark.md")
    assert f"| {record['rows'][1]['method']} | 12.34 |" in page and page != committed


def test_the_committed_replication_compares_the_two_committed_runs():
    record = json.loads((ARCHIVE / "benchmark-replication.json").read_text())
    assert (record["first"]["file"], record["second"]["file"]) == ("assets/benchmark.json", "assets/benchmark-second.json")
    # the record names each file where it was then; both now lie under assets/archive/
    first, second = (BenchmarkResult.from_dict(json.loads((project_root() / results_files.current_paths(
        record[run]["file"])).read_text())) for run in ("first", "second"))
    assert (record["first"]["first_task"], record["second"]["first_task"]) == (0, first.n)  # disjoint tasks
    found = replications(first, second)
    assert record["values"] == json.loads(json.dumps([d.to_dict() for d in found]))
    assert record["summary"] == summarise(found).to_dict()


def test_the_instruments_read_their_numbers_and_say_what_is_not_measured(tmp_path, monkeypatch):
    """Hand-made result files: each instrument's paragraph shows its numbers and floor, and an
    instrument without a committed file says so, with the command that makes it."""
    results = tmp_path / "assets" / "results"
    results.mkdir(parents=True)

    def transfer(attacked, attribute, own, judge, strong):
        return {"attribute": attribute, "attacked": attacked, "n": 10, "epsilon": 0.02, "mean_change": 0.015,
                "attacked_flip_rate": own, "judges": {"judge": {"flip_rate": judge, "agreed": 9},
                                                      "strong-judge": {"flip_rate": strong, "agreed": 8}}}

    (results / "judge-transfer-val.json").write_text(json.dumps({
        "command": "python -m scripts.judge_check --judges judge strong-judge", "split": "val", "n": 10,
        "attacked": ["classifier", "guide"], "judges": ["judge", "strong-judge"], "threads": 1, "seconds": 5.0,
        "attributes": [], "transfer": [transfer("classifier", "Smiling", 100.0, 2.0, 0.0),
                                       transfer("classifier", "Male", 100.0, 4.0, 1.0),
                                       transfer("guide", "Smiling", 50.0, 30.0, 5.0),
                                       transfer("guide", "Male", 40.0, 10.0, 2.5)]}))
    (results / "edit-discriminator-test.json").write_text(json.dumps({
        "command": "python -m scripts.edit_discriminator", "auc": 0.8125, "train_auc": 0.9, "n_train": 40, "n_test": 20}))
    monkeypatch.setenv("RECOURSE_HOME", str(tmp_path))
    page = pages.render("quality.md")
    assert "| Smiling | 0.0200 | 100.0 | 2.0 (9) | 0.0 (8) | 50.0 | 30.0 (9) | 5.0 (8) |" in page
    assert "The judge is flipped on 2.0–4.0% of the faces by the attack on the classifier, 10.0–30.0%" in page
    assert "The strong-judge is flipped on 0.0–1.0% of the faces by the attack on the classifier, 2.5–5.0%" in page
    assert "is not trained yet" not in page  # both judges are in the file
    assert "was in training" not in page  # nor was either unfinished
    assert "Test AUC 0.812 (train 0.900; 40 train and 20 test faces" in page
    assert "_The identity calibration: not measured yet._" in page


def test_a_judge_at_the_majority_rate_is_named(monkeypatch):
    from recourse.names import QUALITY_ATTRIBUTES

    majority = {a: 60.0 for a in QUALITY_ATTRIBUTES}
    sighted = {"per_attribute": {a: 90.0 for a in QUALITY_ATTRIBUTES}, "majority_baseline_per_attribute": majority}
    blind = {"per_attribute": {**sighted["per_attribute"], "Young": 61.0}, "majority_baseline_per_attribute": majority}
    files = {"eval-judge-val.json": sighted, "eval-strong-judge-val.json": blind}
    monkeypatch.setattr(results_files, "load", files.get)
    text = "\n".join(instruments.judges_accuracy_table())
    assert "(cannot see it): radius 3 (strong) on Young" in text
    assert "| Young | 60.0 | 90.0 | 61.0 |" in text
    files["eval-strong-judge-val.json"] = sighted
    assert "at least 2 points above the majority rate on every" in "\n".join(instruments.judges_accuracy_table())


# --- the commands shown reproduce their files (recourse.cli.reproduction) ----------------------

def _cone_settings(margin: float = 6.0) -> dict:
    from dataclasses import asdict, replace

    from recourse.generation import CounterfactualConfig

    return asdict(replace(CounterfactualConfig(), method="pca-walk-cone", margin=margin, sigma=0.25))


def _quality_report(settings: dict) -> dict:
    return {"command": "python -m recourse evaluate-counterfactuals --data d --split val --n 4 --json out/q.json",
            "n": 4, "seconds": 1.0, "threads": 1, "settings": settings, "attributes": []}


def test_a_quality_run_of_the_cone_walk_shows_the_options_that_make_it():
    text = "\n".join(quality.quality_table("val", "counterfactual-quality-val.json", _quality_report(_cone_settings())))
    # only what differs from today's defaults, and not the sigma the walk never reads
    assert ("python -m recourse evaluate-counterfactuals --data d --split val --n 4 "
            "--json assets/archive/counterfactual-quality-val.json --counterfactual-method pca-walk-cone --margin 6\n") in text
    assert "--sigma" not in text


def test_a_quality_run_at_todays_defaults_shows_its_command_as_recorded():
    from dataclasses import asdict

    from recourse.generation import CounterfactualConfig

    text = "\n".join(quality.quality_table("val", "counterfactual-quality-val.json",
                                               _quality_report(asdict(CounterfactualConfig()))))
    assert ("python -m recourse evaluate-counterfactuals --data d --split val --n 4 "
            "--json assets/archive/counterfactual-quality-val.json\n") in text
    assert "--counterfactual-method" not in text and "--margin" not in text


def test_options_the_command_already_gives_are_not_repeated():
    from recourse.cli import reproduction

    command = "python -m recourse evaluate-counterfactuals --data d --margin 2 --counterfactual-method pca-walk-cone"
    assert reproduction(command, _cone_settings(margin=2.0)) == command
    assert reproduction(command, _cone_settings(margin=6.0)) == command + " --margin 6"


def test_a_recorded_setting_no_option_can_set_is_refused():
    from recourse.cli import reproduction

    with pytest.raises(ValueError, match="preserve_weight"):
        reproduction("python -m recourse evaluate-counterfactuals --data d", {**_cone_settings(), "preserve_weight": 1.0})


def test_another_programs_command_is_shown_as_recorded():
    from recourse.cli import reproduction

    command = "python -m scripts.stability --data d --n 200 --json assets/results/stability-test.json"
    assert reproduction(command, _cone_settings()) == command


def test_a_benchmark_run_from_before_the_method_existed_names_the_cone_walk_and_the_settings_of_then():
    """A recorded run without a method (or the later settings) was made with the cone walk,
    the twin's stop, one noise draw matched on its own images and the seeds resampled."""
    from recourse.cli import reproduction

    record = json.loads((ARCHIVE / "benchmark-val-sweep.json").read_text())
    assert "method" not in record["settings"]["counterfactual"] and "student_stop" not in record["settings"]
    shown = reproduction(record["command"], record["settings"])
    assert shown == record["command"] + (" --counterfactual-method pca-walk-cone --margin 6 --student-stop twin "
                                         "--noise-draws 1 --noise-match-split tasks --seed-level resample "
                                         "--analysis v1")


def test_a_benchmark_run_at_todays_defaults_shows_its_command_as_recorded():
    from dataclasses import asdict

    from recourse.benchmark import BenchmarkSettings
    from recourse.cli import reproduction

    command = "python -m recourse benchmark --data d --split test --tasks 500 --out out/b"
    settings = json.loads(json.dumps(asdict(BenchmarkSettings())))
    assert reproduction(command, settings) == command
    settings["noise_control"], settings["counterfactual"]["margin"] = None, 2.0
    assert reproduction(command, settings) == command + " --noise-control none --margin 2"


def test_a_benchmark_runs_analysis_is_an_option_and_is_reproduced_where_recorded():
    """--analysis picks the analysis version; a run that recorded the first is shown with it, one
    that recorded the default without it; a record without one was made with the first
    (from_record) and is shown with it, and a record's dated spelling is shown as the version."""
    from dataclasses import asdict

    from recourse.benchmark import BenchmarkSettings
    from recourse.cli import build_parser, reproduction
    from recourse.cli.benchmark import _benchmark_settings

    command = "python -m recourse benchmark --data d --split test --tasks 500 --out out/b"
    parse = build_parser().parse_args
    assert _benchmark_settings(parse(command.split()[3:])).analysis == "v3"
    assert _benchmark_settings(parse([*command.split()[3:], "--analysis", "v1"])).analysis == "v1"
    assert _benchmark_settings(parse([*command.split()[3:], "--analysis", "v2"])).analysis == "v2"
    with pytest.raises(SystemExit):
        parse([*command.split()[3:], "--analysis", "v4"])
    settings = json.loads(json.dumps(asdict(BenchmarkSettings())))
    assert settings["analysis"] == "v3" and reproduction(command, settings) == command
    settings["analysis"] = "v2"  # the registered run's: shown with it
    assert reproduction(command, settings) == command + " --analysis v2"
    settings["analysis"] = "v1"
    shown = reproduction(command, settings)
    assert shown == command + " --analysis v1" and reproduction(shown, settings) == shown
    settings["analysis"] = "2026-12-02"
    assert reproduction(command, settings) == shown
    settings["analysis"] = "2026-12-03"
    assert reproduction(command, settings) == command + " --analysis v2"
    del settings["analysis"]
    assert reproduction(command, settings) == shown


# Every committed run whose command a results page shows as a recourse command, and that page.
SHOWN_RUNS = {**{name: "quality.md" for _, name in quality.QUALITY}, default_benchmark.TEST_RUN: "benchmark.md",
              primary_benchmark.RUN: "benchmark.md", "benchmark-foreign.json": "foreign-models.md"}


@pytest.mark.parametrize("name", SHOWN_RUNS)
def test_the_page_shows_each_committed_run_with_the_options_that_reproduce_it(name):
    """Parsed by today's command line, the command shown beside a committed run asks for the
    settings the run recorded: nothing is left to add."""
    from recourse.cli import reproduction

    record = results_files.load(name)
    shown = reproduction(record["command"], record["settings"])
    if name.startswith("counterfactual-quality"):  # shown writing the file it reproduces
        shown = results_files.writing(shown, results_files.location(name))
    assert shown in (pages.DOCS / SHOWN_RUNS[name]).read_text()
    assert reproduction(shown, record["settings"]) == shown
    counterfactual = record["settings"].get("counterfactual", record["settings"])
    if counterfactual.get("method", "pca-walk-cone") == "pca-walk-cone":  # a run made before another method existed
        assert "--counterfactual-method pca-walk-cone" in shown


@pytest.mark.slow
def test_the_readme_quotes_the_benchmark_runs_with_the_options_that_reproduce_them():
    """Any committed benchmark run the README quotes is quoted as the results page shows it."""
    import re

    from recourse.cli import reproduction

    records = [results_files.load(name) for name, page in SHOWN_RUNS.items() if page == "benchmark.md"]
    shown = [reproduction(record["command"], record["settings"]) for record in records]
    readme = (project_root() / "README.md").read_text()
    for quoted in re.findall(r"`(python -m recourse benchmark [^`]*--out out/[^`]*)`", readme):
        assert quoted in shown, quoted


def test_the_discriminator_shows_the_pairs_commands_of_its_generator(monkeypatch):
    from dataclasses import asdict

    from recourse.generation import CounterfactualConfig

    record = {"command": "python -m scripts.edit_discriminator --json x.json", "auc": 0.7, "train_auc": 0.9,
              "n_train": 400, "n_test": 400}
    monkeypatch.setattr(results_files, "load", lambda name: record if name == instruments.DISCRIMINATOR else None)
    text = "\n".join(instruments.discriminator_paragraph())
    # recorded before the pairs' settings were: made with the earlier defaults, the cone walk at margin 6
    earlier = "--method pca-walk-cone --margin 6 --keep-monochrome off\n"
    assert "--split train --n 200 --out out/realism/train-pairs.npz " + earlier in text
    assert "--split test --n 200 --out out/realism/test-pairs.npz " + earlier in text
    record["pairs_counterfactual"] = {"train": asdict(CounterfactualConfig()), "test": asdict(CounterfactualConfig())}
    text = "\n".join(instruments.discriminator_paragraph())
    assert "--out out/realism/train-pairs.npz\n" in text and "--method" not in text


def test_the_committed_variants_are_rebuilt_with_the_generator_they_were_made_with():
    """Their recourse points were made with the cone walk at margin 6; their config.json
    commands predate the option, and the plan and reproduction() both add it."""
    from recourse.cli import reproduction
    from recourse.locations import variants_dir
    from scripts.chores.make_variants import plan

    pinned = ("--counterfactual-method", "pca-walk-cone", "--margin", "6", "--keep-monochrome", "off")
    for name, options in plan().items():
        uses_points = options[1] in ("cf-ptq", "cfq-qat")
        assert (options[-len(pinned):] == pinned) == uses_points, name
        folder = variants_dir() / name
        if (folder / "config.json").is_file():
            config = read_config(folder)
            shown = reproduction(config["command"], config.get("counterfactual"))
            assert shown.endswith(" ".join(pinned)) == uses_points, name
