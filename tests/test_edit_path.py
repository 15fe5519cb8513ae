"""The recourse path: both models' logits along one model's edit, where each decision flips,
and the stops where the guiding model passes each margin."""

import numpy as np
import pytest
import torch

from recourse.audit.edit_path import divergence_sentence, first_crossing, path_images, recourse_path


class Brightness(torch.nn.Module):
    """Attribute 0's logit grows with the mean brightness: ``gain * (mean - offset)``."""

    def __init__(self, gain: float, offset: float):
        super().__init__()
        self.gain, self.offset = gain, offset

    def forward(self, images):
        logits = torch.zeros(len(images), 40)
        logits[:, 0] = self.gain * (images.mean(dim=(1, 2, 3)) - self.offset)
        return logits


def test_crossings_are_interpolated_between_samples():
    alphas = np.linspace(0, 1, 5)
    assert first_crossing(alphas, np.array([-2, -1, 0.5, 1, 2]), 0.0) == pytest.approx(0.25 + 0.25 * (1 / 1.5))
    assert first_crossing(alphas, np.array([1, 2, 3, 4, 5]), 0.0) == 0.0
    assert first_crossing(alphas, np.array([-5, -4, -3, -2, -1]), 0.0) is None
    # not monotone: the first time counts
    assert first_crossing(alphas, np.array([-1, 1, -1, 1, 1]), 0.0) == pytest.approx(0.125)


def test_the_path_runs_from_the_face_to_the_whole_edit():
    x, end = torch.zeros(3, 4, 4), torch.ones(3, 4, 4)
    images = path_images(x, end, [0, 0.25, 1])
    assert images.shape == (3, 3, 4, 4) and torch.equal(images[0], x) and torch.equal(images[2], end)
    assert float(images[1].mean()) == pytest.approx(0.25)


def test_the_later_model_needs_more_of_the_same_edit():
    x, end = torch.zeros(3, 8, 8), torch.ones(3, 8, 8)
    teacher, student = Brightness(10, 0.4), Brightness(10, 0.6)  # flips at 40% and 60% of the edit
    path = recourse_path(x, end, 0, 1, teacher, student, "teacher", {"boundary": 0.0, "visible": 2.0})
    assert path.teacher_flip == pytest.approx(0.4, abs=1e-6) and path.student_flip == pytest.approx(0.6, abs=1e-6)
    assert path.extra_edit == pytest.approx(0.5)
    # stops on the guiding (teacher's) logit: margin 2 at 10 (α − 0.4) = 2
    assert path.stops == {"boundary": pytest.approx(0.4), "visible": pytest.approx(0.6)}
    assert "needs 50% more of the same edit" in divergence_sentence(path, "ptq-int4")
    record = path.to_dict()
    assert len(record["alphas"]) == len(record["teacher_logits"]) == 33 and record["extra_edit"] == pytest.approx(0.5)


def test_target_zero_counts_a_falling_logit_and_the_student_may_guide():
    x, end = torch.ones(3, 8, 8), torch.zeros(3, 8, 8)  # brightness falls along the edit
    path = recourse_path(x, end, 0, 0, Brightness(10, 0.5), Brightness(10, 0.9), "student", {"boundary": 0.0})
    assert path.student_flip == pytest.approx(0.1) and path.teacher_flip == pytest.approx(0.5)
    assert path.stops["boundary"] == pytest.approx(0.1)  # the student guides
    assert "ptq-int4's own edit" in divergence_sentence(path, "ptq-int4")
    assert "the full-precision model needs 400% more" in divergence_sentence(path, "ptq-int4")


def test_a_model_that_never_flips_is_said_so():
    x, end = torch.zeros(3, 8, 8), torch.ones(3, 8, 8)
    path = recourse_path(x, end, 0, 1, Brightness(10, 0.5), Brightness(10, 2.0), "teacher", {"boundary": 0.0})
    assert path.student_flip is None and path.extra_edit is None
    assert "gptq-int2 does not flip anywhere along it" in divergence_sentence(path, "gptq-int2")
    with pytest.raises(ValueError, match="guided_by"):
        recourse_path(x, end, 0, 1, Brightness(1, 0), Brightness(1, 0), "guide", {})


def test_judges_read_along_a_path_go_into_its_record():
    from dataclasses import replace

    x, end = torch.zeros(3, 8, 8), torch.ones(3, 8, 8)
    path = recourse_path(x, end, 0, 1, Brightness(10, 0.4), Brightness(10, 0.6), "teacher", {"boundary": 0.0})
    judged = replace(path, judged_alphas=(0.0, 1.0), judge_scores={"lamp": (0.1, float("nan"))})
    record = judged.to_dict()
    assert record["judged_alphas"] == [0.0, 1.0] and record["judge_scores"] == {"lamp": [0.1, None]}


def test_an_edit_that_ends_before_the_visible_stop_says_its_picture_is_the_whole_edit():
    x, end = torch.zeros(3, 8, 8), torch.ones(3, 8, 8)
    teacher = Brightness(10, 0.4)  # ends at logit +6: past the boundary, short of a visible stop at 10
    short = recourse_path(x, end, 0, 1, teacher, teacher, "teacher", {"boundary": 0.0, "visible": 10.0})
    assert short.stops["visible"] is None
    assert "ends at logit +6.0 toward the target, short of the visible stop (10)" in divergence_sentence(short, "ptq")
    reached = recourse_path(x, end, 0, 1, teacher, teacher, "teacher", {"boundary": 0.0, "visible": 5.0})
    assert "short of" not in divergence_sentence(reached, "ptq")


# --- a flip-point comparison only where it can be read -------------------------------------------


def flips_at(teacher_share: float, student_share: float):
    """A path on which the full-precision decision flips at ``teacher_share`` of the edit and the
    compressed one at ``student_share`` (both logits linear in the share: exact crossings)."""
    x, end = torch.zeros(3, 8, 8), torch.ones(3, 8, 8)
    return recourse_path(x, end, 0, 1, Brightness(10, teacher_share), Brightness(10, student_share), "teacher",
                         {"boundary": 0.0})


def test_two_early_flips_are_not_read_as_a_ratio():
    """Flips at 1.5% and 3.1% of the edit: was "ptq-int8 needs 107% more of the same edit"."""
    path = flips_at(0.015, 0.031)
    said = divergence_sentence(path, "ptq-int8")
    assert "more of the same edit" not in said, said
    assert "both models flip within the first 10% of the edit" in said


def test_flips_within_one_sampling_step_are_said_to_be_at_the_same_point():
    """Flips at 40% and 43%, less than one step of the sampled path (1/32) apart: was "needs 8% more"."""
    path = flips_at(0.40, 0.43)
    said = divergence_sentence(path, "ptq-int8")
    assert "more of the same edit" not in said, said
    assert "both models flip at about 40% of the edit" in said and "one sampling step" in said


def test_an_early_and_a_late_flip_are_given_without_a_ratio():
    """One flip at 5% (before the 10% minimum), the other at 50%: was "needs 900% more"."""
    said = divergence_sentence(flips_at(0.05, 0.50), "ptq-int8")
    assert "more of the same edit" not in said, said
    assert "the full-precision model flips at 5% of the edit and ptq-int8 at 50%" in said


def test_no_flip_ratio_where_the_verdict_does_not_compare_sizes():
    path = flips_at(0.40, 0.60)
    assert "needs 50% more of the same edit" in divergence_sentence(path, "ptq-int8")
    said = divergence_sentence(path, "ptq-int8", sizes_compared=False)
    assert "more of the same edit" not in said and "%" in said, said
    assert "not compared" in said
