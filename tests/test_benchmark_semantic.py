"""recourse.benchmark.semantic (issue 37): each model's own recourse read by the attribute's judge
(seen on the target's side, a missing face never seen), a row's semantic validity against the
teacher's with the analysis "2026-12-03", the registered primary family read by Holm over exactly
its claims, and the records and caches made before the readings still read."""

import json
import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import pytest
import torch

import recourse.benchmark.statistics as stats
from recourse.benchmark import BenchmarkResult, BenchmarkSettings, semantic, tasks
from recourse.benchmark.bootstrap import task_weights_drawn
from recourse.benchmark.claims import claims, missing_claims
from recourse.benchmark.recompute import check_run
from recourse.benchmark.rows import family_of, family_rows, row_recourse
from recourse.benchmark.run import placement_fields
from recourse.benchmark.saved_columns import COLUMNS_FILE, columns_of_records, read_columns, write_columns
from recourse.benchmark.semantic import (
    RegisteredClaim, RegisteredFamily, compare_semantic, readings_of_scores, semantic_columns,
)
from recourse.benchmark.tasks import record_columns
from recourse.caches import write_tensors
from recourse.instruments.calibration import Calibration
from recourse.locations import assets_dir
from recourse.render.claims import claims_table
from tests import test_benchmark
from tests.test_benchmark import _row
from tests.test_benchmark_symmetry import random_records

tiny_setup = test_benchmark.tiny_setup  # the fixture: a teacher, two variants, a generator and faces
SAMPLES = 200
# a judge whose threshold is 0.5 and whose real classes score 0.8 (present) and 0.2 (absent) on average
CALIBRATION = Calibration("brightness", "lamps", "Smiling", 0.5, 0.9, 0.8, 0.8, 0.9, 10, 1.0, 0.8, 0.2, 0.9, 10)


@dataclass(frozen=True)
class Brightness:
    """A fake judge: a face's mean brightness is its score; a black face is not found (NaN)."""

    name: str = "brightness"
    attributes: tuple = ("Smiling",)

    def scores(self, images):
        values = images.mean(dim=(1, 2, 3)).double().numpy()
        values[values == 0] = np.nan
        return {"Smiling": values}


@pytest.fixture
def fake_judge(monkeypatch):
    """Smiling read by :class:`Brightness` on 4-px faces; every other attribute has no judge."""
    monkeypatch.setattr(semantic, "JUDGED", {"Smiling": "brightness"})
    monkeypatch.setattr(semantic, "calibrations", lambda: ((CALIBRATION, True),))
    monkeypatch.setattr(semantic, "judge", lambda name: Brightness())
    monkeypatch.setattr(semantic, "JUDGED_RESOLUTION", 4)


def test_a_counterfactual_is_seen_on_its_targets_side_and_a_missing_face_never():
    before = np.array([0.2, 0.2, 0.8, 0.8, 0.5, 0.5])
    after = np.array([0.7, 0.3, 0.3, 0.7, np.nan, np.nan])
    read = readings_of_scores(before, after, np.array([1, 1, 0, 0, 1, 0]), CALIBRATION)
    # toward "present" a score past 0.5 is seen, toward "absent" one below it; no face: never seen
    assert read.seen.tolist() == [True, False, True, False, False, False]
    # the shift toward the target over the real classes' gap (0.8 − 0.2)
    assert read.shift[:4] == pytest.approx([0.5 / 0.6, 0.1 / 0.6, 0.5 / 0.6, 0.1 / 0.6])
    assert np.isnan(read.shift[4:]).all() and np.isnan(read.score[4:]).all()
    # a valid recourse the judge does not see, or on a face it does not find, is not semantically valid
    valid = torch.tensor([True, True, False, True, True, True])
    assert semantic.semantic_valid(valid, torch.as_tensor(read.seen)).tolist() == [True, False, False, False,
                                                                                   False, False]


