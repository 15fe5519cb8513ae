"""The artifact check in the audit: each model's shown edit is checked, a failed check is said
with its reasons, and the judges' and dlib's ticks on that edit do not count (verdict, JSON,
HTML report, cards, the command line's line). Tiny 16×16 faces and throwaway methods."""

import html
import json
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from recourse.attribution import AttributionConfig
from recourse.audit.instruments import artifact_checks, gated_ticks
from recourse.audit.paired import Student
from recourse.audit.pipeline import audit_image
from recourse.audit.result import AuditSettings
from recourse.generation import CounterfactualConfig
from recourse.generation.spaces.artifacts import ArtifactCheck
from recourse.render.audit_html import audit_record, evidence_table, report_html, value_cards
from recourse.render.text import audit_line
from tests.conftest import BrightnessModel

TEAL = torch.tensor([0.1, 0.55, 0.55])


def brighten(images, *_):
    """A grey edit: every pixel 0.3 brighter, so the brightness models decide the attribute."""
    return (images + 0.3).clamp(0, 1)


def teal_blob(images, *_):
    """The same edit with a flat teal blob on the face: colours a black-and-white photo never shows."""
    edited = brighten(images)
    edited[:, :, 4:10, 4:10] = TEAL[:, None, None]
    return edited


class SamePerson:
    """A face descriptor that finds every face the same person (distance 0)."""

    def __call__(self, images: torch.Tensor):
        from recourse.instruments.identity import Descriptors

        return Descriptors(np.zeros((len(images), 128)), np.ones(len(images), bool))


@pytest.fixture(scope="module")
def grey_face() -> torch.Tensor:
    """A black-and-white 16×16 face, dark enough that the brightness models decide 0 on it."""
    grey = torch.rand(1, 16, 16, generator=torch.Generator().manual_seed(5)) * 0.2 + 0.2
    return grey.expand(3, -1, -1).contiguous()


@pytest.fixture(scope="module")
def audits(grey_face, tiny_generator):
    """The passing and the failing audit, the same judge (it sees brightness) and descriptor."""
    from recourse.generation import methods

    methods.METHODS["test-brighten"], methods.METHODS["test-teal-blob"] = brighten, teal_blob
    teacher = BrightnessModel()
    made = {}
    try:
        for method in ("test-brighten", "test-teal-blob"):
            # generate() keeps a black-and-white face's chroma unless told not to: the blob must get through
            settings = AuditSettings(CounterfactualConfig(method=method, keep_monochrome=False),
                                     AttributionConfig(ig_steps=2, occlusion_window=8, occlusion_stride=8))
            made[method] = audit_image(grey_face, variant="ptq-int8", attribute="Smiling", target=1,
                                       settings=settings, teacher=teacher, student=Student("ptq-int8", teacher, teacher),
                                       generator=tiny_generator, judge=teacher, strong_judge=None,
                                       identity=SamePerson())
    finally:
        del methods.METHODS["test-brighten"], methods.METHODS["test-teal-blob"]
    return made


def test_a_passing_edit_shows_passed_and_its_ticks_count(audits):
    result = audits["test-brighten"]
    assert all(isinstance(check, ArtifactCheck) and check.passed for check in result.artifacts)
    assert result.recourse.teacher_valid and result.recourse.student_valid
    assert result.edit_kind == "test-brighten" and "artifacts" in result.seconds
    assert "artifact check" not in result.verdict
    assert result.verdict.endswith("The robust judge sees Smiling change in both recourses.")
    record = json.loads(json.dumps(audit_record(result), allow_nan=False))
    assert record["artifacts"]["teacher"]["passed"] is True and record["artifacts"]["student"]["reasons"] == []
    assert record["edit_kind"] == "test-brighten"
    assert record["judge"]["sees_teacher_change"] is True and "as_read" not in record["judge"]
    assert record["identity"]["teacher_kept"] is True
    cards = value_cards(result)
    assert "artifact check" not in cards and cards.count("sees it ✓") == 2  # a pass is not on the screen
    assert value_cards(result, every_check=True).count("artifact check: passed") == 2  # the report says it
    assert "x'_f artifact check: passed; x'_g artifact check: passed" in audit_line(result)


