"""recourse/benchmark/floors.py and the rows behind it: the direction metrics read between the
teacher re-run with fresh noise (top) and independently retrained full-precision seeds (bottom,
one family fp32-ref); and the margin sweep read as curves (recourse/benchmark/sweep.py,
recourse/render/sweep_curves.py), on tiny generated values."""

import math
import xml.etree.ElementTree as ElementTree
from dataclasses import replace

import pytest
import torch

from recourse.audit.paired import Student, own_recourse, own_seeds
from recourse.benchmark import BenchmarkConfig, BenchmarkSettings
from recourse.benchmark.floors import (
    RERUN_FLOOR, RERUN_SEED_OFFSET, FloorScale, direction_scales, floor_scale, scale_position,
)
from recourse.benchmark.rows import REFERENCE_FAMILY, family_of, family_rows, is_floor, row_recourse
from recourse.benchmark.settings import FP32
from recourse.benchmark.sweep import (
    SweepPoint, family_curves, has_noise_spread, noise_band, outside_band, row_curves,
)
from recourse.benchmark.tasks import record_columns
from recourse.benchmark.terms import mean_of, sd_of
from recourse.generation import CounterfactualConfig
from recourse.render.floors import floors_section, position_cell
from recourse.render.sweep_curves import curve_charts, curve_svg, curve_table, curves_section
from tests.conftest import BrightnessModel
from tests.test_benchmark import _record, _row

# --- the floors' scale ------------------------------------------------------------------------


def test_a_position_is_one_on_the_top_floor_and_zero_on_the_bottom_in_either_direction():
    assert scale_position(95.0, 95.0, 64.0) == 1.0 and scale_position(64.0, 95.0, 64.0) == 0.0
    assert scale_position(67.1, 95.0, 64.0) == pytest.approx(0.1)
    # CRG's top floor is its smallest value: a smaller gap is still nearer the top
    assert scale_position(0.02, 0.02, 0.25) == 1.0 and scale_position(0.10, 0.02, 0.25) == pytest.approx(0.15 / 0.23)
    assert scale_position(50.0, 95.0, 64.0) < 0  # below an independently retrained model
    for undefined in ((float("nan"), 95.0, 64.0), (70.0, 64.0, 64.0), (70.0, math.inf, 64.0)):
        assert math.isnan(scale_position(*undefined))


def test_the_bottom_is_the_reference_seeds_mean_and_its_spread_their_sd():
    scale = floor_scale("dirsim", 95.0, [62.0, 64.0, None, 66.0])  # an undefined seed is left out
    assert scale == FloorScale("dirsim", 95.0, 64.0, 2.0, 3)
    position = scale.position(67.0)
    assert position.position == pytest.approx(3 / 31)
    # the bottom moved by its sd either way: (67 − 66) / (95 − 66) and (67 − 62) / (95 − 62)
    assert (position.low, position.high) == (pytest.approx(1 / 29), pytest.approx(5 / 33))
    assert position_cell(position) == "0.10 [0.03, 0.15]"
    one = floor_scale("dirsim", 95.0, [64.0]).position(67.0)  # one seed: no spread to show
    assert math.isnan(one.low) and position_cell(one) == "0.10"
    assert position_cell(scale.position(None)) == "n/a"
    assert floor_scale("dirsim", None, [64.0]) is None and floor_scale("dirsim", 95.0, [None]) is None


def _floor_rows() -> list:
    return [_row(FP32, vd=None, crg=None, dirsim=None), _row("ptq-int4", dirsim=67.0, crg=0.10),
            _row(RERUN_FLOOR, dirsim=95.0, crg=0.02), _row("fp32-ref-seed1", dirsim=62.0, crg=0.20),
            _row("fp32-ref-seed2", dirsim=64.0, crg=0.30), _row("fp32-ref-seed3", dirsim=66.0, crg=0.25)]


def test_a_run_has_a_scale_only_with_both_floors():
    rows = _floor_rows()
    scales = direction_scales(rows)
    assert scales["dirsim"] == FloorScale("dirsim", 95.0, 64.0, 2.0, 3)
    assert scales["crg"].top == 0.02 and scales["crg"].bottom == pytest.approx(0.25)
    assert direction_scales([r for r in rows if r.method != RERUN_FLOOR]) == {}  # every run made before the floors
    assert direction_scales([r for r in rows if not r.method.startswith("fp32-ref-")]) == {}