def test_a_judge_reads_a_batch_and_only_its_attributes(fake_judge):
    faces = torch.full((3, 3, 4, 4), 0.2)
    counterfactuals = torch.stack([torch.full((3, 4, 4), v) for v in (0.9, 0.4, 0.0)])  # the last: no face
    read = semantic.judge_counterfactuals(faces, counterfactuals, "Smiling", torch.tensor([1, 1, 1]))
    assert read.seen.tolist() == [True, False, False] and read.before == pytest.approx([0.2] * 3)
    assert read.score[:2] == pytest.approx([0.9, 0.4]) and math.isnan(read.score[2])
    assert semantic.judge_counterfactuals(faces, counterfactuals, "Bangs", torch.tensor([1, 1, 1])) is None
    # faces of another framing than the judges were calibrated on are not read
    assert semantic.judge_counterfactuals(torch.zeros(1, 3, 8, 8), torch.zeros(1, 3, 8, 8), "Smiling",
                                          torch.tensor([1])) is None


# --- rows and families -------------------------------------------------------------------------


def judged_records(rates: dict[str, float], tasks: int = 60, seed: int = 0, seen: dict[str, float] | None = None,
                   attributes: tuple[str, ...] = ("Smiling", "Bangs")) -> list[dict]:
    """:func:`random_records` with judge readings on the Smiling tasks (Bangs has no judge): each
    student's own recourse seen with probability ``seen[name]`` (0.6 by default), the teacher's 0.7."""
    records = random_records(rates, tasks=tasks, seed=seed, attributes=attributes)
    generator = torch.Generator().manual_seed(seed + 100)
    seen = seen or {}

    def u() -> float:
        return float(torch.rand(1, generator=generator))

    for record in records:
        judged = record["attribute"] == "Smiling"
        record.update({"teacher_judge_seen": (u() < 0.7) if judged else None,
                       "teacher_judge_score": u() if judged else None, "teacher_judge_shift": u() if judged else None})
        for name, values in record["students"].items():
            values.update({"judge_seen": (u() < seen.get(name, 0.6)) if judged else None,
                           "judge_score": u() if judged else None, "judge_shift": u() if judged else None})
    return records


def _hand_test(mine: list[np.ndarray], teacher: np.ndarray, samples: int = SAMPLES) -> tuple[float, float, float]:
    """``(difference, se, df)`` of a family's seeds (0/1 per task) against the teacher, in points,
    as docs/metrics.md states it: seeds' mean − teacher, se² = v_tasks (at least Newcombe's) + s²/k."""
    n = len(teacher)
    counts = task_weights_drawn(n, samples, torch.Generator().manual_seed(1), "multinomial").numpy()
    draws = np.mean([counts @ (100.0 * m) / n for m in mine], axis=0) - counts @ (100.0 * teacher) / n
    cells = np.mean([[(m * teacher).sum(), (m * (1 - teacher)).sum(), ((1 - m) * teacher).sum(),
                      ((1 - m) * (1 - teacher)).sum()] for m in mine], axis=0)
    low, high = stats.newcombe_paired_interval(*cells).as_list(100.0)
    v_tasks = max(draws.var(ddof=1), ((high - low) / (2 * 1.959963984540054)) ** 2)
    values = [100.0 * m.mean() for m in mine]
    seed_term = np.var(values, ddof=1) / len(values) if len(values) > 1 else 0.0
    se2 = v_tasks + seed_term
    df = se2 ** 2 / (seed_term ** 2 / (len(values) - 1)) if seed_term > 0 else math.inf
    return float(np.mean(values) - 100.0 * teacher.mean()), math.sqrt(se2), df


def _semantic(records: list[dict], name: str, teacher: bool = False) -> np.ndarray:
    """A row's (or the teacher's) per-task semantic validity on the judged tasks, by hand."""
    judged = [r for r in records if r["teacher_judge_seen"] is not None]
    if teacher:
        return np.array([float(r["teacher_valid"] and r["teacher_judge_seen"]) for r in judged])
    return np.array([float(r["students"][name]["valid"] and r["students"][name]["judge_seen"]) for r in judged])