def test_a_teal_blob_on_a_black_and_white_face_fails_and_its_ticks_do_not_count(audits):
    result = audits["test-teal-blob"]
    teacher, student = result.artifacts
    assert not teacher.passed and not student.passed
    assert teacher.monochrome_kept is False and teacher.novel_colour_share > 0.05
    assert any("black-and-white photo was coloured in" in reason for reason in teacher.reasons)
    novel = next(reason for reason in teacher.reasons if "colours the photo never shows" in reason)
    # the instruments read the edit as before: the judge sees it, dlib finds the same person
    assert result.judge.sees_teacher_change and result.identity.kept("teacher")

    said = result.verdict
    assert "The full-precision edit failed the artifact check: " in said and novel in said
    assert "The compressed edit failed the artifact check: " in said
    assert "the judges' ticks and dlib's same-person tick do not count for it" in said
    assert "robust judge sees" not in said

    record = json.loads(json.dumps(audit_record(result), allow_nan=False))
    assert record["verdict"] == said
    assert record["judge"]["sees_teacher_change"] is False and record["judge"]["sees_student_change"] is False
    assert record["judge"]["as_read"] == {"sees_teacher_change": True, "sees_student_change": True}
    assert record["judge"]["on_teacher_counterfactual"] > 0.5  # the reading itself stays
    assert record["identity"]["teacher_kept"] is False and record["identity"]["as_read"]["teacher_kept"] is True
    assert record["artifacts"]["teacher"]["passed"] is False and novel in record["artifacts"]["teacher"]["reasons"]

    cards = value_cards(result)
    assert cards.count("does not count ✗") == 4 and "sees it ✓" not in cards and "kept ✓" not in cards
    assert f"artifact check: failed ({'; '.join(teacher.reasons)})" in value_cards(result, every_check=True)
    assert "✓ = still the same person; an instrument" in evidence_table(result)
    page = report_html(result, "test")
    assert novel in page and "The full-precision edit failed the artifact check" in page
    assert "judge sees the change in x'_f / x'_g: failed check / failed check" in audit_line(result)


def test_the_pictures_say_which_edit_they_are(audits):
    result = audits["test-brighten"]
    for kind, words in (("region-space", "edited inside a space of real face parts"),
                        ("denoised", "the model's pixel edit")):
        shown = replace(result, edit_kind=kind)
        assert html.escape(f"full-precision recourse x'_f ({words})") in report_html(shown)
        assert html.escape(f"Full precision x'_f ({words}): artifact check: passed") in value_cards(shown, True)
    assert "(edited inside" not in report_html(result) and "pixel edit" not in report_html(result)  # a walk's


def test_an_audit_without_checks_renders_as_before(audits):
    earlier = replace(audits["test-teal-blob"], artifacts=(None, None), edit_kind="")
    record = earlier.to_dict()
    assert record["artifacts"] == {"teacher": None, "student": None} and record["edit_kind"] == ""
    assert record["judge"]["sees_teacher_change"] is True and "as_read" not in record["judge"]
    assert "artifact check" not in earlier.verdict and "artifact check" not in value_cards(earlier)
    assert "sees Smiling change in both recourses" in earlier.verdict


def test_the_landmarks_are_fitted_only_where_a_space_reads_the_part(monkeypatch, grey_face):
    import recourse.audit.instruments as instruments

    fitted, given = [], []
    monkeypatch.setattr(instruments, "face_landmarks", lambda images: fitted.append(images) or (
        np.zeros((len(images), 68, 2)), np.ones(len(images), bool)))
    monkeypatch.setattr(instruments, "check_attribute_edit", lambda x, edited, attribute, points, spaces: given.append(
        points) or ArtifactCheck(None, 0.0, None, None, None, True, ()))
    spaces = SimpleNamespace(edits=lambda attribute: attribute == "Smiling")
    artifact_checks(grey_face, grey_face, grey_face, "Smiling", SimpleNamespace(edit_spaces=spaces))
    assert len(fitted) == 1 and all(points is not None and points.shape == (68, 2) for points in given)
    artifact_checks(grey_face, grey_face, grey_face, "Wavy_Hair", SimpleNamespace(edit_spaces=spaces))
    artifact_checks(grey_face, grey_face, grey_face, "Smiling", SimpleNamespace())
    assert len(fitted) == 1 and given[2:] == [None] * 4


def test_a_struck_tick_keeps_its_reading():
    failed = ArtifactCheck(False, 0.2, None, None, None, False, ("a reason",))
    passed = ArtifactCheck(None, 0.0, None, None, None, True, ())
    record = {"on_teacher_counterfactual_seen": True, "on_student_counterfactual_seen": True, "score": 0.9}
    keys = ("on_teacher_counterfactual_seen", "on_student_counterfactual_seen")
    assert gated_ticks(record, keys, (passed, failed)) == {
        **record, "on_student_counterfactual_seen": False, "as_read": {"on_student_counterfactual_seen": True}}
    assert gated_ticks(record, keys, (None, passed)) == record and gated_ticks(None, keys, (failed, failed)) is None
    assert gated_ticks({**record, "on_teacher_counterfactual_seen": None}, keys, (failed, passed))[
        "on_teacher_counterfactual_seen"] is None  # no reading stays no reading
