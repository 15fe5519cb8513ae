"""A row's statistic placed in a family (issue 54): the prediction test's p by hand, the empirical
p, and the power against a Monte Carlo of the test itself."""

import math

import numpy as np
import pytest

from recourse.benchmark.placement import empirical_p, place, placement_power, prediction_p, prediction_t
from recourse.benchmark.statistics import student_t_quantile


def test_the_prediction_p_of_a_hand_computed_case():
    # members 1, 2, 3: mean 2, sd 1; t = 3 / √(1 + 1/3) = 2.598 on 2 df, whose two-sided p is 1 − t/√(t² + 2)
    t = 3 / math.sqrt(4 / 3)
    assert prediction_t(5.0, [1, 2, 3]) == pytest.approx(t)
    assert prediction_p(5.0, [1, 2, 3]) == pytest.approx(1 - t / math.sqrt(t * t + 2), abs=1e-9)
    assert prediction_p(-1.0, [1, 2, 3]) == pytest.approx(prediction_p(5.0, [1, 2, 3]))  # two-sided
    assert prediction_p(2.0, [1, 2, 3]) == pytest.approx(1.0)


def test_the_empirical_p_counts_the_members_at_least_as_far_from_their_mean():
    assert empirical_p(2.0, [1, 2, 3]) == 1.0  # every member is at least 0 away
    assert empirical_p(10.0, [1, 2, 3]) == 0.25  # none: 1 / (D + 1), the least it can be
    assert empirical_p(3.0, [1, 2, 3]) == 0.75  # 1 and 3 are as far as 3 is


def test_a_family_that_does_not_vary_places_any_other_value_outside_it():
    found = place(2.0, [1.0, 1.0, 1.0])
    assert math.isinf(found.t) and found.p == 0.0 and found.outside()
    assert place(1.0, [1.0, 1.0]).p == 1.0
    third = 100 / 3  # a share of k/n: its mean over equal members is not exactly it
    assert place(third, [third] * 10).t == 0.0 and place(third, [third] * 10).p == 1.0


@pytest.mark.parametrize("members", [[1.0], [1.0, float("nan")]])
def test_a_family_needs_two_finite_members(members):
    with pytest.raises(ValueError, match="two finite members"):
        place(0.0, members)


@pytest.mark.parametrize("effect, draws", [(0.0, 10), (1.5, 10), (3.0, 10), (0.0, 2), (3.0, 2), (0.0, 3), (3.0, 3)])
def test_the_power_is_that_of_the_test_simulated(effect, draws):
    alpha, rng = 0.05, np.random.default_rng(0)
    critical = student_t_quantile(1 - alpha / 2, draws - 1)
    members = rng.normal(size=(40_000, draws))
    values = effect + rng.normal(size=40_000)
    t = (values - members.mean(1)) / (members.std(1, ddof=1) * math.sqrt(1 + 1 / draws))
    simulated = float((np.abs(t) > critical).mean())
    assert placement_power(effect, 1.0, draws, alpha) == pytest.approx(simulated, abs=0.01)
    if effect == 0.0:
        assert placement_power(effect, 1.0, draws, alpha) == pytest.approx(alpha, abs=1e-3)


def test_the_power_grows_with_the_effect_and_the_draws():
    assert placement_power(2.0, 1.0, 10, 0.01) < placement_power(3.0, 1.0, 10, 0.01)
    assert placement_power(3.0, 1.0, 3, 0.01) < placement_power(3.0, 1.0, 10, 0.01)
    with pytest.raises(ValueError):
        placement_power(1.0, 0.0, 10, 0.05)