def test_a_rows_semantic_validity_and_its_difference_from_the_teacher_by_hand():
    records = judged_records({"g": 0.2, "h": 0.1}, tasks=60, seen={"g": 0.3})
    settings = BenchmarkSettings(n=60, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                                 bootstrap_samples=SAMPLES)
    columns = {name: record_columns(records, name) for name in ("g", "h")}
    judged = {name: semantic_columns(records, name) for name in ("g", "h")}
    fields = row_recourse("g", columns, [r["attribute"] for r in records], settings, judged)
    mine, teacher = _semantic(records, "g"), _semantic(records, "g", teacher=True)
    assert len(teacher) == 30  # the Smiling tasks: Bangs has no judge
    assert fields["semantic_validity"] == pytest.approx(100 * mine.mean())
    assert fields["semantic"]["judged"] == 30 and fields["semantic"]["teacher"] == pytest.approx(100 * teacher.mean())
    difference, se, df = _hand_test([mine], teacher)
    test = fields["semantic"]["fp32"]
    assert test["difference"] == pytest.approx(difference) and test["se"] == pytest.approx(se)
    assert df == math.inf and test["df"] == math.inf  # one seed against the teacher: normal
    assert test["interval"] == pytest.approx([difference - 1.959963984540054 * se, difference + 1.959963984540054 * se])
    assert test["p"] == pytest.approx(2 * (1 - stats.NormalDist().cdf(abs(difference) / se)))
    assert test["equivalence"]["margin"] == 10.0
    # a family of three seeds: the seeds' mean, their spread over their count, Welch–Satterthwaite
    rates = {"c": 0.2, "c-s1": 0.25, "c-s2": 0.15}
    records = judged_records(rates, tasks=80, seed=3, seen={"c": 0.2, "c-s1": 0.5, "c-s2": 0.8})
    rows = [_row("fp32", family="fp32"), *(_row(n, family=family_of(n)) for n in rates)]
    (family,) = family_rows(rows, records, replace(settings, n=80))
    difference, se, df = _hand_test([_semantic(records, n) for n in rates], _semantic(records, "c", teacher=True))
    assert family.semantic["fp32"]["difference"] == pytest.approx(difference)
    assert family.semantic["fp32"]["se"] == pytest.approx(se) and family.semantic["fp32"]["df"] == pytest.approx(df)
    assert family.semantic["mean"] == pytest.approx(np.mean([100 * _semantic(records, n).mean() for n in rates]))


@pytest.mark.parametrize("left, right", [(1, 3), (3, 3), (1, 1)])
def test_a_claims_magnitude_is_the_same_in_either_order(left, right):
    generator = torch.Generator().manual_seed(left * 10 + right)
    a = [torch.rand(50, generator=generator) < 0.4 + 0.1 * k for k in range(left)]
    b = [torch.rand(50, generator=generator) < 0.6 - 0.1 * k for k in range(right)]
    forward, backward = compare_semantic(a, b, SAMPLES), compare_semantic(b, a, SAMPLES)
    t, u = forward.test, backward.test
    assert u.difference == -t.difference and u.standard_error == t.standard_error and u.df == t.df and u.p == t.p
    assert u.interval() == [-t.interval()[1], -t.interval()[0]]
    assert t.tost(10.0).p == u.tost(10.0).p
    assert backward.score_interval == pytest.approx([-forward.score_interval[1], -forward.score_interval[0]])


# --- the registered family -----------------------------------------------------------------------

REGISTERED = RegisteredFamily("registration.json", tuple(
    RegisteredClaim(row, kind=kind) for row in ("g", "absent") for kind in ("difference", "equivalence")))
