"""The benchmark's statistics on known answers: textbook formulas and table values."""

import math

import pytest
import torch

from recourse.benchmark.statistics import (
    benjamini_hochberg, detectable_paired_difference, dirichlet_weights, holm, independent_discordance, multinomial_counts,
    newcombe_paired_interval, normal_p_value, normal_quantile, pairs_for_mean_difference,
    pairs_for_paired_proportions, seed_level_draws, student_t_cdf, student_t_quantile, tost, tost_paired,
    wilson_interval,
)


def test_wilson_interval_of_zero_successes_has_the_textbook_upper_bound():
    z = 1.959963984540054
    interval = wilson_interval(0, 20)
    assert interval.low == 0.0 and interval.high == pytest.approx(z * z / (20 + z * z), rel=1e-12)  # 0.1611
    assert interval.high == pytest.approx(0.16113, abs=1e-5)
    full = wilson_interval(20, 20)
    assert full.high == 1.0 and full.low == pytest.approx(1 - interval.high, rel=1e-12)


def test_wilson_interval_by_its_formula_and_undefined_without_trials():
    # 15 of 50: centre (p + z²/2n)/(1 + z²/n), half-width z/(1 + z²/n) √(p(1−p)/n + z²/4n²)
    z, n, p = normal_quantile(0.975), 50, 0.3
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    interval = wilson_interval(15, 50)
    assert (interval.low, interval.high) == pytest.approx((centre - half, centre + half), rel=1e-12)
    assert interval.low == pytest.approx(0.1910, abs=1e-4) and interval.high == pytest.approx(0.4375, abs=1e-4)
    assert math.isnan(wilson_interval(0, 0).low)


def test_newcombe_paired_interval_does_not_collapse_when_the_pairs_never_differ():
    none_differ = newcombe_paired_interval(both=0, only_first=0, only_second=0, neither=20)
    assert none_differ.low == pytest.approx(-wilson_interval(0, 20).high) and none_differ.high == pytest.approx(
        wilson_interval(0, 20).high)
    interval = newcombe_paired_interval(both=8, only_first=5, only_second=2, neither=15)
    assert interval.low < 3 / 30 < interval.high
    mirrored = newcombe_paired_interval(both=8, only_first=2, only_second=5, neither=15)
    assert (mirrored.low, mirrored.high) == pytest.approx((-interval.high, -interval.low))
    # many pairs: close to the Wald interval of the paired difference
    a, b, c, d = 4000, 600, 400, 5000
    n = a + b + c + d
    wald = 1.959964 * math.sqrt((b + c) / n - ((b - c) / n) ** 2) / math.sqrt(n)
    large = newcombe_paired_interval(a, b, c, d)
    assert large.low == pytest.approx((b - c) / n - wald, abs=5e-4)
    assert large.high == pytest.approx((b - c) / n + wald, abs=5e-4)


def test_student_t_matches_table_values():
    assert student_t_quantile(0.975, 2) == pytest.approx(4.302653, abs=1e-6)
    assert student_t_quantile(0.975, 10) == pytest.approx(2.228139, abs=1e-6)
    assert student_t_quantile(0.95, 9) == pytest.approx(1.833113, abs=1e-6)
    assert student_t_quantile(0.975, math.inf) == pytest.approx(1.959964, abs=1e-6)
    assert student_t_cdf(0.0, 3) == pytest.approx(0.5)
    assert student_t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/π
    assert student_t_cdf(-12.706205, 1) == pytest.approx(0.025, abs=1e-7)


def test_holm_and_benjamini_hochberg_on_a_hand_made_family():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 → 0.02, 0.03, 0.06, 0.04 → running max
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: p·m/rank → 0.02, 0.02, 0.04, 0.04, then the running minimum from the top
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert sum(q < 0.05 for q in holm(p)) == 2 and sum(q < 0.05 for q in benjamini_hochberg(p)) == 4
    # an untestable claim is left out of the family and stays undefined
    with_nan = holm([0.01, float("nan"), 0.04])
    assert with_nan[0] == pytest.approx(0.02) and math.isnan(with_nan[1]) and with_nan[2] == pytest.approx(0.04)
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([0.2, 0.9]) == [0.4, 0.9] and benjamini_hochberg([1.0]) == [1.0]


