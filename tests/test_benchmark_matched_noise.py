"""Noise floors matched to each variant's own agreement (issue 37, ``BenchmarkSettings.matched_noise``):
each floor's draws matched to its variant, their names grouped into one family that is never the
noise control's, a variant's TOST read against its own floor, the sweep's band and margin rule on
the noise control alone, and the setting recorded (the committed records read back without it)."""

import json
import math
from dataclasses import asdict, replace

import pytest
import torch

from recourse.audit.paired import Student
from recourse.benchmark import BenchmarkConfig, BenchmarkResult, BenchmarkSettings
from recourse.benchmark.claims import claims, semantic_candidates
from recourse.benchmark.rows import (
    NOISE_CONTROL, REFERENCE_FAMILY, family_floors, family_of, family_rows, is_floor, matched_noise_draw,
    matched_noise_family, matched_to,
)
from recourse.benchmark.sweep import SweepPoint, chosen_margin, noise_band, noise_control_vd, noise_draws, row_curves
from recourse.benchmark.weight_noise_floor import noisy_copy
from recourse.locations import assets_dir
from recourse.metrics import agreement, decisions
from recourse.progress import silent
from tests.conftest import tiny_classifier
from tests.test_benchmark import _row
from tests.test_benchmark_symmetry import random_records

SETTINGS = BenchmarkSettings(n=60, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                             bootstrap_samples=200)

# --- names ---------------------------------------------------------------------------------------


def test_a_matched_floor_s_draws_are_one_family_named_after_its_variant_and_never_the_noise_control():
    draws = [matched_noise_draw("ptq-int8", d) for d in range(3)]
    assert draws == ["fp32-noise@ptq-int8", "fp32-noise-s1@ptq-int8", "fp32-noise-s2@ptq-int8"]
    assert {family_of(d) for d in draws} == {matched_noise_family("ptq-int8")} == {"fp32-noise@ptq-int8"}
    assert all(matched_to(d) == "ptq-int8" and family_of(d) != NOISE_CONTROL and is_floor(family_of(d))
               for d in draws)
    # a variant whose own name ends in a seed suffix is never read as a draw of another variant's floor
    assert family_of(matched_noise_draw("cfq-qat-s2", 0)) == "fp32-noise@cfq-qat-s2"
    assert family_of(matched_noise_draw("cfq-qat", 2)) == "fp32-noise@cfq-qat"
    assert matched_to(matched_noise_draw("cfq-qat-s2", 1)) == "cfq-qat-s2"
    # the noise control's draws, the variants and the reference classifiers keep their families
    assert [family_of(n) for n in ("fp32-noise", "fp32-noise-s2", "cfq-qat-s2", "fp32-ref-classifier-seed1")] == \
        [NOISE_CONTROL, NOISE_CONTROL, "cfq-qat", REFERENCE_FAMILY]
    assert all(matched_to(n) is None for n in ("fp32-noise", "fp32-noise-s1", "ptq-int8", "fp32-ref-x"))


def test_each_family_reads_its_own_matched_floor_and_a_matched_floor_reads_none():
    families = ["ptq-int8", "ptq-int4", "g", NOISE_CONTROL, "fp32-noise@ptq-int8", "fp32-noise@gptq-int2",
                REFERENCE_FAMILY]
    assert family_floors("ptq-int8", families) == ["fp32-noise@ptq-int8", REFERENCE_FAMILY]
    assert family_floors("g", families) == [NOISE_CONTROL, REFERENCE_FAMILY]  # no floor of its own
    assert family_floors("ptq-int4", families) == [NOISE_CONTROL, REFERENCE_FAMILY]
    assert family_floors(NOISE_CONTROL, families) == [REFERENCE_FAMILY]
    assert family_floors(REFERENCE_FAMILY, families) == [NOISE_CONTROL]
    assert family_floors("fp32-noise@ptq-int8", families) == []
    # a floor matched to one seed of a family is the whole family's (its seeds are one family)
    assert family_floors("cfq-qat", ["cfq-qat", NOISE_CONTROL, "fp32-noise@cfq-qat-s1"]) == ["fp32-noise@cfq-qat-s1"]
    # without matched floors, every floor as before
    plain = ["g", "ptq-int4", NOISE_CONTROL, REFERENCE_FAMILY]
    assert family_floors("g", plain) == [f for f in plain if is_floor(f) and f != "g"]