SETTINGS = BenchmarkSettings(n=60, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                             bootstrap_samples=SAMPLES, primary_family=REGISTERED)
RATES = {"g": 0.3, "ptq-int4": 0.1, "fp32-noise": 0.05}


def _families(settings: BenchmarkSettings = SETTINGS, seen: dict[str, float] | None = None):
    records = judged_records(RATES, tasks=60, seed=7, seen=seen or {"g": 0.2})
    rows = [_row("fp32", family="fp32"), *(_row(n, family=family_of(n)) for n in RATES)]
    return records, family_rows(rows, records, settings)


def test_the_registered_family_is_read_by_holm_over_exactly_its_claims():
    _, families = _families()
    found = claims(families, registered=REGISTERED)
    registered = [c for c in found if c.correction_family == "registered"]
    # the file's claims in its order, the absent row's too: reported, not dropped
    assert [(c.family, c.kind) for c in registered] == [(c.row, c.kind) for c in REGISTERED.claims]
    assert all(c.metric == "semantic_validity" and c.reference == "fp32" and c.group == "all" for c in registered)
    absent = [c for c in registered if c.family == "absent"]
    assert all(math.isnan(c.p) and math.isnan(c.p_holm) for c in absent) and missing_claims(found, REGISTERED) == absent
    # Holm over the four claims, the untested two counted as p = 1: m is the registered family's size
    p = [c.p for c in registered]
    assert [c.p_holm for c in registered[:2]] == pytest.approx(stats.holm([*p[:2], 1.0, 1.0])[:2])
    g = {f.family: f for f in families}["g"].semantic["fp32"]
    assert registered[0].difference == g["difference"] and registered[0].p == g["p"] < 0.05
    assert registered[1].margin == 10.0 and registered[1].p == g["equivalence"]["p"]
    # every other claim is secondary, all-task ones included, read by Benjamini–Hochberg among themselves
    others = [c for c in found if c.correction_family != "registered"]
    assert {c.correction_family for c in others} == {"secondary"} and any(c.group == "all" for c in others)
    assert [c.p_bh for c in others] == pytest.approx(stats.benjamini_hochberg([c.p for c in others]), nan_ok=True)
    # the semantic tests of rows the file does not name are secondary claims too
    assert {(c.family, c.kind) for c in others if c.metric == "semantic_validity"} == \
        {(f, k) for f in ("ptq-int4", "fp32-noise") for k in ("difference", "equivalence")}
    # the page names the claims the run could not test
    result = BenchmarkResult(date="d", command="c", split="test", n=60, attributes=SETTINGS.attributes,
                             accuracy_images=1, processes=1, seconds=1.0, settings=asdict(SETTINGS),
                             rows=(_row("fp32"),), families=tuple(families), claims=tuple(found))
    table = claims_table(result, None)
    assert "**Registered family** (registered before the run, over exactly its claims), read by Holm" in table
    assert "could not test** (2, each counted in Holm's m as p = 1): absent − fp32 semantic validity % " \
           "(difference), absent − fp32 semantic validity % (equivalence)." in table


def test_without_a_registered_family_the_claims_are_as_before():
    _, families = _families(replace(SETTINGS, primary_family=None))
    found = claims(families)
    assert all(c.metric != "semantic_validity" for c in found)
    assert {c.correction_family for c in found} == {"primary", "secondary"}
    # the semantic tests are still in the family rows, at the registered margin
    assert {f.family: f for f in families}["g"].semantic["fp32"]["equivalence"]["margin"] == 10.0


def test_the_registered_file_is_read_and_recorded_with_the_run():
    registered = RegisteredFamily.from_file(assets_dir() / "results" / "benchmark-primary.json")
    assert len(registered.claims) == 22 and len(registered.rows) == 11 and registered.equivalence_margin == 10.0
    assert registered.rows[:2] == ("ptq-int8", "ptq-int4") and len(registered.sha256) == 64
    settings = BenchmarkSettings(primary_family=registered)
    written = json.loads(json.dumps(asdict(settings)))
    assert BenchmarkSettings.from_record(written) == settings
    # no chunk depends on it
    assert settings.fingerprint({"fp32": "abc"}) == BenchmarkSettings().fingerprint({"fp32": "abc"})
    with pytest.raises(ValueError, match="only semantic_validity"):
        RegisteredFamily("x", (RegisteredClaim("g", metric="vd"),))
    with pytest.raises(ValueError, match="not a registered family"):
        RegisteredFamily.from_file(assets_dir() / "absent.json")