def test_tost_at_the_critical_margin_gives_alpha():
    assert tost(0.0, 1.0, normal_quantile(0.95)).p == pytest.approx(0.05, abs=1e-12)
    assert tost(0.0, 1.0, 1.833113, df=9).p == pytest.approx(0.05, abs=1e-6)
    shifted = tost(0.5, 0.1, 1.0)  # 5 se from the upper margin, 15 from the lower
    assert shifted.p_upper == pytest.approx(1 - normal_quantile.__globals__["_NORMAL"].cdf(5.0))
    assert shifted.equivalent() and not tost(0.95, 0.1, 1.0).equivalent()
    low, high = shifted.interval().as_list()
    assert -1.0 < low < high < 1.0  # the 90% interval inside the margins ⇔ equivalence at 5%
    with pytest.raises(ValueError, match="margin must be positive"):
        tost(0.0, 1.0, 0.0)


def test_paired_tost_on_constructed_differences():
    # ten differences with mean 0.2 and sd 0.5: t statistics (0.2 ± 0.5) / (0.5 / √10), 9 df
    differences = [0.2 + 0.5 * v for v in (1, -1, 1, -1, 1, -1, 1, -1, 1, -1)]
    sd = float(torch.tensor(differences, dtype=torch.float64).std())
    result = tost_paired(differences, margin=0.5)
    se = sd / math.sqrt(10)
    assert result.estimate == pytest.approx(0.2) and result.standard_error == pytest.approx(se) and result.df == 9
    assert result.p_upper == pytest.approx(student_t_cdf((0.2 - 0.5) / se, 9))
    assert result.p_lower == pytest.approx(1 - student_t_cdf((0.2 + 0.5) / se, 9))
    assert result.p == result.p_upper and not result.equivalent()  # 0.3 / 0.167 = 1.8 se: t_9 needs 1.83
    assert tost_paired(differences, margin=0.6).equivalent()


def test_power_calculations_on_known_answers():
    assert pairs_for_mean_difference(0.5, 1.0) == 34  # G*Power, paired t, dz = 0.5, α 0.05, power 0.8
    assert pairs_for_mean_difference(-0.5, 1.0) == 34
    assert pairs_for_mean_difference(0.2, 1.0) == 199  # dz = 0.2 (G*Power: 199)
    # Connor (1987): ψ = 0.2, δ = 0.1: (1.96·√0.2 + 0.8416·√0.19)² / 0.01 = 154.6
    assert pairs_for_paired_proportions(0.1, 0.2) == 155
    assert independent_discordance(0.1, 0.2) == pytest.approx(0.1 * 0.8 + 0.2 * 0.9)
    with pytest.raises(ValueError):
        pairs_for_paired_proportions(0.3, 0.2)  # more difference than discordant pairs


def test_the_detectable_difference_is_the_sample_size_solved_for_the_difference():
    detectable = detectable_paired_difference(155, 0.2)  # the 155 pairs above detect about 0.1
    assert detectable == pytest.approx(0.1, abs=5e-4) and pairs_for_paired_proportions(detectable, 0.2) <= 155
    assert detectable_paired_difference(620, 0.2) < detectable  # more pairs, a smaller difference
    assert math.isnan(detectable_paired_difference(5, 0.05))  # no difference a 5% discordance allows


def test_normal_p_value():
    assert normal_p_value(1.959964, 1.0) == pytest.approx(0.05, abs=1e-6)
    assert normal_p_value(0.0, 0.0) == 1.0 and math.isnan(normal_p_value(float("nan"), 1.0))


def test_bootstrap_weights_and_the_parametric_seed_level():
    generator = torch.Generator().manual_seed(0)
    counts = multinomial_counts(7, 5, generator)
    assert counts.sum(1).tolist() == [7.0] * 5
    weights = dirichlet_weights(7, 5, generator)
    assert torch.allclose(weights.sum(1), torch.full((5,), 7.0, dtype=torch.float64)) and bool((weights > 0).all())
    draws = seed_level_draws([1.0, 2.0, 3.0], 20000, torch.Generator().manual_seed(1))
    assert len(set(draws.tolist())) == 20000  # three seeds, not 10 distinct resamples
    # s / √3 · t_2: its 97.5% quantile is s/√3 · 4.303 (s = 1)
    assert float(draws.quantile(0.975)) == pytest.approx(4.303 / math.sqrt(3), rel=0.08)
    assert seed_level_draws([1.0], 10, generator).abs().sum() == 0
