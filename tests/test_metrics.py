import math

import pytest
import torch

from recourse.metrics import (
    decisions, flip_rate, frechet_distance, mean_number_of_attributes_changed, recourse_cost,
)


def test_decisions_threshold_at_probability_one_half():
    assert decisions(torch.tensor([-0.1, 0.0, 2.0])).tolist() == [0, 1, 1]


def test_recourse_cost_by_hand():
    original = torch.zeros(2, 3, 2, 2)
    changed = original.clone()
    changed[0, 0, 0, 0] = 0.6  # one of 12 values changed by 0.6
    changed[1] = 0.25
    assert recourse_cost(original, changed).tolist() == pytest.approx([0.05, 0.25])


def test_flip_rate_by_hand():
    assert flip_rate(torch.tensor([1, 0, 1, 1]), torch.tensor([1, 1, 1, 0])) == 50.0
    assert math.isnan(flip_rate(torch.tensor([]), torch.tensor([])))


def test_mnac_ignores_the_edited_attribute():
    before = torch.zeros(2, 40, dtype=torch.long)
    after = before.clone()
    after[0, [3, 5, 7]] = 1  # attribute 3 is the edited one: 2 others changed
    after[1, 3] = 1  # only the edited one
    assert mean_number_of_attributes_changed(before, after, attribute=3) == 1.0


def test_frechet_distance_by_hand():
    a = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-9)
    # a shift by (3, 4) leaves the covariances equal: distance = |shift|² = 25
    assert frechet_distance(a, a + torch.tensor([3.0, 4.0])) == pytest.approx(25.0)
    # scaling by 2: cov_b = 4 cov_a, so Tr(ca + 4ca − 2·2ca) = Tr(ca); here Tr(ca) = 2·(4/3)
    assert frechet_distance(a - 1, 2 * (a - 1)) == pytest.approx(8 / 3)