def test_the_floors_section_places_every_row_and_is_empty_without_floors():
    rows = _floor_rows()
    text = floors_section(rows)
    assert "Top: `fp32-rerun`" in text and "Bottom: `fp32-ref`, 3 independently retrained" in text
    assert "DirSim 64.0 ± 2.0" in text and "CRG 0.250 ± 0.050" in text
    assert "| ptq-int4 | 67.0 | 0.10 [0.03, 0.15] | 0.100 | 0.65 [0.56, 0.71] |" in text
    assert "| fp32-rerun | 95.0 | 1.00 [1.00, 1.00] |" in text and "| fp32 |" not in text
    assert floors_section([r for r in rows if r.method != RERUN_FLOOR]) == ""


# --- the top floor: the teacher re-run with fresh noise -------------------------------------------


def test_the_rerun_row_makes_its_own_recourse_with_seeds_the_teacher_never_uses(tiny_generator):
    from recourse.benchmark.compared_models import rerun_row

    teacher = BrightnessModel()
    student, fact = rerun_row(teacher, 1000)
    assert student.name == RERUN_FLOOR and student.twin is teacher and student.decider is teacher
    assert student.seed_offset == RERUN_SEED_OFFSET and fact.details == {"seed_offset": RERUN_SEED_OFFSET}
    config = CounterfactualConfig(method="pca-walk-cone", steps=4, noise_level=0.5, finish_steps=4, margin=1.0)
    # every task's seed of the teacher (counterfactual seed + task, tasks below CelebA's 202,599 photos)
    teacher_seeds = set(range(config.seed, config.seed + 202_599))
    rerun_seeds = own_seeds(student, tuple(range(config.seed, config.seed + 202_599, 997)), config, 204)
    assert not teacher_seeds & set(rerun_seeds)
    plain = Student("g", teacher, teacher)  # a student without an offset shares the teacher's seeds
    assert own_seeds(plain, (5, 6), config, 2) == (5, 6) and own_seeds(plain, None, config, 2) is None
    assert own_seeds(student, None, config, 2) == (config.seed + RERUN_SEED_OFFSET, config.seed + 1 + RERUN_SEED_OFFSET)
    # the seeds reach the generator: the re-run's recourse is made with them
    images = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(0)) * 0.4
    made = own_recourse(images, "Smiling", torch.ones(2, dtype=torch.long), student, config, tiny_generator, (7, 8))
    assert made.seeds == (7 + RERUN_SEED_OFFSET, 8 + RERUN_SEED_OFFSET)
    assert own_recourse(images, "Smiling", torch.ones(2, dtype=torch.long), plain, config, tiny_generator,
                        (7, 8)).seeds == (7, 8)


