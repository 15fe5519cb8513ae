"""Each judge's seen rate and shift of each model's own recourse, attribute by attribute
(recourse/benchmark/judged_shares.py), against a count by hand."""

import math

import numpy as np
import pytest
import torch

from recourse.benchmark.judged_shares import judged_share, shares_by_attribute
from recourse.benchmark.saved_columns import columns_of_records
from recourse.render.semantic import judges_table
from tests.test_benchmark_semantic import judged_records

RATES = {"ptq-int4": 0.1, "gptq-int2": 0.4}


def _by_hand(records: list[dict], attribute: str, name: str | None) -> tuple[int, float, float, float]:
    """(judged, semantic validity %, seen %, mean shift) of a row (None: the teacher) on ``attribute``."""
    judged = [r for r in records if r["attribute"] == attribute and r["teacher_judge_seen"] is not None]
    if name is None:
        valid = [r["teacher_valid"] for r in judged]
        seen = [r["teacher_judge_seen"] for r in judged]
        shift = [r["teacher_judge_shift"] for r in judged]
    else:
        valid = [r["students"][name]["valid"] for r in judged]
        seen = [r["students"][name]["judge_seen"] for r in judged]
        shift = [r["students"][name]["judge_shift"] for r in judged]
    both = [v and s for v, s in zip(valid, seen)]
    return len(judged), 100 * np.mean(both), 100 * np.mean(seen), float(np.mean(shift))


def test_each_models_share_per_attribute_is_the_count_by_hand():
    records = judged_records(RATES, tasks=90, seed=5, attributes=("Smiling", "Bangs", "Young"))
    saved = columns_of_records(records, list(RATES))
    shares = shares_by_attribute(saved.attributes, saved.rows, saved.semantic)
    # the teacher first, then the rows; Smiling is the only judged attribute of these records
    assert list(shares) == ["fp32", "ptq-int4", "gptq-int2"] and all(list(s) == ["Smiling"] for s in shares.values())
    for name in shares:
        share = shares[name]["Smiling"]
        judged, validity, seen, shift = _by_hand(records, "Smiling", None if name == "fp32" else name)
        assert (share.judged, share.semantic_validity, share.seen, share.shift) == \
            (judged, pytest.approx(validity), pytest.approx(seen), pytest.approx(shift))
    table = judges_table(shares)
    assert table.splitlines()[0] == "| model | Smiling (n = 30): seen % / shift |"
    assert table.splitlines()[2].startswith("| fp32 (teacher) | ")


def test_a_face_the_judge_did_not_find_counts_unseen_and_leaves_the_shift():
    valid = torch.tensor([True, True, True, False])
    seen = torch.tensor([True, False, False, True])
    shift = torch.tensor([0.5, float("nan"), 0.1, 0.9], dtype=torch.float64)
    share = judged_share(valid, seen, shift, torch.tensor([True, True, True, True]))
    assert share.judged == 4 and share.semantic_validity == 25.0 and share.seen == 50.0
    assert share.shift == pytest.approx((0.5 + 0.1 + 0.9) / 3)
    nothing = judged_share(valid, seen, shift, torch.zeros(4, dtype=torch.bool))
    assert nothing.judged == 0 and math.isnan(nothing.semantic_validity) and math.isnan(nothing.shift)


def test_a_run_without_readings_has_no_shares():
    records = judged_records(RATES, tasks=10)
    saved = columns_of_records(records, list(RATES))
    assert shares_by_attribute(saved.attributes, saved.rows, {}) == {}
    assert judges_table({}) == "(this run read no judge)"
