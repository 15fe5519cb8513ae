"""Ranking a folder by recourse divergence: the same paired core as an audit, row by row."""

from dataclasses import replace

import pytest
import torch

from recourse.attribution import AttributionConfig
from recourse.audit.paired import Student
from recourse.audit.pipeline import audit_image
from recourse.audit.result import AuditSettings
from recourse.audit.stops import AuditStops
from recourse.audit.scan import divergence_score, read_folder, scan_folder
from recourse.data import ATTRIBUTES
from recourse.generation import CounterfactualConfig
from recourse.metrics import image_recourse
from tests.conftest import BrightnessModel, NegateOne

SMILING = ATTRIBUTES.index("Smiling")

# the walk: its edits flip the tiny generator's brightness decisions, so that recourse is valid
TINY = AuditSettings(CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, finish_steps=5),
                     AttributionConfig(ig_steps=4, occlusion_window=4, occlusion_stride=4))
# as the product reads an audit: the numbers at one stop, the pictures at another, the edit past both
TINY_AT_STOPS = replace(TINY, stops=AuditStops(benchmark=0.5, visible=1.0, edit=2.0))


@pytest.mark.parametrize("settings", [TINY, TINY_AT_STOPS], ids=["where each edit stops", "at the audit's stops"])
def test_scan_folder_ranks_and_a_listed_image_reproduces_its_row(hq_folder, tiny_generator, settings):
    teacher = BrightnessModel()
    negated = NegateOne(teacher, SMILING).eval()
    student = Student("ptq-int8", negated, negated)
    root, _ = hq_folder  # test split: ids 27000, 27001, 29999
    judge = BrightnessModel()  # a judge that reads the edit: it sees what the teacher sees
    steps = list(scan_folder(root, "ptq-int8", "Smiling", count=3, split="test", settings=settings, teacher=teacher,
                             student=student, generator=tiny_generator, judge=judge))
    assert [(done, total) for done, total, _ in steps] == [(1, 3), (2, 3), (3, 3)]
    cases = steps[-1][2]
    assert sorted(c.filename for c in cases) == ["27000.jpg", "27001.jpg", "29999.jpg"]
    ranked = [c.divergence for c in cases]
    assert ranked == sorted(ranked, key=lambda d: (d is None, -(d or 0.0)))  # worst first, undefined last
    for case in cases:
        assert case.divergence == divergence_score(case.recourse, case.face_logit)
        single = audit_image(case.image, variant="ptq-int8", attribute="Smiling", settings=settings, teacher=teacher,
                             student=student, generator=tiny_generator, judge=judge)
        assert single.predictions.target == case.target and single.recourse == case.recourse
        assert case.judge is not None and single.judge == case.judge  # the row's judge view is the audit's
    # a student that negates the audited logit rejects every valid recourse of the teacher
    assert all(not c.recourse.student_accepts_teacher for c in cases if c.recourse.teacher_valid)
    assert any(c.recourse.teacher_valid for c in cases)


def test_read_folder_frames_the_first_images_of_a_split(hq_folder):
    root, _ = hq_folder
    names, images = read_folder(root, "val", 5, 8)
    assert names == ("24000.jpg", "26999.jpg")  # the val split holds two of the folder's ids
    framed = list(images)
    assert len(framed) == 2 and all(x.shape == (3, 8, 8) and x.dtype == torch.float32 for x in framed)
    assert all(0 <= float(x.min()) and float(x.max()) <= 1 for x in framed)
    with pytest.raises(ValueError, match="count must be >= 1"):
        read_folder(root, "val", 0, 8)


@pytest.mark.parametrize("values, expected", [
    ((False, False, False, 0.1, 0.1, 0.0), None),  # no teacher recourse: nothing to compare
    ((True, True, True, 0.1, 0.1, 1.0), 0.0),  # the same recourse
    ((True, False, True, 0.1, 0.2, 0.5), 1.25),  # rejected (1) + (1 − 0.5) / 2
    ((True, False, False, 0.1, 0.2, 0.0), 2.0),  # rejected and none of its own
    ((True, True, True, 0.0, 0.0, 0.0), 0.0),  # zero cost: DirSim undefined, nothing added
])
def test_divergence_score_hand_computed(values, expected):
    assert divergence_score(image_recourse(*values)) == expected