# --- the draws: each floor matched to its own variant's agreement ---------------------------------


def _teacher_and_students():
    teacher = tiny_classifier(gain=3.0)
    # stand-ins of three agreements with the teacher: about 98.6, 94 and 84% on the images below
    students = {"ptq-int8": noisy_copy(teacher, 0.05, seed=5), "ptq-int4": noisy_copy(teacher, 0.3, seed=6),
                "gptq-int2": noisy_copy(teacher, 0.4, seed=7)}
    return teacher, {name: Student(name, model, model) for name, model in students.items()}


@pytest.mark.slow
def test_each_matched_floor_s_draws_have_their_own_sigma_matched_to_their_variant_s_agreement():
    from recourse.benchmark.compared_models import noise_controls

    teacher, students = _teacher_and_students()
    images = torch.rand(200, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        reference = decisions(teacher(images))
        agreements = {name: agreement(reference, decisions(s.decider(images))) for name, s in students.items()}
    assert agreements["ptq-int8"] > agreements["ptq-int4"] > agreements["gptq-int2"]
    floors = {v: noise_controls(teacher, students, images, v, 1000, draws=2, matching_split="val", own_floor=True)
              for v in ("ptq-int8", "gptq-int2")}
    sigmas = {}
    for variant, controls in floors.items():
        assert list(controls) == [matched_noise_draw(variant, 0), matched_noise_draw(variant, 1)]
        details = [fact.details for _, fact in controls.values()]
        assert all(d["matched_to"] == variant and d["target_agreement"] == round(agreements[variant], 3)
                   for d in details)
        assert [d["seed"] for d in details] == [0, 1] and len({d["sigma"] for d in details}) == 2
        for name, (control, fact) in controls.items():  # each draw reaches its variant's agreement
            with torch.no_grad():
                measured = agreement(reference, decisions(control.decider(images)))
            assert measured == pytest.approx(fact.details["agreement_on_matching_images"], abs=1e-3)
            assert abs(measured - agreements[variant]) < 2.0, name
        sigmas[variant] = [d["sigma"] for d in details]
    # the 8-bit variant agrees more: its floor has less noise than the 2-bit one's, draw for draw
    assert all(a < b for a, b in zip(sigmas["ptq-int8"], sigmas["gptq-int2"]))
    # the noise control of the same variant keeps its names
    assert list(noise_controls(teacher, students, images, "ptq-int8", 1000, draws=2)) == \
        [NOISE_CONTROL, "fp32-noise-s1"]


def test_a_kept_sigma_is_measured_once_instead_of_bisected_and_a_wrong_one_is_bisected_again(tmp_path, monkeypatch):
    from recourse.benchmark import compared_models

    teacher, students = _teacher_and_students()
    images = torch.rand(120, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    first = compared_models.noise_controls(teacher, students, images, "ptq-int4", 1000, draws=2, memo=tmp_path)
    kept = sorted(tmp_path.glob("noise-sigma-*.json"))
    assert len(kept) == 2 and not list(tmp_path.glob("*.tmp"))

    def no_bisection(*args, **kwargs):
        raise AssertionError("bisected although the sigma was kept")

    monkeypatch.setattr(compared_models, "matched_noise", no_bisection)
    again = compared_models.noise_controls(teacher, students, images, "ptq-int4", 1000, draws=2, memo=tmp_path)
    assert [fact.details for _, fact in again.values()] == [fact.details for _, fact in first.values()]
    for (a, _), (b, _) in zip(first.values(), again.values()):
        assert all(torch.equal(p, q) for p, q in zip(a.decider.parameters(), b.decider.parameters()))
    # other matching faces are another key: bisected, not read
    with pytest.raises(AssertionError, match="bisected"):
        compared_models.noise_controls(teacher, students, images[:100], "ptq-int4", 1000, draws=1, memo=tmp_path)
    # a kept sigma whose agreement is not the kept one (another teacher's file, a hand edit) is bisected again
    record = json.loads(kept[0].read_text())
    kept[0].write_text(json.dumps({**record, "sigma": record["sigma"] * 3}))
    with pytest.raises(AssertionError, match="bisected"):
        compared_models.noise_controls(teacher, students, images, "ptq-int4", 1000, draws=2, memo=tmp_path)


def test_the_processes_of_a_run_bisect_each_draw_once_between_them(tmp_path, monkeypatch):
    from recourse.benchmark import compared_models

    teacher, students = _teacher_and_students()
    images = torch.rand(120, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    variants = ["ptq-int4", "ptq-int8"]
    shares = [compared_models.share_noise_sigmas(teacher, students, images, variants, 3, tmp_path, k, 2)
              for k in range(2)]
    assert shares == [3, 3] and len(list(tmp_path.glob("noise-sigma-*.json"))) == 6

    def no_bisection(*args, **kwargs):
        raise AssertionError("bisected although another process kept the sigma")

    monkeypatch.setattr(compared_models, "matched_noise", no_bisection)
    for variant in variants:  # every process then reads every draw's kept sigma
        compared_models.noise_controls(teacher, students, images, variant, 1000, draws=3, memo=tmp_path,
                                       own_floor=variant != "ptq-int4")


def test_a_run_adds_a_floor_per_named_variant_it_has_each_keyed_by_its_details(tmp_path):
    from recourse.benchmark.run import _add_noise_controls

    teacher, students = _teacher_and_students()
    images = (torch.rand(60, 3, 16, 16, generator=torch.Generator().manual_seed(1)) * 255).to(torch.uint8)
    settings = replace(SETTINGS, noise_draws=2, noise_match_split=None,
                       matched_noise=("ptq-int8", "ptq-int4", "gptq-int2", "cfq-qat-b2"))
    config = BenchmarkConfig(data=tmp_path, out=tmp_path, variants=tuple(students), settings=settings)
    facts, fingerprints = {}, {}
    _add_noise_controls(config, None, silent, teacher, images, 1000, {"fp32": "digest"}, students, facts, fingerprints)
    added = [name for name in students if name in facts]
    # the noise control (ptq-int4's agreement: no second floor for it), then each named variant the
    # run has (cfq-qat-b2 is not in this run)
    assert added == ["fp32-noise", "fp32-noise-s1", "fp32-noise@ptq-int8", "fp32-noise-s1@ptq-int8",
                     "fp32-noise@gptq-int2", "fp32-noise-s1@gptq-int2"]
    assert [family_of(n) for n in added].count(NOISE_CONTROL) == 2
    assert {facts[n].details["matched_to"] for n in added} == {"ptq-int4", "ptq-int8", "gptq-int2"}
    assert len({fingerprints[n] for n in added}) == len(added)  # each draw's cached part its own
    for name in added:  # the key is the settings' fingerprint of the draw's details (sigma, matched_to, seed)
        assert {"sigma", "matched_to", "seed"} <= set(facts[name].details)
        assert fingerprints[name] == settings.fingerprint(
            {"fp32": "digest", NOISE_CONTROL: json.dumps(facts[name].details, sort_keys=True)})
    # without matched floors, the noise control alone, as before
    teacher, students = _teacher_and_students()
    facts, fingerprints = {}, {}
    _add_noise_controls(replace(config, settings=replace(settings, matched_noise=())), None, silent, teacher, images,
                        1000, {"fp32": "digest"}, students, facts, fingerprints)
    assert list(facts) == ["fp32-noise", "fp32-noise-s1"]


def test_a_run_takes_one_matched_floor_per_family(tmp_path):
    with pytest.raises(ValueError, match="one variant per family"):
        BenchmarkConfig(data=tmp_path, out=tmp_path, variants=("cfq-qat", "cfq-qat-s1"),
                        settings=replace(SETTINGS, matched_noise=("cfq-qat", "cfq-qat-s1")))
    # a named variant the run does not have is left out, as the noise control's is
    BenchmarkConfig(data=tmp_path, out=tmp_path, variants=("cfq-qat",),
                    settings=replace(SETTINGS, matched_noise=("cfq-qat", "cfq-qat-s1")))


# --- claims: a variant's TOST against its own floor ------------------------------------------------

RATES = {"g": 0.3, "ptq-int8": 0.02, "ptq-int4": 0.1, "fp32-noise": 0.1, "fp32-noise-s1": 0.12,
         "fp32-ref-seed1": 0.25}
MATCHED = {"fp32-noise@ptq-int8": 0.03, "fp32-noise-s1@ptq-int8": 0.01}


def _families(names: list[str], judged: bool = False):
    """The family rows of the students ``names`` of one set of records (drawn for all of
    :data:`RATES` and :data:`MATCHED`, so that leaving the floor out changes no other column)."""
    records = random_records({**RATES, **MATCHED}, tasks=60, seed=3)
    for record in records:
        record["students"] = {n: record["students"][n] for n in names}
    if judged:  # the judges' readings of every task (recourse.benchmark.semantic)
        for i, record in enumerate(records):
            record["teacher_judge_seen"] = i % 3 != 0
            for student in record["students"].values():
                student["judge_seen"] = i % 4 != 0
    rows = [_row("fp32", family="fp32"), *(_row(n, family=family_of(n)) for n in names)]
    return {f.family: f for f in family_rows(rows, records, SETTINGS)}


def test_a_variant_s_tost_is_read_against_its_own_floor_and_the_floor_has_no_test_of_its_own():
    families = _families([*RATES, *MATCHED])
    floor = families["fp32-noise@ptq-int8"]
    assert floor.variants == tuple(MATCHED) and "vd" in floor.metrics["all"]  # measured like any family
    assert floor.equivalence == {} and floor.tests == {} and floor.paired == {}
    assert set(families["ptq-int8"].equivalence) == {"fp32-noise@ptq-int8", REFERENCE_FAMILY}
    for other in ("g", "ptq-int4"):
        assert set(families[other].equivalence) == {NOISE_CONTROL, REFERENCE_FAMILY}
    found = claims(list(families.values()))
    tost = {(c.family, c.reference) for c in found if c.kind == "equivalence"}
    assert ("ptq-int8", "fp32-noise@ptq-int8") in tost and ("ptq-int8", NOISE_CONTROL) not in tost
    assert not any("@" in c.family for c in found)  # the floor adds no claim of its own
    keys = [(c.kind, c.family, c.reference, c.group, c.metric) for c in found]
    assert len(keys) == len(set(keys))  # each claim once
    assert {c.correction_family for c in found if c.kind == "equivalence"} == {"primary", "secondary"}
    # the claim is the family's TOST against the floor as recorded on the family row
    claim = next(c for c in found if (c.kind, c.family, c.reference, c.group, c.metric)
                 == ("equivalence", "ptq-int8", "fp32-noise@ptq-int8", "all", "vd"))
    recorded = families["ptq-int8"].equivalence["fp32-noise@ptq-int8"]["all"]["vd"]
    assert (claim.difference, claim.p, claim.margin) == (recorded["estimate"], recorded["p"], recorded["margin"])


@pytest.mark.slow
def test_the_matched_floor_replaces_one_tost_so_every_other_claim_is_as_without_it():
    without = claims(list(_families(list(RATES)).values()))
    found = claims(list(_families([*RATES, *MATCHED]).values()))
    assert len(found) == len(without)  # one floor for another: the correction families keep their size

    def keyed(claims_: list) -> dict:
        return {(c.kind, c.family, c.reference, c.group, c.metric): c for c in claims_}

    before, after = keyed(without), keyed(found)
    assert {k for k in before if k[:3] == ("equivalence", "ptq-int8", NOISE_CONTROL)} == \
        {k[:2] + (NOISE_CONTROL,) + k[3:] for k in after if k[:3] == ("equivalence", "ptq-int8", "fp32-noise@ptq-int8")}
    for key, claim in before.items():
        if key[:2] != ("equivalence", "ptq-int8"):
            assert after[key].p == claim.p or (math.isnan(claim.p) and math.isnan(after[key].p)), key


@pytest.mark.slow
def test_a_matched_floor_has_no_semantic_claim():
    families = _families([*RATES, *MATCHED], judged=True)
    assert families["fp32-noise@ptq-int8"].semantic  # measured and shown ...
    tested = {c.family for c in semantic_candidates(list(families.values()))}
    assert "fp32-noise@ptq-int8" not in tested and {"g", "ptq-int8", NOISE_CONTROL} <= tested  # ... not a claim


# --- the sweep: the band and the margin rule read the noise control alone -----------------------------


def test_the_sweep_s_band_and_margin_rule_ignore_the_matched_floors():
    def point(margin: float, noise: float, matched: float) -> SweepPoint:
        values = {"fp32-noise": noise, "fp32-noise-s1": noise, "fp32-noise@gptq-int2": matched,
                  "fp32-noise-s1@gptq-int2": matched, "gptq-int2": 40.0}
        return SweepPoint(margin=margin, teacher_success=90.0, teacher_cost=0.1, s=50,
                          students={n: {"vd": v, "fa_50": 0.0, "fa_75": 0.0, "logit_gap": 0.0, "logit_lean": 0.0}
                                    for n, v in values.items()})

    points = [point(1.0, 8.0, 1.0), point(2.0, 4.0, 30.0)]
    assert noise_control_vd(points[0]) == 8.0 and chosen_margin(points) == 2.0
    assert chosen_margin(points, every_draw=True) == 2.0
    assert noise_draws(points) == ["fp32-noise", "fp32-noise-s1"]
    assert noise_band(points, "vd").mean == (8.0, 4.0)
    # the matched floors' draws are a curve each, like any row's
    assert [c.name for c in row_curves(points, "vd")] == ["fp32-noise@gptq-int2", "fp32-noise-s1@gptq-int2",
                                                          "gptq-int2"]


# --- the setting: validated, recorded, read back ------------------------------------------------------


def test_the_setting_is_validated_recorded_and_not_a_chunk_key():
    settings = replace(SETTINGS, matched_noise=("ptq-int8", "gptq-int2"))
    written = json.loads(json.dumps(asdict(settings)))
    assert written["matched_noise"] == ["ptq-int8", "gptq-int2"]
    assert BenchmarkSettings.from_record(written) == settings
    assert settings.fingerprint({"fp32": "a"}) == SETTINGS.fingerprint({"fp32": "a"})
    assert BenchmarkSettings().matched_noise == ()
    for bad in (["ptq-int8"], ("ptq-int8", "ptq-int8"), ("",), (3,)):
        with pytest.raises(ValueError, match="matched_noise"):
            BenchmarkSettings(matched_noise=bad)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["benchmark-denoised.json", "results/val-sweep-denoised.json",
                                  "results/dirsim-references-val.json", "archive/benchmark-reference.json"])
def test_the_committed_records_read_back_without_it(name):
    record = json.loads((assets_dir() / name).read_text())
    assert "matched_noise" not in record["settings"]
    assert BenchmarkSettings.from_record(record["settings"]).matched_noise == ()
    result = BenchmarkResult.from_dict(record)
    assert result.settings == record["settings"] and not any(matched_to(row.method) for row in result.rows)
    written = result.to_dict()  # (the oldest records' claims are completed on reading, as before)
    assert BenchmarkResult.from_dict(written).to_dict() == written


def test_the_command_line_sets_it_and_a_recorded_run_s_command_repeats_it():
    from recourse.cli import build_parser
    from recourse.cli.benchmark import _benchmark_settings
    from recourse.cli.reproduce import _benchmark_arguments

    base = ["benchmark", "--data", "d", "--out", "o"]
    args = build_parser().parse_args([*base, "--matched-noise", "ptq-int8", "gptq-int2"])
    assert _benchmark_settings(args).matched_noise == ("ptq-int8", "gptq-int2")
    plain = build_parser().parse_args(base)
    assert _benchmark_settings(plain).matched_noise == ()
    recorded = json.loads(json.dumps(asdict(_benchmark_settings(args))))
    arguments = _benchmark_arguments(plain, recorded)
    assert arguments[arguments.index("--matched-noise"):][:3] == ["--matched-noise", "ptq-int8", "gptq-int2"]
    assert "--matched-noise" not in _benchmark_arguments(plain, json.loads(json.dumps(asdict(_benchmark_settings(
        plain)))))
