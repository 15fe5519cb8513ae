"""recourse.benchmark.comparison: a family of seeds against another is the same analysis in
either order (the difference negated, everything else to the last bit), with the standard error
and degrees of freedom the module states."""

import math
import statistics

import pytest
import torch

import recourse.benchmark.statistics as stats
from recourse.benchmark import BenchmarkSettings
from recourse.benchmark.bootstrap import paired_tests
from recourse.benchmark.comparison import Comparison, common_masks, compare_families
from recourse.benchmark.rows import family_of, family_rows
from recourse.benchmark.tasks import record_columns
from recourse.benchmark.terms import RECOURSE_METRICS, summary_values
from tests.test_benchmark import _row

SAMPLES = 300
# rejection rates: a one-seed family, two three-seed families (one close to the first, one not)
RATES = {"a": 0.10, "b": 0.12, "b-s1": 0.20, "b-s2": 0.08, "c": 0.35, "c-s1": 0.30, "c-s2": 0.40}


def random_records(rates: dict[str, float], tasks: int = 80, seed: int = 0, still: float = 0.1,
                   attributes: tuple[str, ...] = ("Smiling", "Bangs")) -> list[dict]:
    """Task records of students ``rates`` (name: how often it rejects the teacher's edit), every
    column drawn at random; a share ``still`` of each student's edits is zero (it did not move)."""
    generator = torch.Generator().manual_seed(seed)

    def u() -> float:
        return float(torch.rand(1, generator=generator))

    records = []
    for i in range(tasks):
        record = {"task": i, "attribute": attributes[i % len(attributes)], "target": int(u() < 0.5),
                  "teacher_valid": u() < 0.9, "teacher_cost": 0.05 + 0.1 * u(), "teacher_logit": 2 * u() - 0.5,
                  "teacher_partial": [-1.0 + u(), -0.5 + u()], "students": {}}
        for name, rate in rates.items():
            cost = 0.0 if u() < still else 0.05 + 0.1 * u()
            record["students"][name] = {
                "accepts_teacher": u() >= rate, "valid": u() < 0.9, "cost": cost,
                "cosine": 0.0 if cost == 0 else 0.5 + 0.5 * u(), "logit": 2 * u() - 1.0,
                "partial": [-1.0 + 2 * u(), -0.5 + 2 * u()]}
        records.append(record)
    return records


def _family(records: list[dict], names: tuple[str, ...]):
    return [record_columns(records, name) for name in names]


def _same(a: float, b: float) -> bool:
    """Equal to the bit (NaN equal to NaN)."""
    return (math.isnan(a) and math.isnan(b)) or a == b


def _mirrored(interval: list[float], other: list[float]) -> bool:
    return _same(other[0], -interval[1]) and _same(other[1], -interval[0])


def assert_mirrored(forward: Comparison, backward: Comparison) -> None:
    for metric in RECOURSE_METRICS:
        t, u = forward.tests[metric], backward.tests[metric]
        assert _same(u.difference, -t.difference), metric
        assert _same(u.standard_error, t.standard_error) and _same(u.df, t.df) and _same(u.p, t.p), metric
        assert _mirrored(t.interval(), u.interval()), metric
        for margin in (0.05, 2.0, 10.0):
            e, f = t.tost(margin), u.tost(margin)
            assert (f.p_lower, f.p_upper) == (e.p_upper, e.p_lower) or math.isnan(e.p), metric
            assert f.equivalent() == e.equivalent() and _same(f.p, e.p), metric
            assert _mirrored(e.interval().as_list(), f.interval().as_list()), metric
    for metric, interval in forward.score_intervals.items():
        assert _mirrored(interval, backward.score_intervals[metric]), metric
    assert forward.same_as == backward.same_as and forward.degenerate == backward.degenerate


@pytest.mark.parametrize("left, right", [(("a",), ("b", "b-s1", "b-s2")), (("b", "b-s1", "b-s2"), ("c", "c-s1", "c-s2"))],
                         ids=["1-vs-3", "3-vs-3"])
def test_swapping_the_families_negates_the_difference_and_keeps_everything_else(left, right):
    records = random_records(RATES)
    one, other = _family(records, left), _family(records, right)
    forward, backward = compare_families(one, other, SAMPLES), compare_families(other, one, SAMPLES)
    assert_mirrored(forward, backward)
    assert forward.tests["vd"].standard_error > 0 and forward.tests["dirsim_moved"].difference == \
        forward.tests["dirsim_moved"].difference  # defined: the check above compares numbers, not NaNs
    # the Dirichlet task level too
    assert_mirrored(compare_families(one, other, SAMPLES, "dirichlet"), compare_families(other, one, SAMPLES, "dirichlet"))


def test_the_committed_pairing_depends_on_the_order_the_new_analysis_does_not():
    records = random_records(RATES)
    one, three = _family(records, ("a",)), _family(records, ("b", "b-s1", "b-s2"))
    # seed k against seed k mod K: a one-seed family meets only seed 0 of the other, so the
    # two orders test different differences (the review's −4.28 against +4.15)
    old_forward, old_backward = paired_tests(one, three, SAMPLES)["vd"], paired_tests(three, one, SAMPLES)["vd"]
    assert old_forward.difference != -old_backward.difference
    assert old_forward.standard_error != old_backward.standard_error
    new = compare_families(one, three, SAMPLES).tests["vd"]
    values = [summary_values(c)["vd"] for c in three]
    assert new.difference == pytest.approx(summary_values(one[0])["vd"] - sum(values) / 3, abs=1e-12)


