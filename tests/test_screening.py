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


def test_equal_scores_are_shortlisted_by_the_firmest_refusal():
    from recourse.audit.screening import ScreenRow

    rows = [ScreenRow(file, 1, -2.0, -2.0, None, 1, logit, -1.0, 2.0) for file, logit in (("a", -0.1), ("b", -3.0))]
    rows.append(ScreenRow("c", 1, -2.0, -2.0, None, 1, 5.0, -1.0, 1.0))
    assert [row.file for row in shortlist(rows, 3)] == ["b", "a", "c"]


def test_the_audits_own_edits_rank_a_twin_that_steers_elsewhere_above_an_identical_one():
    from types import SimpleNamespace

    from recourse.audit.paired import Student
    from recourse.audit.result import AuditSettings
    from recourse.audit.screening import screen_by_edits
    from recourse.generation import CounterfactualConfig
    from recourse.generation.spaces.bundle import EditSpaces
    from tests.spaces_fixtures import MouthBoxModel, smooth_faces, synthetic_space

    index = ATTRIBUTES.index("Wearing_Lipstick")
    generator = SimpleNamespace(edit_spaces=EditSpaces({"mouth": synthetic_space()}))
    settings = AuditSettings(CounterfactualConfig(method="region-space", margin=1.0, space_prior_weight=0.02))
    faces, teacher = smooth_faces(3), MouthBoxModel(index)
    same = screen_by_edits(["a", "b", "c"], faces, teacher, Student("copy", teacher, teacher), "Wearing_Lipstick", settings,
                           generator)
    other = MouthBoxModel(index, seed=1)
    apart = screen_by_edits(["a", "b", "c"], faces, teacher, Student("other", other, other), "Wearing_Lipstick", settings,
                            generator)
    assert all(row.cosine is None or abs(row.cosine - 1) < 1e-5 for row in same)
    assert all(row.score < 0.01 for row in same)  # a copy makes the same edit: nothing diverges
    assert sum(row.score for row in apart) > sum(row.score for row in same)


def test_the_edit_screening_scores_each_face_as_its_full_audit_ranks_it():
    from types import SimpleNamespace

    from recourse.audit.paired import Student
    from recourse.audit.result import AuditSettings
    from recourse.audit.scan import scan_images
    from recourse.audit.screening import screen_by_edits
    from recourse.generation import CounterfactualConfig
    from recourse.generation.spaces.bundle import EditSpaces
    from tests.spaces_fixtures import MouthBoxModel, smooth_faces, synthetic_space

    index = ATTRIBUTES.index("Wearing_Lipstick")
    generator = SimpleNamespace(edit_spaces=EditSpaces({"mouth": synthetic_space()}))
    settings = AuditSettings(CounterfactualConfig(method="region-space", margin=1.0, space_prior_weight=0.02))
    faces, teacher, other = smooth_faces(4, seed=3), MouthBoxModel(index), MouthBoxModel(index, seed=2)
    student = Student("other", other, other)
    files = ["a", "b", "c", "d"]
    together = screen_by_edits(files, faces, teacher, student, "Wearing_Lipstick", settings, generator)
    for i, row in enumerate(together):
        *_, (_, _, cases) = scan_images((files[i],), [faces[i]], "other", "Wearing_Lipstick", settings, teacher=teacher,
                                        student=student, generator=generator, judge=None)
        audited = -1.0 if cases[0].divergence is None else cases[0].divergence
        assert abs(row.score - audited) < 1e-4, (files[i], row.score, audited)
        assert abs(row.student_at_teacher - cases[0].student_on_teacher) < 1e-4  # the tie-break reading too
