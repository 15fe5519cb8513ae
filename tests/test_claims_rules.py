"""recourse.benchmark.claims: which tests are claims (no repeats, no 0 against 0, a pair of
references or floors once), the TOST inside the correction families, Holm for the primary family
and Benjamini–Hochberg for the secondary one; the committed runs keep theirs."""

import json
import math
from dataclasses import asdict

import pytest

import recourse.benchmark.statistics as stats
from recourse.benchmark import BenchmarkResult, BenchmarkSettings
from recourse.benchmark.claims import Claim, claims, dropped_claims, legacy_claims
from recourse.benchmark.rows import family_of, family_rows
from recourse.locations import assets_dir
from tests.test_benchmark import _row
from tests.test_benchmark_symmetry import random_records

SETTINGS = BenchmarkSettings(n=60, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                             bootstrap_samples=200)


def _families(rates: dict[str, float], still: float = 0.1, seed: int = 0, settings: BenchmarkSettings = SETTINGS):
    records = random_records(rates, tasks=60, seed=seed, still=still)
    rows = [_row("fp32", family="fp32"), *(_row(n, family=family_of(n)) for n in rates)]
    return family_rows(rows, records, settings)


def _found(found: list, kind: str, family: str, reference: str, group: str = "all") -> dict:
    return {c.metric: c for c in found if (c.kind, c.family, c.reference, c.group) == (kind, family, reference, group)}


def test_a_test_that_repeats_another_on_the_same_tasks_is_not_a_second_claim():
    # every edit moved: DirSim over moved tasks is DirSim, task for task
    families = _families({"g": 0.3, "ptq-int4": 0.1}, still=0.0)
    g = {f.family: f for f in families}["g"]
    assert g.tests["ptq-int4"]["all"]["dirsim_moved"]["same_as"] == "dirsim"
    found = claims(families)
    differences = _found(found, "difference", "g", "ptq-int4")
    assert "dirsim" in differences and "dirsim_moved" not in differences
    same = [d for d in dropped_claims(families) if d.rule == "same"]
    assert {(d.family, d.metric) for d in same} == {("g", "dirsim_moved")}
    assert all("as dirsim" in d.reason for d in same)
    # where some edits did not move the two differ, and both are claims
    moving = _families({"g": 0.3, "ptq-int4": 0.1}, still=0.2)
    differences = _found(claims(moving), "difference", "g", "ptq-int4")
    assert {"dirsim", "dirsim_moved"} <= set(differences)
    assert differences["dirsim"].difference != differences["dirsim_moved"].difference


def test_zero_against_zero_is_no_difference_claim_but_its_tost_stays():
    # nobody rejects the teacher's edit and every edit moved: VD and the zero-length share are
    # 0 on every task for every model
    families = _families({"g": 0.0, "ptq-int4": 0.0, "fp32-noise": 0.0}, still=0.0)
    g = {f.family: f for f in families}["g"]
    assert g.tests["ptq-int4"]["all"]["vd"]["degenerate"] and g.tests["ptq-int4"]["all"]["zero_edits"]["degenerate"]
    assert "degenerate" not in g.tests["ptq-int4"]["all"]["crg"]
    found = claims(families)
    differences = _found(found, "difference", "g", "ptq-int4")
    assert "vd" not in differences and "zero_edits" not in differences and "crg" in differences
    assert {d.metric for d in dropped_claims(families) if d.rule == "degenerate" and d.family == "g"} == \
        {"vd", "zero_edits"}
    # TOST of 0 against 0: Newcombe's interval still bounds the difference by what 60 tasks show
    tost = _found(found, "equivalence", "g", "fp32-noise")["vd"]
    assert tost.difference == 0.0 and tost.high > 0 and 0 < tost.p < 1


