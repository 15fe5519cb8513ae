import math

import pytest
import torch

from recourse.metrics import (
    agreement, both_valid, decisions, direction_cosines, directional_similarity, flip_rate, frechet_distance,
    image_recourse, mean_accuracy, mean_number_of_attributes_changed, overhead, recourse_cost, recourse_gap,
    success_rate, validity, validity_drop,
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


# --- recourse under compression --------------------------------------------------------

T, F = True, False


def test_accuracy_and_agreement_by_hand():
    labels = torch.tensor([[1, 0], [1, 1], [0, 0], [1, 0]])
    predicted = torch.tensor([[1, 0], [0, 1], [0, 1], [1, 1]])
    assert mean_accuracy(predicted, labels) == pytest.approx((75.0 + 50.0) / 2)
    assert agreement(labels, predicted) == pytest.approx(100 * 5 / 8)


def test_validity_drop_by_hand():
    teacher_valid = torch.tensor([T, T, T, F, T])
    student_accepts = torch.tensor([T, F, T, F, F])  # rejects tasks 1 and 4 of S = {0, 1, 2, 4}
    assert validity_drop(teacher_valid, student_accepts) == (50.0, 4)
    assert validity(torch.tensor([1, 0, 1]), torch.tensor([1, 1, 1])).tolist() == [T, F, T]


def test_validity_drop_with_empty_s_is_nan():
    value, size = validity_drop(torch.tensor([F, F]), torch.tensor([T, T]))
    assert math.isnan(value) and size == 0


def test_recourse_gap_by_hand():
    teacher_cost = torch.tensor([0.10, 0.20, 0.50, 0.30])
    student_cost = torch.tensor([0.15, 0.10, 9.00, 0.30])
    mask = both_valid(torch.tensor([T, T, F, T]), torch.tensor([T, T, T, T]))  # task 2 is outside B
    # mean_B |c_g − c_f| = (0.05 + 0.10 + 0) / 3; mean_B c_f = 0.6 / 3  →  0.15 / 0.6
    assert recourse_gap(teacher_cost, student_cost, mask) == pytest.approx(0.25)


@pytest.mark.parametrize("teacher, student, expected", [
    ([0.0, 0.0], [0.0, 0.0], 0.0),  # zero cost on both sides: no gap
    ([0.0, 0.0], [0.1, 0.0], math.inf),  # only the student pays
])
def test_recourse_gap_with_zero_teacher_cost(teacher, student, expected):
    assert recourse_gap(torch.tensor(teacher), torch.tensor(student), torch.tensor([T, T])) == expected


def test_recourse_gap_and_dirsim_with_empty_b_are_nan():
    empty = torch.tensor([F, F])
    assert math.isnan(recourse_gap(torch.ones(2), torch.ones(2), empty))
    assert math.isnan(directional_similarity(torch.ones(2), empty))


def test_directional_similarity_by_hand():
    teacher = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0], [3.0, 0.0]])
    student = torch.tensor([[2.0, 0.0], [-1.0, -1.0], [1.0, 0.0], [0.0, 0.0]])
    cosines = direction_cosines(teacher, student)
    assert cosines.tolist() == pytest.approx([1.0, -1.0, 0.0, 0.0])  # a zero change shares no direction
    assert directional_similarity(cosines, torch.tensor([T, T, T, F])) == pytest.approx(0.0)
    assert directional_similarity(cosines, torch.tensor([T, F, F, F])) == pytest.approx(100.0)
    assert directional_similarity(cosines, torch.tensor([T, F, T, F])) == pytest.approx(50.0)


def test_direction_cosines_of_image_changes_by_hand():
    teacher = torch.zeros(1, 3, 2, 2)
    teacher[0, 0] = 0.4  # 0.4 on 4 values
    student = torch.zeros(1, 3, 2, 2)
    student[0, 0] = 0.2
    student[0, 1, 0, 0] = 0.2  # 0.2 on those 4 and on one more
    # dot = 4 · 0.08 = 0.32; |δ_f| = 0.8, |δ_g| = √(5 · 0.04) = √0.2
    assert direction_cosines(teacher, student).tolist() == pytest.approx([0.32 / (0.8 * math.sqrt(0.2))])