@pytest.mark.parametrize("values, face_logit, expected", [
    ((True, False, True, 0.0003, 0.0001, -0.9), 3.0, None),  # both edits under the floor: on the boundary
    ((True, False, True, 0.1, 0.2, 0.5), 0.016, None),  # p = 0.504: on the boundary whatever the costs
    ((True, False, True, 0.1, 0.0001, -0.9), 3.0, 1.0),  # only the student's edit under the floor: no DirSim term
    ((True, False, True, 0.1, 0.2, 0.5), 0.2, 1.25),  # off the boundary, above the floor: as before
])
def test_divergence_score_respects_the_noise_floor(values, face_logit, expected):
    assert divergence_score(image_recourse(*values), face_logit) == expected


def test_faces_on_the_boundary_rank_after_every_scored_face_and_say_why():
    from recourse.audit.scan import FolderCase, _rank

    def case(name, values, face_logit):
        recourse = image_recourse(*values)
        return FolderCase(name, torch.zeros(3, 4, 4), 1, recourse, divergence_score(recourse, face_logit),
                          face_logit=face_logit)

    boundary = case("boundary", (True, False, False, 0.0003, 0.0, 0.0), 0.016)  # would score 2, the most
    mild = case("mild", (True, True, True, 0.1, 0.1, 0.9), 2.0)
    none = case("none", (False, False, False, 0.1, 0.1, 0.0), 2.0)
    assert [c.filename for c in _rank([boundary, none, mild])] == ["mild", "boundary", "none"]
    assert (mild.score_label, boundary.score_label, none.score_label) == (0.05, "on the boundary",
                                                                          "no teacher recourse")


def test_equal_divergences_rank_the_firmest_refusal_first():
    """Whole-number verdicts tie often (no DirSim orders them): the compressed model's logit on the
    original's counterfactual orders them, so that a screening and the full audits agree on the cut."""
    from recourse.audit.scan import FolderCase, _rank

    recourse = image_recourse(True, False, False, 0.1, 0.1, 0.0)  # rejects, and no recourse of its own: 2
    cases = [FolderCase(name, torch.zeros(3, 4, 4), 1, recourse, divergence_score(recourse, 3.0), face_logit=3.0,
                        student_on_teacher=logit) for name, logit in (("a", -0.2), ("b", -4.0), ("c", -1.5))]
    assert [c.filename for c in _rank(cases)] == ["b", "c", "a"]


def test_scan_folder_rejects_a_folder_that_is_not_celeba(tmp_path, tiny_generator):
    teacher = BrightnessModel()
    with pytest.raises(ValueError, match="not a CelebA folder"):
        next(scan_folder(tmp_path, "ptq-int8", "Smiling", teacher=teacher, student=Student("ptq-int8", teacher, teacher),
                         generator=tiny_generator))


def test_scan_without_a_judge_says_so(hq_folder, tiny_generator):
    teacher = BrightnessModel()
    root, _ = hq_folder
    # the committed judge sees 64 px faces, these models 16 px: no judge applies
    *_, (_, _, cases) = scan_folder(root, "ptq-int8", "Smiling", count=1, split="test", settings=TINY,
                                    teacher=teacher, student=Student("ptq-int8", teacher, teacher),
                                    generator=tiny_generator)
    assert cases[0].judge is None


def test_a_face_far_from_the_boundary_with_a_tiny_recourse_is_not_said_to_sit_on_it():
    """Was: "on the boundary" for a face at logit −5.88 whose full-precision recourse was a tiny change."""
    from recourse.audit.scan import FolderCase

    recourse = image_recourse(True, False, True, 0.001, 0.0015, 0.5)
    far = FolderCase("far", torch.zeros(3, 4, 4), 1, recourse, divergence_score(recourse, -5.88), face_logit=-5.88)
    assert far.divergence is None and far.score_label == "below the noise floor"