@pytest.mark.parametrize("left, right", [(("a",), ("b", "b-s1", "b-s2")), (("b", "b-s1", "b-s2"), ("c", "c-s1", "c-s2"))],
                         ids=["1-vs-3", "3-vs-3"])
def test_the_standard_error_is_the_task_variance_plus_each_sides_seed_variance(left, right):
    """se² = v_tasks + s²_A/k_A + s²_B/k_B, Welch–Satterthwaite df, computed by hand for VD (a
    share on every task: its task term at least what Newcombe's interval implies) and for CRG
    (on the tasks every seed of both has in B)."""
    records = random_records(RATES)
    one, other = _family(records, left), _family(records, right)
    shared, _ = common_masks([*one, *other])
    comparison = compare_families(one, other, SAMPLES)
    test = comparison.tests
    counts = stats.multinomial_counts(len(shared), SAMPLES, torch.Generator().manual_seed(1))
    for metric in ("vd", "crg"):
        seeds = []
        for family in (one, other):
            per_seed, values = [], []
            for c in family:
                if metric == "vd":
                    top, bottom = 100.0 * (c.teacher_valid & ~c.student_accepts_teacher).double(), c.teacher_valid.double()
                else:
                    b = shared.double()
                    top, bottom = b * (c.student_cost - c.teacher_cost).abs(), b * c.teacher_cost
                per_seed.append((counts @ top) / (counts @ bottom))
                values.append(float(top.sum() / bottom.sum()))
            seeds.append((torch.stack(per_seed).mean(0), values))
        task_variance = float((seeds[0][0] - seeds[1][0]).var())
        if metric == "vd":
            low, high = comparison.score_intervals["vd"]
            task_variance = max(task_variance, ((high - low) / (2 * stats.normal_quantile(0.975))) ** 2)
        terms = [statistics.variance(v) / len(v) if len(v) > 1 else 0.0 for _, v in seeds]
        total = task_variance + sum(terms)
        welch = sum(t * t / (len(v) - 1) for t, (_, v) in zip(terms, seeds) if t > 0)
        assert test[metric].difference == pytest.approx(statistics.mean(seeds[0][1]) - statistics.mean(seeds[1][1]),
                                                         abs=1e-12)
        assert test[metric].standard_error == pytest.approx(math.sqrt(total), rel=1e-9)
        assert test[metric].df == pytest.approx(total * total / welch, rel=1e-9)
        assert math.isfinite(test[metric].df)  # a side with three seeds brings t's tail


def test_one_seed_against_one_is_normal_and_a_self_comparison_is_zero():
    records = random_records(RATES)
    (a,), (b,) = _family(records, ("a",)), _family(records, ("b",))
    test = compare_families([a], [b], SAMPLES).tests["vd"]
    assert test.df == math.inf and test.standard_error > 0  # no seed term on either side
    itself = compare_families([a], [a], SAMPLES)
    assert all(itself.tests[m].difference in (0.0,) or math.isnan(itself.tests[m].difference) for m in RECOURSE_METRICS)
    assert itself.tests["vd"].p == 1.0


@pytest.mark.slow
def test_family_rows_give_a_reference_pair_and_a_floor_pair_the_same_test_in_both_orders():
    rates = {"ptq-int4": 0.1, "cfq-qat-norecourse": 0.15, "cfq-qat-norecourse-s1": 0.25,
             "cfq-qat-norecourse-s2": 0.05, "fp32-noise": 0.02, "fp32-noise-s1": 0.05, "fp32-noise-s2": 0.03,
             "fp32-ref-seed1": 0.3}
    records = random_records(rates, tasks=60, seed=3)
    rows = [_row("fp32", family="fp32"), *(_row(n, family=family_of(n)) for n in rates)]
    settings = BenchmarkSettings(n=60, attributes=("Smiling", "Bangs"), seen_attributes=("Smiling",),
                                 bootstrap_samples=200)
    families = {f.family: f for f in family_rows(rows, records, settings)}
    ptq, twin = families["ptq-int4"], families["cfq-qat-norecourse"]
    for group in ("all", "seen", "held_out"):
        for metric in RECOURSE_METRICS:
            there, back = ptq.tests["cfq-qat-norecourse"][group][metric], twin.tests["ptq-int4"][group][metric]
            assert all(_same(there[k], back[k]) for k in ("p", "se", "df")), (group, metric)
            assert _mirrored(there["interval"], back["interval"])
            forward, backward = ptq.paired["cfq-qat-norecourse"][group][metric], twin.paired["ptq-int4"][group][metric]
            assert _same(backward[0], -forward[0]) and _mirrored(forward[1:], backward[1:])
        # a reference classifier's row is of the family fp32-ref (its folders read as seeds)
        noise, reference = families["fp32-noise"].equivalence, families["fp32-ref"].equivalence
        for metric, test in noise["fp32-ref"][group].items():
            back = reference["fp32-noise"][group][metric]
            assert _same(back["estimate"], -test["estimate"]) and _same(back["p"], test["p"])
            assert back["equivalent"] == test["equivalent"] and _mirrored(test["interval_90"], back["interval_90"])
