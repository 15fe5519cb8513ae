"""The scan's first look: a compressed model that decides as the original scores low, one that
turns the audited decision around scores high, and the shortlist takes the highest first."""

import torch

from recourse.audit.screening import screen, shortlist
from recourse.data import ATTRIBUTES
from tests.conftest import BrightnessModel, NegateOne


def _faces() -> torch.Tensor:
    return torch.stack([torch.full((3, 16, 16), level) for level in (0.45, 0.48, 0.52, 0.55)])


def test_a_faithful_copy_scores_low_and_a_contrary_one_high():
    teacher = BrightnessModel()
    contrary = NegateOne(teacher, ATTRIBUTES.index("Smiling"))
    files = ["a", "b", "c", "d"]
    faithful = screen(files, _faces(), teacher, teacher, teacher, "Smiling", margin=0.2)
    turned = screen(files, _faces(), teacher, contrary, contrary, "Smiling", margin=0.2)
    for same, other in zip(faithful, turned):
        assert same.target == other.target and same.teacher_logit < 0  # the target flips the original
        assert same.cosine > 0.99 and other.cosine < -0.99  # the same gradient, and its opposite
        assert same.teacher_reach is not None and same.student_at_teacher >= 0.2  # the copy is convinced too
        assert other.student_at_teacher < 0  # the contrary model rejects what convinced the original
        assert other.score > same.score + 0.5
    assert shortlist(faithful + turned, 4) == sorted(turned, key=lambda row: -row.score)  # every contrary row first