def test_a_run_with_a_registered_family_recomputes_its_claims_from_its_columns(tmp_path):
    records = judged_records(RATES, tasks=60, seed=7, seen={"g": 0.2})
    saved = columns_of_records(records, list(RATES))
    attributes = list(saved.attributes)
    rows = [_row("fp32", family="fp32"), *(replace(_row(n, family=family_of(n)),
                                                   **row_recourse(n, saved.rows, attributes, SETTINGS, saved.semantic))
                                           for n in RATES)]
    families = family_rows(rows, records, SETTINGS)
    result = BenchmarkResult(date="d", command="c", split="test", n=60, attributes=SETTINGS.attributes,
                             accuracy_images=60, processes=1, seconds=1.0, settings=asdict(SETTINGS), rows=tuple(rows),
                             families=tuple(families), claims=tuple(claims(families, registered=REGISTERED)),
                             columns=write_columns(tmp_path / COLUMNS_FILE, saved),
                             **placement_fields(saved, SETTINGS))  # as a run writes it
    path = tmp_path / "benchmark.json"
    path.write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n")
    assert read_columns(tmp_path / COLUMNS_FILE).semantic["g"].judged.sum() == 30
    _, again, problems = check_run(path)
    assert problems == [] and sum(c.correction_family == "registered" for c in again.claims) == 4
    record = json.loads(path.read_text())
    assert record["rows"][1]["semantic"]["judged"] == 30 and "semantic" in record["families"][0]
    # a changed reading is found
    with np.load(tmp_path / COLUMNS_FILE, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    arrays["semantic_student_seen"][0] = ~arrays["semantic_student_seen"][0] & arrays["semantic_judged"][0]
    np.savez_compressed(tmp_path / COLUMNS_FILE, **arrays)
    assert any("semantic" in line for line in check_run(path)[2])


# --- records and caches made before the readings ------------------------------------------------


@pytest.mark.slow
def test_records_and_columns_without_readings_read_and_write_as_before(tmp_path):
    records = random_records({"g": 0.3, "ptq-int4": 0.1}, tasks=20)
    settings = BenchmarkSettings(n=20, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                                 bootstrap_samples=50)
    saved = columns_of_records(records, ["g", "ptq-int4"])
    fields = row_recourse("g", saved.rows, list(saved.attributes), settings, saved.semantic)
    assert fields["semantic_validity"] is None and fields["semantic"] == {}
    rows = [_row("fp32", family="fp32"), replace(_row("g", family="g"), **fields)]
    record = BenchmarkResult(date="d", command="c", split="test", n=20, attributes=("Smiling",), accuracy_images=1,
                             processes=1, seconds=1.0, settings={}, rows=tuple(rows),
                             families=tuple(family_rows(rows, records, settings))).to_dict()
    assert "semantic_validity" not in record["rows"][1] and "semantic" not in record["families"][0]
    # a columns file written before the readings reads back without them
    write_columns(tmp_path / "old.npz", replace(saved, semantic={}))
    assert read_columns(tmp_path / "old.npz").semantic == {}
    # the committed records: their rows and families as written (the denoised run's claims, written
    # before they carried corrected intervals, gain those as they always did)
    for name in ("benchmark-denoised.json", "archive/benchmark.json", "archive/benchmark-second.json"):
        committed = json.loads((assets_dir() / name).read_text())
        again = BenchmarkResult.from_dict(committed).to_dict()
        assert again["rows"] == committed["rows"] and again.get("families") == committed.get("families")
        assert again == committed or "corrected_low" not in committed["claims"][0]


def test_a_teacher_part_made_before_the_readings_is_completed_from_its_counterfactuals(fake_judge, tmp_path):
    settings = BenchmarkSettings(n=4, attributes=("Smiling", "Bangs"), chunk_size=4)
    x = torch.full((4, 3, 4, 4), 0.2)
    counterfactuals = torch.stack([torch.full((3, 4, 4), v) for v in (0.9, 0.9, 0.3, 0.3)])
    old = {"counterfactuals": counterfactuals, "target": torch.ones(4), "valid": torch.ones(4),
           "cost": torch.zeros(4), "logit": torch.zeros(4), "partial": torch.zeros(4, 2)}
    fields = {"tasks": 4, "first_task": 0, "fingerprint": "f"}
    path = tmp_path / "fp32-000000-f.safetensors"
    write_tensors(path, old, fields)

    class NoEdits(torch.nn.Module):
        def forward(self, images):
            raise AssertionError("the cached counterfactuals are read, none is made again")

    part = tasks.cached_teacher_part(x, 0, NoEdits(), settings, None, tmp_path, "f")
    assert torch.equal(part["counterfactuals"], counterfactuals)
    # tasks 0 and 2 are Smiling (judged), 1 and 3 Bangs (no judge: NaN, nothing scored)
    assert part["judge_seen"][0] == 1 and part["judge_seen"][2] == 0 and torch.isnan(part["judge_seen"][1::2]).all()
    stamp = path.stat().st_mtime_ns
    again = tasks.cached_teacher_part(x, 0, NoEdits(), settings, None, tmp_path, "f")
    assert path.stat().st_mtime_ns == stamp and all(torch.equal(again[k], part[k]) for k in ("target", "counterfactuals"))
    assert torch.equal(again["judge_seen"].nan_to_num(-1), part["judge_seen"].nan_to_num(-1))


def test_a_student_part_made_before_the_readings_remakes_only_its_judged_tasks(fake_judge, monkeypatch, tmp_path):
    from types import SimpleNamespace

    made = []

    def fake_recourse(images, attribute, targets, teacher_counterfactuals, student, config, generator, seeds,
                      stop_on_decider=True):
        made.append(attribute)
        n = len(images)
        return SimpleNamespace(counterfactuals=torch.full_like(images, 0.9), accepts_teacher=torch.ones(n, dtype=torch.bool),
                               valid=torch.ones(n, dtype=torch.bool), cost=torch.full((n,), 0.1), cosine=torch.ones(n),
                               logit_on_teacher=torch.ones(n), partial_on_teacher=torch.zeros(n, 2))

    monkeypatch.setattr(tasks, "student_recourse", fake_recourse)
    settings = BenchmarkSettings(n=4, attributes=("Smiling", "Bangs"), chunk_size=4)
    images = torch.full((4, 3, 4, 4), 0.2)
    teacher = {"target": torch.ones(4), "counterfactuals": images}
    earlier = [{"accepts_teacher": False, "valid": False, "cost": 0.5, "cosine": 0.0, "logit": -1.0,
                "partial": [0.0, 0.0]} for _ in range(4)]
    fields = {"method": "g", "tasks": 4, "first_task": 0, "fingerprint": "f"}
    path = tmp_path / "g-000000-f.json"
    from recourse.caches import json_digest

    path.write_text(json.dumps({**fields, "sha256": json_digest(earlier), "records": earlier}))
    assert tasks._cached_student_part(path, fields) == earlier  # an old part still reads
    records = tasks.student_part(images, 0, teacher, None, settings, None, earlier=earlier)
    assert made == ["Smiling"]  # Bangs has no judge: its tasks are kept as they were
    assert records[1] == {**earlier[1], "judge_score": None, "judge_seen": None, "judge_shift": None}
    assert records[0]["valid"] is True and records[0]["judge_seen"] is True
    assert records[0]["judge_score"] == pytest.approx(0.9) and records[0]["judge_shift"] == pytest.approx(0.7 / 0.6)
    # a part with the readings reads back as it is
    path.write_text(json.dumps({**fields, "sha256": json_digest(records), "records": records}))
    assert tasks._cached_student_part(path, fields) == records


# --- a whole run --------------------------------------------------------------------------------


def test_the_command_line_reads_the_registered_family():
    from recourse.cli import build_parser
    from recourse.cli.benchmark import _benchmark_settings

    arguments = ["benchmark", "--data", "d", "--out", "o"]
    path = assets_dir() / "results" / "benchmark-primary.json"
    assert _benchmark_settings(build_parser().parse_args(arguments)).primary_family is None
    settings = _benchmark_settings(build_parser().parse_args([*arguments, "--primary-family", str(path)]))
    assert settings.primary_family == RegisteredFamily.from_file(path)


@pytest.mark.slow
def test_a_run_reads_each_models_own_recourse_and_recomputes_the_registered_claims(
        tiny_setup, tmp_path, monkeypatch):
    from recourse.benchmark import BenchmarkConfig, run_benchmark
    from recourse.cli import main

    monkeypatch.setattr(semantic, "JUDGED", {"Smiling": "brightness"})
    monkeypatch.setattr(semantic, "calibrations", lambda: ((CALIBRATION, True),))
    monkeypatch.setattr(semantic, "judge", lambda name: Brightness())
    monkeypatch.setattr(semantic, "JUDGED_RESOLUTION", 16)  # the tiny faces
    registered = RegisteredFamily("registration.json", tuple(
        RegisteredClaim(row, kind=kind) for row in ("ptq-int4", "cfq-qat") for kind in ("difference", "equivalence")))
    settings = replace(tiny_setup["settings"], n=4, chunk_size=4, margins=(), noise_control=None,
                       primary_family=registered)
    out = tmp_path / "bench"
    result = run_benchmark(BenchmarkConfig(out=out, **{**tiny_setup, "settings": settings, "variants": ("ptq-int4",)}))
    rows = {row.method: row for row in result.rows}
    assert rows["fp32"].semantic == {"judged": 2}  # tasks 0 and 2 are Smiling's; Young has no judge here
    assert rows["ptq-int4"].semantic["judged"] == 2 and rows["ptq-int4"].semantic_validity is not None
    found = [c for c in result.claims if c.correction_family == "registered"]
    assert [(c.family, c.kind) for c in found] == [(c.row, c.kind) for c in registered.claims]
    assert [c.family for c in missing_claims(list(result.claims), registered)] == ["cfq-qat", "cfq-qat"]
    # every part keeps its readings; the record's statistics recompute from the saved columns
    part = json.loads(next((out / "cache").glob("ptq-int4-000000-*.json")).read_text())["records"]
    assert part[0]["judge_seen"] in (True, False) and part[1]["judge_seen"] is None
    assert main(["recompute-claims", str(out / "benchmark.json")]) == 0
    assert json.loads((out / "benchmark.json").read_text())["settings"]["primary_family"]["source"] == \
        "registration.json"


@pytest.mark.slow
def test_the_judges_framing_is_the_audits_and_every_entry_point_imports_first(tmp_path):
    """semantic.py keeps its own copy of the framing to stay out of an import cycle: the copy must
    agree, and each module must import first in a fresh interpreter (the cycle bites only in one order)."""
    import subprocess
    import sys

    from recourse.audit.instruments import JUDGED_RESOLUTION
    from recourse.benchmark import semantic

    assert semantic.JUDGED_RESOLUTION == JUDGED_RESOLUTION
    for module in ("recourse.audit.pipeline", "recourse.instruments.calibration", "recourse.benchmark"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
        assert done.returncode == 0, f"import {module}: {done.stderr[-400:]}"