def test_the_benchmark_passes_the_offset_seeds_to_the_rerun_and_the_tasks_seeds_to_the_teacher(monkeypatch):
    """Through the benchmark's own teacher and student parts (recourse.benchmark.tasks), with the
    generator replaced by one that records the seeds it is given."""
    from types import SimpleNamespace

    from recourse.audit import paired
    from recourse.benchmark import tasks
    from recourse.benchmark.compared_models import rerun_row

    given: dict[str, list[int]] = {"teacher": [], "rerun": []}

    def recording(images, model, attribute, targets, config, generator, seeds=None, decider=None):
        given["rerun" if recording.student else "teacher"].extend(seeds)
        n = len(images)
        return SimpleNamespace(images=images * 0.9, valid=torch.ones(n, dtype=torch.bool), cost=torch.full((n,), 0.1),
                               probability_after=torch.ones(n), edits=None)

    monkeypatch.setattr(tasks, "generate", recording)
    monkeypatch.setattr(paired, "generate", recording)
    teacher = BrightnessModel()
    settings = BenchmarkSettings(n=4, first_task=10, attributes=("Smiling", "Young"), chunk_size=4)
    images = torch.rand(4, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    recording.student = False
    part = tasks.teacher_part(images, 10, teacher, settings, None)
    recording.student = True
    tasks.student_part(images, 10, part, rerun_row(teacher, 1000)[0], settings, None)
    seed = settings.counterfactual.seed
    assert sorted(given["teacher"]) == [seed + 10 + k for k in range(4)]
    assert sorted(given["rerun"]) == [seed + 10 + k + RERUN_SEED_OFFSET for k in range(4)]


def test_the_rerun_has_its_own_cache_key_and_is_off_by_default(tmp_path):
    from recourse.benchmark.compared_models import rerun_fingerprint

    settings, inputs = BenchmarkSettings(), {FP32: "abc", "generator": "def", "split": "test", "data": "/d"}
    assert rerun_fingerprint(settings, inputs) != settings.fingerprint(inputs)  # never the teacher's part
    assert rerun_fingerprint(settings, inputs) == rerun_fingerprint(settings, dict(inputs))  # stable
    assert rerun_fingerprint(settings, inputs) != rerun_fingerprint(settings, {**inputs, FP32: "other"})
    assert BenchmarkConfig(data=tmp_path, out=tmp_path).rerun_floor is False  # old commands unchanged
    with pytest.raises(ValueError, match="variants must be"):
        BenchmarkConfig(data=tmp_path, out=tmp_path, variants=(RERUN_FLOOR,))


def test_the_command_line_asks_for_the_rerun_floor():
    from recourse.cli import build_parser

    base = ["benchmark", "--data", "d", "--out", "o"]
    assert build_parser().parse_args(base).rerun_floor is False
    assert build_parser().parse_args([*base, "--rerun-floor"]).rerun_floor is True


# --- the bottom floor: the reference seeds as one family -------------------------------------------


def test_the_reference_folders_are_one_family_with_each_folders_row_kept():
    assert family_of("fp32-ref-classifier-seed1") == family_of("fp32-ref-seed2") == REFERENCE_FAMILY
    assert family_of("cfq-qat-s2") == "cfq-qat" and family_of(RERUN_FLOOR) == RERUN_FLOOR
    assert is_floor(REFERENCE_FAMILY) and is_floor("fp32-ref-classifier-seed1")  # the committed runs' family names
    generator = torch.Generator().manual_seed(3)
    names = ("ptq-int4", "fp32-ref-a", "fp32-ref-b", "fp32-ref-c")
    records = []
    for i in range(40):
        record = _record(i, True, 0.1, True, True, 0.1, 1.0, attribute=("Smiling", "Bangs")[i % 2])
        for k, name in enumerate(names):
            cosine = 0.5 + 0.1 * k + 0.2 * float(torch.rand(1, generator=generator))
            record["students"][name] = {**record["students"]["g"], "cosine": cosine,
                                        "cost": 0.1 + 0.05 * float(torch.rand(1, generator=generator))}
        del record["students"]["g"]
        records.append(record)
    settings = BenchmarkSettings(n=40, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                                 bootstrap_samples=50)
    columns = {name: record_columns(records, name) for name in names}
    attributes = [r["attribute"] for r in records]
    rows = [_row(FP32, family=FP32), *(replace(_row(name, family=family_of(name)),
                                               **row_recourse(name, columns, attributes, settings)) for name in names)]
    families = {f.family: f for f in family_rows(rows, records, settings)}
    assert set(families) == {"ptq-int4", REFERENCE_FAMILY}
    reference = families[REFERENCE_FAMILY]
    assert reference.variants == ("fp32-ref-a", "fp32-ref-b", "fp32-ref-c")
    dirsims = [row.dirsim for row in rows if row.method.startswith("fp32-ref-")]
    assert reference.metrics["all"]["dirsim"]["mean"] == pytest.approx(mean_of(dirsims))
    assert reference.metrics["all"]["dirsim"]["sd"] == pytest.approx(sd_of(dirsims)) and sd_of(dirsims) > 0
    assert REFERENCE_FAMILY in families["ptq-int4"].equivalence  # still a floor: TOST against it
    # the bottom floor's scale has the same mean and spread as the family
    scale = direction_scales([*rows, _row(RERUN_FLOOR, dirsim=95.0, crg=0.0)])["dirsim"]
    assert (scale.bottom, scale.bottom_sd, scale.references) == (pytest.approx(mean_of(dirsims)),
                                                                  pytest.approx(sd_of(dirsims)), 3)


# --- VD as a curve -----------------------------------------------------------------------------


def _points(draws: int = 3) -> list[SweepPoint]:
    """Three margins; ptq-int4 with two seeds (its fa_75 undefined at margin 1), cfq-qat, noise draws."""
    def point(k: int, margin: float) -> SweepPoint:
        students = {"ptq-int4": {"vd": 30.0 - 10 * k, "fa_75": None if k == 1 else 5.0, "logit_lean": -0.3 - 0.1 * k},
                    "ptq-int4-s1": {"vd": 20.0 - 10 * k, "fa_75": 3.0, "logit_lean": -0.5},
                    "cfq-qat": {"vd": 10.0, "fa_75": 1.0, "logit_lean": 0.25}}
        for d in range(draws):
            students["fp32-noise" if d == 0 else f"fp32-noise-s{d}"] = {"vd": 20.0 - 8 * k + d, "fa_75": 2.0 + d,
                                                                        "logit_lean": -0.2 - 0.1 * d}
        return SweepPoint(margin=margin, teacher_success=90.0, teacher_cost=0.02, s=9, students=students)

    return [point(k, margin) for k, margin in enumerate((0.0, 1.0, 2.0))]


def test_the_curves_and_the_noise_band_over_the_margins():
    points = _points()
    curves = {c.name: c for c in row_curves(points, "vd")}
    assert list(curves) == ["ptq-int4", "ptq-int4-s1", "cfq-qat"] and curves["ptq-int4"].values == (30.0, 20.0, 10.0)
    assert curves["ptq-int4"].margins == (0.0, 1.0, 2.0)
    families = {c.name: c for c in family_curves(points, "vd")}
    assert families["ptq-int4"].values == (25.0, 15.0, 5.0)  # the mean over its seeds
    fa = {c.name: c for c in family_curves(points, "fa_75")}["ptq-int4"].values
    assert fa == (4.0, 3.0, 4.0)  # an undefined seed is left out of the mean
    band = noise_band(points, "vd")
    assert band.draws == ("fp32-noise", "fp32-noise-s1", "fp32-noise-s2")
    assert band.mean == (21.0, 13.0, 5.0) and band.low == (20.0, 12.0, 4.0) and band.high == (22.0, 14.0, 6.0)
    assert has_noise_spread(points) and not has_noise_spread(_points(draws=1))
    assert noise_band(_points(draws=0), "vd") is None


def test_a_curve_leaves_the_band_where_it_lies_outside_the_draws_range():
    points = _points()
    band = noise_band(points, "vd")  # low (20, 12, 4), high (22, 14, 6)
    families = {c.name: c for c in family_curves(points, "vd")}
    assert outside_band(families["ptq-int4"], band) == ((0.0, 1), (1.0, 1))  # 25, 15 above; 5 inside
    assert outside_band(families["cfq-qat"], band) == ((0.0, -1), (1.0, -1), (2.0, 1))
    on_the_edge = replace(families["cfq-qat"], values=(20.0, 14.0, float("nan")))
    assert outside_band(on_the_edge, band) == ()  # the range's ends are inside; an undefined value is not read


def test_the_curve_tables_show_every_row_and_the_noise_draws_range():
    points = _points()
    vd = curve_table(points, "vd")
    assert vd.splitlines()[0] == "| VD % | 0 | 1 | 2 |"
    assert "| noise draws, mean [min, max] of 3 | 21.0 [20.0, 22.0] | 13.0 [12.0, 14.0] | 5.0 [4.0, 6.0] |" in vd
    assert "| ptq-int4 | 30.0 | 20.0 | 10.0 |" in vd and "| fp32-noise |" not in vd
    assert "| ptq-int4 | 5.0 | n/a | 5.0 |" in curve_table(points, "fa_75")
    lean = curve_table(points, "logit_lean")
    assert "| cfq-qat | +0.25 | +0.25 | +0.25 |" in lean and "| ptq-int4 | -0.30 | -0.40 | -0.50 |" in lean
    section = curves_section(points)
    assert section.count("| noise draws, mean [min, max] of 3 |") == 3
    # one noise draw (the committed cone-walk runs): no band, no curves; their reports stay as they were
    assert curves_section(_points(draws=1)) == "" and curve_charts(_points(draws=1)) == ""


def test_the_curve_chart_is_one_line_of_svg_with_a_line_per_family_and_the_band():
    points = _points()
    svg = curve_svg(points, "vd")
    assert "\n" not in svg
    root = ElementTree.fromstring(svg)  # well-formed
    ns = "{http://www.w3.org/2000/svg}"
    lines = root.findall(f"{ns}polyline")
    assert len(lines) == 3  # the noise draws' mean and two families (ptq-int4's seeds averaged, cfq-qat)
    assert len(root.findall(f"{ns}polygon")) == 1  # the band
    labels = [t.text for t in root.findall(f"{ns}text")]
    assert {"0", "1", "2", "ptq-int4", "cfq-qat", "noise draws (3)"} <= set(labels)
    # an undefined value breaks the line: ptq-int4-s1 has fa_75 everywhere, so only a lone family breaks
    broken = replace(points[1], students={**points[1].students, "cfq-qat": {"vd": 10.0, "fa_75": None,
                                                                            "logit_lean": 0.25}})
    chart = ElementTree.fromstring(curve_svg([points[0], broken, points[2]], "fa_75"))
    assert len(chart.findall(f"{ns}polyline")) == 1 + 1 + 2  # noise mean, ptq-int4, cfq-qat in two pieces
    charts = curve_charts(points)
    assert charts.startswith('<div class="sweep-curves">') and charts.count("<svg") == 3 and "\n" not in charts


def test_the_results_page_draws_the_validation_sweep_as_curves():
    from scripts.docs.results import default_benchmark

    sweep = {"n": 10, "split": "val", "seconds": 100.0, "processes": 2, "command": "python -m recourse benchmark …",
             "settings": {"noise_match_split": "val"}, "sweep": [p.to_dict() for p in _points()]}
    text = "\n".join(default_benchmark.margin_choice(sweep, used=2.0))
    assert "The same sweep as curves" in text and text.count('<svg xmlns="http://www.w3.org/2000/svg"') == 3
    one = {**sweep, "sweep": [p.to_dict() for p in _points(draws=1)]}
    assert "<svg" not in "\n".join(default_benchmark.margin_choice(one, used=2.0))


# --- both floors in a whole (tiny) run ---------------------------------------------------------


@pytest.mark.slow  # a whole benchmark run, tiny: about 15 s on two cores
def test_a_run_with_both_floors_reports_the_scale(hq_folder, tmp_path, tiny_generator, bright_checkpoint):
    import shutil

    from recourse.benchmark import run_benchmark
    from recourse.checkpoints import load_classifier
    from recourse.compression import PTQInt8Config, quantize, save_variant
    from recourse.render.benchmark import markdown_report
    from tests.test_benchmark import FAST

    root, _ = hq_folder
    shutil.copytree(bright_checkpoint, tmp_path / "fp32")
    model = load_classifier(tmp_path / "fp32")
    calibration = torch.rand(8, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    save_variant(quantize(model, PTQInt8Config(calibration_images=8), calibration), model,
                 tmp_path / "variants" / "ptq-int8")
    for seed in ("seed1", "seed2"):  # the same weights twice: the plumbing, not the spread
        shutil.copytree(bright_checkpoint, tmp_path / f"classifier-{seed}")
    tiny_generator.save_pretrained(tmp_path / "generator")
    settings = BenchmarkSettings(n=4, attributes=("Smiling", "Young"), chunk_size=4, counterfactual=FAST,
                                 latency_repeats=1, bootstrap_samples=20, noise_control=None)
    out = tmp_path / "bench"
    result = run_benchmark(BenchmarkConfig(
        data=root, out=out, split="all", settings=settings, variants=("ptq-int8",), checkpoint=tmp_path / "fp32",
        variants_dir=tmp_path / "variants", generator=str(tmp_path / "generator"), image_cache=None,
        reference_models=(tmp_path / "classifier-seed1", tmp_path / "classifier-seed2"), rerun_floor=True))
    methods = [row.method for row in result.rows]
    assert methods == [FP32, "ptq-int8", RERUN_FLOOR, "fp32-ref-classifier-seed1", "fp32-ref-classifier-seed2"]
    rerun = result.rows[2]
    assert rerun.family == RERUN_FLOOR and rerun.details == {"seed_offset": RERUN_SEED_OFFSET} and rerun.agreement == 100
    assert {f.family: f.variants for f in result.families}[REFERENCE_FAMILY] == (
        "fp32-ref-classifier-seed1", "fp32-ref-classifier-seed2")
    # the re-run's cached part has its own key, apart from the teacher's
    teacher_keys = {path.stem.rsplit("-", 1)[1] for path in (out / "cache").glob(f"{FP32}-0*")}
    rerun_keys = {path.stem.rsplit("-", 1)[1] for path in (out / "cache").glob(f"{RERUN_FLOOR}-0*")}
    assert len(rerun_keys) == 1 and not rerun_keys & teacher_keys
    assert "DirSim and CRG between their floors. Top: `fp32-rerun`" in markdown_report(result)
