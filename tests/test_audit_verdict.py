"""The audit's verdict in plain words: the boundary said only where the face is on it, the
divergence first, and nothing compared that the verdict says is not compared."""

import pytest

from recourse.audit.image_noise_floor import NOISE_FLOOR_COST
from recourse.audit.verdict import verdict
from recourse.metrics import image_recourse

FAR = -5.88  # p 0.003: far from the full-precision boundary
NEAR = 0.016  # p 0.504: on it


# --- the boundary only where the face is on it ------------------------------------------------


def test_a_small_change_far_from_the_boundary_is_not_said_to_sit_on_it():
    """Both recourses under the noise floor on a face the full-precision model decides at p 0.003:
    was "The face already sits on the full-precision model's decision boundary (logit -5.880, p 0.003)"."""
    said = verdict(image_recourse(True, True, True, 0.001, 0.0015, 0.9), None, "Smiling", FAR)
    assert "boundary" not in said, said
    assert "Both recourses change the face by less than the noise floor" in said
    assert f"under {NOISE_FLOOR_COST}" in said and "not compared" in said and "%" not in said


def test_a_small_full_precision_change_beside_a_larger_own_one_is_said_plainly():
    said = verdict(image_recourse(True, True, True, 0.001, 0.03, 0.9), None, "Smiling", FAR)
    assert "boundary" not in said, said
    assert "The full-precision recourse changes the face by only 0.0010 on average, under the noise floor" in said
    assert "not compared" in said and "larger change" not in said


def test_without_the_faces_logit_a_small_change_is_not_called_the_boundary():
    said = verdict(image_recourse(True, True, True, 0.001, 0.0015, 0.9))
    assert "boundary" not in said and "less than the noise floor" in said, said


def test_a_face_on_the_boundary_is_still_said_to_sit_on_it():
    said = verdict(image_recourse(True, True, True, 0.00001, 0.0003, 0.1), None, "Smiling", NEAR)
    assert said.startswith("The face already sits on the full-precision model's decision boundary "
                           "(logit +0.016, p 0.504)"), said
    assert "%" not in said


# --- the divergence first -----------------------------------------------------------------------


@pytest.mark.parametrize("values, opening", [
    # the student rejects the teacher's recourse
    ((True, False, True, 0.1, 0.15, 0.8), "The quantized model rejects the recourse the full-precision model "
                                          "accepts."),
    # it accepts it, but finds no valid recourse of its own: was "The quantized model accepts the recourse ..."
    ((True, True, False, 0.1, 0.1, 0.0), "Guided by itself, the quantized model finds no valid recourse"),
    # it accepts it, but its own recourse goes another way: was "The quantized model accepts the recourse ..."
    ((True, True, True, 0.1, 0.12, 0.2), "The quantized model's own recourse goes a different way"),
])
def test_the_verdict_leads_with_the_divergence(values, opening):
    said = verdict(image_recourse(*values), None, "Smiling", 2.0)
    assert said.startswith(opening), said
    assert not said.startswith("The quantized model accepts the recourse")


def test_accepts_the_recourse_leads_only_where_nothing_diverges():
    said = verdict(image_recourse(True, True, True, 0.1, 0.12, 0.9), None, "Smiling", 2.0)
    assert said.startswith("The quantized model accepts the recourse the full-precision model accepts."), said
    assert "20% larger change" in said and "90% similar" in said


def test_a_different_direction_is_said_once_with_the_size_after_it():
    said = verdict(image_recourse(True, True, True, 0.1, 0.12, 0.2), None, "Smiling", 2.0)
    assert said.count("similar") == 1 and "20% similar" in said and "20% larger change" in said, said
    assert "although it accepts the full-precision model's recourse" in said


# --- what the path may compare --------------------------------------------------------------------


@pytest.mark.parametrize("values, face_logit, withheld", [
    ((True, True, True, 0.1, 0.12, 0.9), 2.0, False),
    ((True, True, True, 0.001, 0.0015, 0.9), FAR, True),  # both under the floor
    ((True, True, True, 0.1, 0.0005, 0.9), 2.0, True),  # the compressed one under the floor
    ((True, True, True, 0.1, 0.12, 0.9), NEAR, True),  # on the boundary
    ((True, True, False, 0.1, 0.1, 0.0), 2.0, False),  # no own recourse: the verdict compares no sizes
    ((False, False, False, 0.1, 0.1, 0.0), 2.0, False),
])
def test_sizes_withheld_follows_what_the_verdict_says(values, face_logit, withheld):
    from recourse.audit.verdict import sizes_withheld

    recourse = image_recourse(*values)
    assert sizes_withheld(recourse, face_logit) is withheld
    said = verdict(recourse, None, "Smiling", face_logit)
    assert ("not compared" in said or "cannot be compared" in said) is withheld, said
