"""recourse/render/claims.py: the family of claims drawn as markdown. A newer run's claims are
differences and equivalences (TOST) in two correction families, each counted by its own
correction; the committed runs' one family of paired differences is drawn as it always was."""

import json
import math
from dataclasses import replace

from recourse.benchmark import BenchmarkResult
from recourse.benchmark.claims import Claim
from recourse.locations import assets_dir, project_root
from recourse.render.claims import claims_table, correction_families, held_claims, statistics_report
from tests.test_benchmark import _row


def _claim(family: str, metric: str, p: float, p_holm: float, p_bh: float, group: str = "all",
           kind: str = "difference", margin: float = float("nan"), reference: str = "ptq-int4") -> Claim:
    correction_family = "primary" if group == "all" else "secondary"
    return Claim(family, reference, group, metric, 1.5, 0.5, 2.5, p, p_holm, p_bh, 0.1, 2.9, kind, margin,
                 correction_family)


def _result(claims: tuple[Claim, ...]) -> BenchmarkResult:
    return BenchmarkResult(date="d", command="c", split="test", n=20, attributes=("Smiling", "Bangs"),
                           accuracy_images=1, processes=1, seconds=1.0, settings={"analysis": "2026-12-03"},
                           rows=(_row("fp32"),), claims=claims)


# primary: 2 differences and 1 TOST (one p undefined, left out); secondary: 2 differences and 1 TOST
NEW = (
    _claim("g", "vd", 0.001, 0.003, 0.003),
    _claim("g", "crg", 0.03, 0.06, 0.04),
    _claim("g", "vd", 0.01, 0.02, 0.9, kind="equivalence", margin=2.0, reference="fp32-noise"),
    _claim("g", "dirsim", float("nan"), float("nan"), float("nan")),
    _claim("g", "vd", 0.004, 0.2, 0.01, group="seen"),
    _claim("g", "crg", 0.02, 0.3, 0.03, group="held_out"),
    _claim("g", "logit_gap", 0.2, 0.6, 0.2, group="held_out", kind="equivalence", margin=0.1,
           reference="fp32-noise"),
)


def test_a_new_run_draws_each_correction_family_with_its_own_correction():
    text = claims_table(_result(NEW), group=None)
    assert "paired differences tested" not in text
    assert text.startswith("6 claims, 4 differences, 2 equivalences (TOST), in 2 correction families")
    assert ("**Primary family** (every claim on all attributes), read by Holm (family-wise error): 3 claims tested, "
            "2 differences, 1 equivalence (TOST); 3 with p < 0.05 before correction, 2 hold after Holm.") in text
    assert ("**Secondary family** (the attribute groups seen, held_out), read by Benjamini–Hochberg (false discovery "
            "rate): 3 claims tested, 2 differences, 1 equivalence (TOST); 2 with p < 0.05 before correction, "
            "2 hold after Benjamini–Hochberg.") in text
    assert "each claim at 0.05 / 3" in text and text.index("Primary") < text.index("Secondary")
    # each family's table names its own correction, and marks a claim that holds by it
    assert "| family − reference | claim | group | metric | estimate [95%; TOST 90%] | [family-wise] | p | Holm p |" \
        in text
    assert "| p | Benjamini–Hochberg p |" in text and "| Holm p | BH p |" not in text
    assert ("| g − fp32-noise | equivalence within ±2 | all | VD | +1.5 [0.5, 2.5] | [0.100, 2.900] | 0.01 "
            "| **0.02** |") in text
    assert "| g − ptq-int4 | difference | all | CRG | +1.5 [0.5, 2.5] | [0.100, 2.900] | 0.03 | 0.06 |" in text
    # the same claim's Holm p of 0.2 does not count in the secondary family, its BH p of 0.01 does
    assert "| g − ptq-int4 | difference | seen | VD | +1.5 [0.5, 2.5] | [0.100, 2.900] | 0.004 | **0.01** |" in text
    assert "logit_gap" not in text and "Δlogit" not in text  # p 0.2: not shown
    shown = claims_table(_result((replace(NEW[2], metric="logit_gap", margin=0.1),)))
    assert "| equivalence within ±0.1 | all | \\|Δlogit\\| |" in shown  # the metric's bars do not split the cell


def test_the_default_group_shows_the_primary_claims_and_counts_every_family():
    text = claims_table(_result(NEW))
    assert "3 claims tested" in text and "2 hold after Benjamini–Hochberg" in text
    assert "| seen |" not in text and "(none with p < 0.05 in group all)" in text
    # the CLI's report draws both families' rows
    report = statistics_report(_result(NEW))
    assert "| g − ptq-int4 | difference | seen | VD |" in report and "(none with p < 0.05" not in report


def test_held_claims_counts_each_family_by_its_own_correction():
    assert held_claims(list(NEW)) == {"primary": (2, 3), "secondary": (2, 3)}
    assert list(correction_families(list(reversed(NEW)))) == ["primary", "secondary"]
    old = [replace(c, kind="difference", margin=math.nan, correction_family="") for c in NEW]
    # the committed runs' one family, by Holm: p_holm below 0.05 on 0.003 and 0.02
    assert correction_families(old) == {} and held_claims(old) == {"": (2, 6)}


def test_a_committed_run_draws_its_claims_as_its_page_shows_them():
    record = json.loads((assets_dir() / "benchmark-denoised.json").read_text())
    assert "analysis" not in record["settings"] and "correction_family" not in record["claims"][0]
    text = claims_table(BenchmarkResult.from_dict(record))
    assert text.startswith("1458 paired differences tested; 735 with p < 0.05 before correction, 537 after Holm, "
                           "705 after Benjamini–Hochberg.")
    assert text in (project_root() / "docs" / "results" / "benchmark-first-run-claims.md").read_text()