@pytest.mark.slow
def test_a_pair_of_references_and_a_pair_of_floors_count_once():
    rates = {"g": 0.3, "ptq-int4": 0.1, "cfq-qat-norecourse": 0.15, "cfq-qat-norecourse-s1": 0.2,
             "fp32-noise": 0.05, "fp32-noise-s1": 0.02, "fp32-ref-seed1": 0.25}
    families = _families(rates)
    found = claims(families)
    pairs = {(c.kind, c.family, c.reference) for c in found}
    # the family earlier in the table is the reference of the pair
    assert ("difference", "cfq-qat-norecourse", "ptq-int4") in pairs
    assert ("difference", "ptq-int4", "cfq-qat-norecourse") not in pairs
    # a reference classifier's row (fp32-ref-seed1) is of the family fp32-ref
    assert ("equivalence", "fp32-ref", "fp32-noise") in pairs
    assert ("equivalence", "fp32-noise", "fp32-ref") not in pairs
    # every other family keeps both references and both floors
    assert {p for p in pairs if p[1] == "g"} == {("difference", "g", r) for r in ("ptq-int4", "cfq-qat-norecourse")} | \
        {("equivalence", "g", f) for f in ("fp32-noise", "fp32-ref")}
    paired = [d for d in dropped_claims(families) if d.rule == "pair"]
    by_family = {f.family: f for f in families}
    mirrored = sum(len(m) for m in by_family["ptq-int4"].tests["cfq-qat-norecourse"].values()) + \
        sum(len(m) for m in by_family["fp32-noise"].equivalence["fp32-ref"].values())
    assert len(paired) == mirrored and all(d.reason.startswith("counted once, as ") for d in paired)


def test_tost_is_corrected_together_with_the_differences_holm_first_bh_for_the_groups():
    families = _families({"g": 0.35, "g-s1": 0.3, "ptq-int4": 0.05, "fp32-noise": 0.03, "fp32-noise-s1": 0.05})
    found = claims(families)
    assert {c.kind for c in found} == {"difference", "equivalence"}
    for name, groups in (("primary", {"all"}), ("secondary", {"seen", "held_out"})):
        members = [c for c in found if c.correction_family == name]
        assert {c.group for c in members} == groups and {c.kind for c in members} == {"difference", "equivalence"}
        p = [c.p for c in members]
        assert [c.p_holm for c in members] == stats.holm(p)  # one family: the TOST's p counted in its m
        assert [c.p_bh for c in members] == stats.benjamini_hochberg(p)
        tested = sum(1 for v in p if v == v)
        for c in members:  # Bonferroni's interval at α / m of its own family
            if c.kind == "difference" and math.isfinite(c.corrected_low):
                half = (c.corrected_high - c.corrected_low) / 2
                se = (c.high - c.low) / 2 / stats.student_t_quantile(0.975, _df(families, c))
                assert half == pytest.approx(stats.student_t_quantile(1 - 0.05 / tested / 2, _df(families, c)) * se)
    # a primary claim holds by Holm, a secondary one by Benjamini–Hochberg; the committed runs' by Holm
    claim = Claim("g", "ptq-int4", "all", "vd", 3.0, 1.0, 5.0, 0.001, 0.2, 0.01)
    assert not Claim(**{**claim.__dict__, "correction_family": "primary"}).holds()
    assert Claim(**{**claim.__dict__, "correction_family": "secondary"}).holds()
    assert not claim.holds() and claim.holds(correction="bh")


def _df(families, claim: Claim) -> float:
    family = next(f for f in families if f.family == claim.family)
    return family.tests[claim.reference][claim.group][claim.metric]["df"]


def test_the_committed_runs_keep_their_claims_and_new_records_read_back_as_written():
    record = json.loads((assets_dir() / "benchmark-denoised.json").read_text())
    assert "analysis" not in record["settings"]
    result = BenchmarkResult.from_dict(record)
    assert len(result.claims) == len(record["claims"]) == 1458  # every test, both orders, TOST apart
    assert all(c.correction_family == "" and c.kind == "difference" for c in result.claims)
    assert list(result.claims) == legacy_claims(list(result.families))
    # a new run's record: its claims read back as they were made
    families = _families({"g": 0.3, "ptq-int4": 0.1, "fp32-noise": 0.05})
    made = BenchmarkResult(date="d", command="c", split="test", n=60, attributes=("Smiling", "Bangs"),
                           accuracy_images=1, processes=1, seconds=1.0,
                           settings=json.loads(json.dumps(asdict(SETTINGS))),
                           rows=(_row("fp32"),), families=tuple(families), claims=tuple(claims(families)))
    written = json.loads(json.dumps(made.to_dict(), allow_nan=False))
    assert written["settings"]["analysis"] == "v3"
    assert {c["correction_family"] for c in written["claims"]} == {"primary", "secondary"}
    again = BenchmarkResult.from_dict(written)
    assert again.to_dict() == written
    # without its corrected intervals (as the committed runs were written) the same claims are rebuilt
    bare = {**written, "claims": [{k: v for k, v in c.items() if not k.startswith("corrected_")}
                                  for c in written["claims"]]}
    assert BenchmarkResult.from_dict(bare).to_dict() == written