def test_success_rate_and_overhead_by_hand():
    assert success_rate(torch.tensor([T, F, T, T])) == 75.0
    assert math.isnan(success_rate(torch.tensor([], dtype=torch.bool)))
    assert overhead(100.0, 50.0, 0.0) == pytest.approx(1.5)
    assert overhead(100.0, 10.0, 10.0) == 1.0
    assert overhead(100.0, 30.0, 10.0) == pytest.approx(130 / 110)


def test_image_recourse_by_hand():
    values = image_recourse(True, False, True, teacher_cost=0.4 / 3, student_cost=1.0 / 12, cosine=0.5)
    assert values.teacher_cost == pytest.approx(0.4 / 3) and values.student_cost == pytest.approx(1.0 / 12)
    assert values.crg == pytest.approx(abs(1.0 / 12 - 0.4 / 3) / (0.4 / 3))
    assert values.dirsim == pytest.approx(50.0)
    assert values.reason == "" and values.student_accepts_teacher is False
    assert values.teacher_valid is True and values.student_valid is True


@pytest.mark.parametrize("teacher_valid, student_valid, teacher_cost, reason", [
    (False, True, 0.1, "full-precision model's recourse is not valid"),
    (True, False, 0.1, "compressed model's recourse is not valid"),
    (True, True, 0.0, "the full-precision recourse changes nothing"),
])
def test_image_recourse_explains_undefined_values(teacher_valid, student_valid, teacher_cost, reason):
    values = image_recourse(teacher_valid, False, student_valid, teacher_cost, 0.2, 0.0)
    assert values.crg is None and values.dirsim is None and reason in values.reason


def test_zero_cost_with_both_valid_is_undefined_not_a_division_by_zero():
    values = image_recourse(True, True, True, teacher_cost=0.0, student_cost=0.0, cosine=0.0)
    assert values.crg is None and values.dirsim is None
    assert values.reason == "the full-precision recourse changes nothing"
    assert values.to_dict()["crg"] is None


def test_false_acceptance_counts_partial_edits_the_teacher_still_rejects():
    from recourse.metrics import false_acceptance

    target = torch.tensor([1, 1, 0, 1, 1])
    teacher = torch.tensor([-1.0, 0.5, 1.0, -2.0, -1.0])  # rejects tasks 0, 2, 3, 4; accepts task 1
    student = torch.tensor([0.2, 0.3, -0.1, -0.1, 3.0])  # accepts 0, 1, 2, 4
    in_s = torch.tensor([True, True, True, True, False])
    value, count = false_acceptance(teacher, student, target, in_s)
    assert count == 3 and value == pytest.approx(100 * 2 / 3)  # tasks 0, 2, 3 considered; 0 and 2 accepted
    assert false_acceptance(teacher, student, target, torch.zeros(5, dtype=torch.bool))[1] == 0


def test_logit_gap_is_signed_towards_the_target():
    from recourse.metrics import logit_gap

    target = torch.tensor([1, 0, 1])
    teacher = torch.tensor([2.0, -2.0, 1.0])
    student = torch.tensor([3.0, -1.0, 1.0])  # +1 towards 1; +1 away from 0 (towards 1, against the target 0)
    gap, lean = logit_gap(teacher, student, target, torch.tensor([True, True, False]))
    assert gap == pytest.approx(1.0) and lean == pytest.approx(0.0)
    gap, lean = logit_gap(teacher, student, target, torch.tensor([True, False, True]))
    assert gap == pytest.approx(0.5) and lean == pytest.approx(0.5)
    assert math.isnan(logit_gap(teacher, student, target, torch.zeros(3, dtype=torch.bool))[0])
