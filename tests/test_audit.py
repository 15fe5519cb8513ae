"""The per-image audit on tiny models passed in (``teacher=``, ``student=``, ``generator=``),
its plain-words verdict, its JSON and HTML renderings, and the committed models."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from recourse.attribution import AttributionConfig
from recourse.audit.instruments import IdentityView, JudgeView
from recourse.audit.paired import Student
from recourse.audit.pipeline import audit_image, audit_steps
from recourse.audit.result import AuditSettings
from recourse.audit.verdict import identity_verdict, judge_says, judge_verdict, verdict
from recourse.data import ATTRIBUTES
from recourse.generation import CounterfactualConfig
from recourse.metrics import image_recourse
from recourse.render.audit_html import (
    CARDS, IDENTITY_CARDS, JUDGE_CARDS, STRONG_JUDGE_CARDS, audit_record, evidence_table, report_html, value_cards,
)
from tests.conftest import COMMITTED, ROOT, BrightnessModel, NegateOne, still_generator, tiny_classifier

SMILING = ATTRIBUTES.index("Smiling")
# the walk: its edits flip the tiny generator's brightness decisions, so that recourse is valid
TINY = AuditSettings(CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, finish_steps=5),
                     AttributionConfig(ig_steps=4, occlusion_window=4, occlusion_stride=4))
GALLERY_FACE = ROOT / "assets" / "gallery" / "grace-hopper.png"


@pytest.fixture(scope="module")
def teacher() -> nn.Module:
    """A decision the tiny generator can flip for sure (brightness), so that every recourse
    check below runs; a random tiny classifier barely moves within its 8-dimensional edits."""
    return BrightnessModel()


@pytest.fixture(scope="module")
def image() -> torch.Tensor:
    return torch.rand(3, 16, 16, generator=torch.Generator().manual_seed(3)) * 0.6  # decided 0 on all 40


def same_as(teacher: nn.Module, name: str = "ptq-int8") -> Student:
    return Student(name, twin=teacher, decider=teacher)


def test_the_teacher_as_its_own_student_gives_identical_recourse(teacher, image, tiny_generator):
    result = audit_image(image, variant="ptq-int8", attribute="Smiling", settings=TINY, teacher=teacher,
                         student=same_as(teacher), generator=tiny_generator)
    # same seed and same guiding model: the same counterfactual
    assert torch.equal(result.teacher_counterfactual, result.student_counterfactual)
    torch.testing.assert_close(result.teacher_difference, result.teacher_counterfactual - image)
    assert result.predictions.diverging == ()
    teacher_decision = int(torch.sigmoid(teacher(image[None]))[0, SMILING] >= 0.5)
    assert result.predictions.target == 1 - teacher_decision
    r = result.recourse
    assert r.teacher_valid and r.student_accepts_teacher and r.student_valid  # the guidance succeeded
    assert r.teacher_cost > 0 and r.student_cost == r.teacher_cost
    assert r.crg == 0.0 and r.dirsim == pytest.approx(100.0)
    assert "0% larger" in result.verdict and "100% similar" in result.verdict
    assert all(a.spearman == pytest.approx(1.0) and a.top_iou == 1.0 for a in result.attributions)
    assert [a.method for a in result.attributions] == ["integrated-gradients", "occlusion"]


def test_a_student_disagreeing_on_one_attribute(teacher, image, tiny_generator):
    student = NegateOne(teacher, SMILING).eval()
    result = audit_image(image, variant="ptq-int8", attribute="Smiling", target=1, settings=TINY, teacher=teacher,
                         student=Student("ptq-int8", student, student), generator=tiny_generator)
    p_f, p_g = result.predictions.teacher_probabilities, result.predictions.student_probabilities
    torch.testing.assert_close(p_g[SMILING], 1 - p_f[SMILING])
    assert result.predictions.diverging == ("Smiling",)
    # the student's decisions on both counterfactuals, recomputed by hand
    with torch.no_grad():
        on_teacher = float(torch.sigmoid(student(result.teacher_counterfactual[None]))[0, SMILING])
        on_student = float(torch.sigmoid(student(result.student_counterfactual[None]))[0, SMILING])
        teacher_on_own = float(torch.sigmoid(teacher(result.teacher_counterfactual[None]))[0, SMILING])
    assert result.recourse.teacher_valid == (teacher_on_own >= 0.5)
    assert result.recourse.student_accepts_teacher == (on_teacher >= 0.5)
    assert result.recourse.student_valid == (on_student >= 0.5)
    assert result.probabilities_after["student_on_teacher_counterfactual"] == pytest.approx(on_teacher, abs=1e-6)
    # pushing Smiling up for the teacher pushes it down for the negating student: it must reject it
    assert result.recourse.teacher_valid and not result.recourse.student_accepts_teacher
    assert "rejects the recourse" in result.verdict
    # negated logits: every gradient attribution of the student is the teacher's, negated
    gradient = result.attributions[0]
    torch.testing.assert_close(gradient.student, -gradient.teacher, rtol=1e-4, atol=1e-6)
    assert gradient.spearman == pytest.approx(-1.0)


def test_predictions_come_first_and_the_result_serialises(teacher, image, tiny_generator):
    steps = list(audit_steps(image, variant="ptq-int4", attribute="Young", target=0, settings=TINY, teacher=teacher,
                             student=same_as(teacher, "ptq-int4"), generator=tiny_generator))
    assert steps[0].stage == "predictions" and steps[0].result is None and steps[0].predictions is not None
    assert steps[-1].result is not None and [s.fraction for s in steps] == sorted(s.fraction for s in steps)
    assert all(s.result is None for s in steps[:-1])
    result = steps[-1].result
    record = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert record["variant"] == "ptq-int4" and record["attribute"] == "Young" and record["target"] == 0
    assert len(record["teacher_probabilities"]) == 40 and record["seed"] == TINY.counterfactual.seed
    assert record["settings"]["counterfactual"]["steps"] == 10 and record["versions"]["captum"]
    assert record["verdict"] == result.verdict
    assert {"teacher_valid", "student_accepts_teacher", "student_valid", "crg", "dirsim"} <= set(record["recourse"])
    assert "images" not in record  # pictures are the renderers' business
    exported = json.loads(json.dumps(audit_record(result), allow_nan=False))
    assert exported["images"]["aligned"].startswith("data:image/png;base64,")
    assert {"teacher_counterfactual", "student_counterfactual", "occlusion_student"} <= set(exported["images"])


def test_the_student_kind_is_reported(teacher, image, tiny_generator):
    twin, integer = tiny_classifier(seed=0), tiny_classifier(seed=0)
    assert Student("ptq-int4", twin, twin).kind == "twin"
    result = audit_image(image, variant="ptq-int8", attribute="Smiling", settings=TINY, teacher=teacher,
                         student=Student("ptq-int8", twin, integer), generator=tiny_generator)
    assert result.student_model == "integer" and result.attributions[1].student_model == "integer"
    assert result.attributions[0].student_model == "twin"


@pytest.mark.parametrize("kwargs, message", [
    ({"attribute": "Smile"}, "unknown attribute"),
    ({"target": 2}, "target must be 0, 1 or None"),
    ({"image": torch.rand(3, 8, 8)}, "framed image must be"),
    ({"image": torch.rand(3, 16, 16) * 2}, r"values in \[0, 1\]"),
    ({"image": b"not an image"}, "not a readable image"),
])
def test_bad_inputs_raise_clear_errors(teacher, image, tiny_generator, kwargs, message):
    arguments = {"image": image, "variant": "ptq-int8", "attribute": "Smiling", "target": None, "settings": TINY,
                 "teacher": teacher, "student": same_as(teacher), "generator": tiny_generator, **kwargs}
    with pytest.raises(ValueError, match=message):
        audit_image(**arguments)


# --- when the full-precision recourse changes nothing ---------------------------------------


@pytest.fixture(scope="module")
def zero_cost_audit(teacher, image):
    """The teacher already decides the target and the generator edits nothing: both recourses
    are the face itself, valid for both models, at cost 0 — CRG_i and DirSim_i are undefined."""
    target = int(teacher(image[None])[0, SMILING] >= 0)
    return audit_image(image, variant="ptq-int8", attribute="Smiling", target=target, settings=TINY, teacher=teacher,
                       student=same_as(teacher), generator=still_generator(16))


def test_zero_cost_recourse_is_undefined_not_a_crash(zero_cost_audit, image):
    r = zero_cost_audit.recourse
    assert torch.equal(zero_cost_audit.teacher_counterfactual, image)
    assert r.teacher_valid and r.student_accepts_teacher and r.student_valid
    assert r.teacher_cost == 0.0 and r.student_cost == 0.0
    assert r.crg is None and r.dirsim is None and r.reason == "the full-precision recourse changes nothing"
    assert zero_cost_audit.verdict == verdict(r)
    assert zero_cost_audit.verdict == (
        "The quantized model accepts the recourse the full-precision model accepts. Its own recourse cannot be "
        "compared with the full-precision one: the full-precision recourse changes nothing.")


def test_zero_cost_recourse_in_the_json_and_the_html(zero_cost_audit):
    record = json.loads(json.dumps(audit_record(zero_cost_audit), allow_nan=False))
    assert record["recourse"]["crg"] is None and record["recourse"]["dirsim"] is None
    assert record["recourse"]["reason"] == "the full-precision recourse changes nothing"
    assert record["verdict"] == zero_cost_audit.verdict
    cards = value_cards(zero_cost_audit)
    assert cards.count('class="value-card"') == len(CARDS) + len(JUDGE_CARDS) + len(STRONG_JUDGE_CARDS) + len(IDENTITY_CARDS)
    assert record["judge"] is None and cards.count("no judge") == 2  # the committed judge sees 64×64, not 16×16
    assert cards.count("undefined: the full-precision recourse changes nothing") == 2  # CRG_i and DirSim_i
    page = report_html(zero_cost_audit, "test")
    assert "cannot be compared with the full-precision one" in page and "undefined: " in page


@pytest.mark.parametrize("values, expected", [
    ((False, False, False, 0.1, 0.1, 0.0), "found no valid recourse for this face"),
    ((True, False, True, 0.1, 0.15, 0.8), "rejects the recourse the full-precision model accepts. Its own recourse "
                                          "is a 50% larger change than the full-precision one, in a direction 80% "
                                          "similar"),
    ((True, True, True, 0.1, 0.05, 0.8), "accepts the recourse the full-precision model accepts. Its own recourse "
                                         "is a 50% smaller"),
    ((True, False, False, 0.1, 0.1, 0.0), "Guided by itself, the quantized model finds no valid recourse."),
    ((True, True, True, 0.0, 0.0, 0.0), "cannot be compared with the full-precision one: the full-precision "
                                        "recourse changes nothing."),
    ((True, True, True, 0.0, 0.3, 0.0), "cannot be compared"),
])
def test_verdict_in_plain_words(values, expected):
    assert expected in verdict(image_recourse(*values))


# --- the robust judge's view -----------------------------------------------------------------


class Constant(nn.Module):
    """A judge nothing moves: its 40 logits are -3 whatever the image."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.full((len(images), 40), -3.0)


def test_a_judge_that_reads_the_edit_sees_it_and_a_blind_one_does_not(teacher, image, tiny_generator):
    arguments = dict(variant="ptq-int8", attribute="Smiling", target=1, settings=TINY, teacher=teacher,
                     student=same_as(teacher), generator=tiny_generator)
    seeing = audit_image(image, **arguments, judge=teacher)
    assert seeing.recourse.teacher_valid and seeing.recourse.student_valid
    with torch.no_grad():
        expected = torch.sigmoid(teacher(torch.stack([image, seeing.teacher_counterfactual,
                                                      seeing.student_counterfactual])))[:, SMILING].tolist()
    judged = seeing.judge
    probabilities = [judged.on_face, judged.on_teacher_counterfactual, judged.on_student_counterfactual]
    assert probabilities == pytest.approx(expected)
    assert judged.counted and judged.sees_teacher_change and judged.sees_student_change
    assert seeing.verdict.endswith("The robust judge sees Smiling change in both recourses.")

    blind = audit_image(image, **arguments, judge=Constant())
    assert torch.equal(blind.teacher_counterfactual, seeing.teacher_counterfactual)  # the judge never guides
    assert blind.judge.counted and blind.judge.sees_teacher_change is False
    assert "sees Smiling change in neither recourse" in blind.verdict
    record = json.loads(json.dumps(audit_record(blind), allow_nan=False))
    assert record["judge"]["sees_teacher_change"] is False and record["judge"]["on_face"] == pytest.approx(0.047426)
    assert value_cards(blind).count("sees no change ✗") == 2 and value_cards(seeing).count("sees it ✓") == 2
    assert "robust judge (never guides; trained on CelebA-HQ" in evidence_table(blind) and "robust judge" in report_html(blind)


def view(on_face: float, on_teacher: float, on_student: float, target: int = 1) -> JudgeView:
    return JudgeView(target, on_face, on_teacher, on_student)


@pytest.mark.parametrize("judge, validity, expected", [
    (None, (True, True), ""),
    (view(0.7, 0.9, 0.9), (True, True), "already sees the face with Blond Hair (p 0.70), so it cannot tell"),
    (view(0.3, 0.1, 0.1, target=0), (True, True), "already sees the face without Blond Hair (p 0.30)"),
    (view(0.2, 0.8, 0.3), (True, True), "sees Blond Hair change in the full-precision recourse but not in the "
                                        "compressed one, which likely moved the classifier"),
    (view(0.2, 0.3, 0.8), (True, True), "in the compressed recourse but not in the full-precision one"),
    (view(0.2, 0.3, 0.3), (True, True), "sees Blond Hair change in neither recourse: both likely moved"),
    (view(0.2, 0.8, 0.8), (True, False), "sees Blond Hair change in the full-precision recourse."),
    (view(0.2, 0.8, 0.3), (False, True), "does not see Blond Hair change in the compressed recourse"),
    (view(0.8, 0.3, 0.6, target=0), (True, True), "in the full-precision recourse but not in the compressed one"),
    (view(0.2, 0.8, 0.8), (False, False), ""),
])
def test_the_judges_sentence(judge, validity, expected):
    teacher_valid, student_valid = validity
    recourse = image_recourse(teacher_valid, teacher_valid, student_valid, 0.1, 0.1, 0.5)
    sentence = judge_verdict(judge, recourse, "Blond_Hair")
    assert expected in sentence and (sentence == "") == (expected == "")


@pytest.mark.parametrize("judge, expected", [
    (None, ("no judge", "no judge")),
    (view(0.7, 0.9, 0.2), ("not counted", "not counted")),  # it saw the attribute on the face already
    (view(0.2, 0.9, 0.2), ("yes", "no")),
    (view(0.8, 0.6, 0.1, target=0), ("no", "yes")),
])
def test_what_the_judge_says_in_a_word(judge, expected):
    assert (judge_says(judge, "teacher"), judge_says(judge, "student")) == expected


# --- identity and the stronger judge (issue 21): shown, or said to be missing ----------------


class Brightness:
    """A face descriptor with a known answer: a face's mean brightness times 10 in the first of
    128 dimensions, so that the distance of two faces is 10 × the difference of their means."""

    def __call__(self, images: torch.Tensor):
        from recourse.instruments.identity import Descriptors

        vectors = np.zeros((len(images), 128))
        vectors[:, 0] = 10 * images.double().mean(dim=(1, 2, 3)).numpy()
        return Descriptors(vectors, np.ones(len(images), bool))


def test_identity_is_the_descriptor_distance_of_each_recourse_to_the_face(teacher, image, tiny_generator):
    result = audit_image(image, variant="ptq-int8", attribute="Smiling", target=1, settings=TINY, teacher=teacher,
                         student=same_as(teacher), generator=tiny_generator, identity=Brightness(), strong_judge=None)
    expected = 10 * abs(float(result.teacher_counterfactual.double().mean()) - float(image.double().mean()))
    identity = result.identity
    assert identity.teacher_distance == pytest.approx(expected) == identity.student_distance  # same recourse
    assert identity.kept("teacher") == (expected <= 0.6) and identity.detected == (True, True, True)
    record = json.loads(json.dumps(audit_record(result), allow_nan=False))
    assert record["identity"]["teacher_distance"] == pytest.approx(expected, abs=1e-4)
    assert record["missing"] == {"strong_judge": "not used"} and record["strong_judge"] is None
    assert "seconds" in record and "identity" in record["seconds"]


@pytest.mark.parametrize("distances, cards, sentence", [
    ((0.0, 0.31), ("kept ✓ 0.00", "kept ✓ 0.31"), ""),
    ((0.31, 0.74), ("kept ✓ 0.31", "changed ✗ 0.74"), "no longer recognises the person in the compressed recourse "
                                                       "(0.74)"),
    ((0.6, 0.61), ("kept ✓ 0.60", "changed ✗ 0.61"), "(0.61)"),  # 0.6 itself is the same person, as in FVA
])
def test_identity_cards_and_sentence_on_known_distances(zero_cost_audit, distances, cards, sentence):
    from dataclasses import replace

    identity = IdentityView(*distances, detected=(True, True, False))
    shown = replace(zero_cost_audit, identity=identity, missing={})
    rendered = value_cards(shown)
    assert all(card in rendered for card in cards)
    valid = image_recourse(True, True, True, 0.1, 0.1, 0.5)
    said = identity_verdict(identity, valid)
    assert sentence in said and (said == "") == (sentence == "")
    assert "dlib distance to x" in evidence_table(shown) and f"{distances[1]:.3f}" in evidence_table(shown)


def test_a_missing_strong_judge_and_identity_are_said_not_hidden(teacher, image, tiny_generator, monkeypatch, tmp_path):
    import recourse.locations
    from recourse.render.text import audit_line

    monkeypatch.setattr(recourse.locations, "strong_judge_dir", lambda: tmp_path / "strong-judge")  # not trained
    result = audit_image(image, variant="ptq-int8", attribute="Smiling", target=1, settings=TINY, teacher=teacher,
                         student=same_as(teacher), generator=tiny_generator, judge=teacher)
    assert result.strong_judge is None and result.identity is None
    assert result.missing["strong_judge"] == "not trained"
    assert "16-px faces" in result.missing["identity"]  # dlib is calibrated at 64 px; tiny models see 16
    assert value_cards(result).count(">not trained<") == 2
    assert "not trained" in evidence_table(result) and "16-px faces" in evidence_table(result)
    line = audit_line(result)
    assert "strong judge: not trained" in line and "identity kept in x'_f / x'_g: not measured" in line

    strong = audit_image(image, variant="ptq-int8", attribute="Smiling", target=1, settings=TINY, teacher=teacher,
                         student=same_as(teacher), generator=tiny_generator, judge=teacher, strong_judge=Constant(),
                         identity=Brightness())
    assert torch.equal(strong.teacher_counterfactual, result.teacher_counterfactual)  # neither ever guides
    assert strong.strong_judge.sees_teacher_change is False and strong.missing == {}
    assert "strong judge on x&#x27;_f" in value_cards(strong) and "stronger judge, radius 3" in evidence_table(strong)
    assert "strong judge: no / no" in audit_line(strong)


def test_a_strong_judge_still_in_training_is_said_so_and_a_finished_one_is_used(teacher, image, tiny_generator,
                                                                               monkeypatch, tmp_path):
    """Its training saves the best epoch so far after every epoch: an early epoch's checkpoint
    is not the judge fixed in advance, so the audit names it instead of using it."""
    import recourse.locations
    from recourse import models
    from recourse.checkpoints import save_classifier

    folder = tmp_path / "strong-judge"
    monkeypatch.setattr(recourse.locations, "strong_judge_dir", lambda: folder)
    monkeypatch.setattr(models, "strong_judge_dir", lambda: folder)
    arguments = dict(variant="ptq-int8", attribute="Smiling", target=1, settings=TINY, teacher=teacher,
                     student=same_as(teacher), generator=tiny_generator)
    history = [{"epoch": e, "train_loss": 0.5, "val_accuracy": 80.0} for e in (1, 2, 3)]
    save_classifier(tiny_classifier(), folder, {"train_config": {"epochs": 10}, "history": history[:1]})
    models.load_strong_judge.cache_clear()
    early = audit_image(image, **arguments, judge=teacher)
    assert early.strong_judge is None and early.missing["strong_judge"] == "in training (epoch 1 of 10)"
    assert value_cards(early).count(">in training (epoch 1 of 10)<") == 2

    save_classifier(tiny_classifier(), folder, {"train_config": {"epochs": 3}, "history": history})
    models.load_strong_judge.cache_clear()
    try:
        done = audit_image(image, **arguments, judge=teacher)
    finally:
        models.load_strong_judge.cache_clear()  # the next test must not see this tiny judge
    assert done.strong_judge is not None and "strong_judge" not in done.missing, done.missing


# --- the committed models ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.requires("committed_variants")
def test_committed_models_audit_a_gallery_face():
    from PIL import Image

    from recourse import models

    image = torch.from_numpy(np.array(Image.open(GALLERY_FACE).convert("RGB"))).permute(2, 0, 1).float() / 255
    fast = AuditSettings(CounterfactualConfig(steps=10, finish_steps=20))
    result = audit_image(image, variant="ptq-int8", attribute="Smiling", settings=fast)
    teacher, student = models.load_teacher(), models.load_student("ptq-int8")
    assert models.load_teacher() is teacher  # loaded once, shared
    with torch.no_grad():
        teacher_after = float(torch.sigmoid(teacher(result.teacher_counterfactual[None]))[0, SMILING])
        student_before = torch.sigmoid(student.decider(image[None]))[0]
    assert result.recourse.teacher_valid == ((teacher_after >= 0.5) == bool(result.predictions.target))
    torch.testing.assert_close(result.predictions.student_probabilities, student_before)
    assert result.student_model == student.kind == "integer"
    with torch.no_grad():  # the committed judge's view, recomputed
        judge_after = torch.sigmoid(models.load_judge()(result.student_counterfactual[None]))[0, SMILING]
    assert result.judge is not None and result.judge.on_student_counterfactual == pytest.approx(float(judge_after))
    # dlib on a 64-px face: a distance for each recourse, or (without dlib) the reason
    if result.identity is not None:
        assert 0 <= result.identity.teacher_distance < 2 and "identity" not in result.missing
    else:
        assert "not installed" in result.missing["identity"]
    assert (COMMITTED / "variants" / "ptq-int8" / "config.json").is_file()


# --- the noise floor (issue 24): no ratio or similarity of edits that are noise --------------


@pytest.mark.parametrize("values, face_logit, expected, absent", [
    # p = 0.504: both edits near 0; was "a 2043% larger change"
    ((True, True, True, 0.00001, 0.0003, 0.1), 0.016, "already sits on the full-precision model's decision "
                                                       "boundary (logit +0.016, p 0.504)", "%"),
    # far from the boundary (logit 2): both edits under the floor, said as such, not as the boundary
    ((True, False, True, 0.0002, 0.0005, -0.5), 2.0, "Both recourses change the face by less than the noise floor",
     "%"),
    ((True, True, True, 0.03, 0.0002, 0.0), 2.0, "changes the face by only 0.0002 on average, below the 0.002 "
                                                 "noise floor", "%"),
    ((True, True, True, 0.03, 0.015, 0.8), 2.0, "a 50% smaller change", None),  # above the floor: as before
])
def test_the_verdict_quotes_no_ratio_below_the_noise_floor(values, face_logit, expected, absent):
    from recourse.audit.image_noise_floor import compared

    said = verdict(image_recourse(*values), None, "Smiling", face_logit)
    assert expected in said, said
    if absent is not None:
        assert absent not in said and not compared(image_recourse(*values), face_logit)


@pytest.mark.slow
@pytest.mark.requires("committed_variants")
def test_the_near_boundary_gallery_face_is_said_to_be_on_the_boundary():
    """A face sampled from the generator (seed 21, once in the gallery, kept under tests/data):
    the full-precision model sees Smiling at p = 0.504."""
    from PIL import Image

    from recourse.render.audit_html import value_cards

    face = Path(__file__).parent / "data" / "generated-seed-21.png"
    image = torch.from_numpy(np.array(Image.open(face).convert("RGB"))).permute(2, 0, 1).float() / 255
    # the minimal recourse (margin 0, no stops): both edits stop where the decision flips
    result = audit_image(image, variant="ptq-int8", attribute="Smiling", settings=AuditSettings())
    assert abs(result.face_logit) < 0.1
    assert "already sits on the full-precision model's decision boundary" in result.verdict
    assert "%" not in result.verdict.split(". The robust judge")[0]
    floor = result.to_dict()["recourse"]["noise_floor"]
    assert floor["on_boundary"] and not floor["compared"]
    assert value_cards(result).count("not compared: on the boundary") == 2  # CRG_i and DirSim_i


def test_a_quantized_logit_of_exactly_0_is_shown_with_its_decision(zero_cost_audit):
    """p = 0.500 with a ✗ read as a contradiction: the decision rule calls logit 0 a 1."""
    from dataclasses import replace

    from recourse.render.audit_html import decided

    assert (decided(0.5, 2), decided(0.4999, 3), decided(0.7, 2)) == ("0.50→1", "0.500→0", "0.70")
    on_the_grid = replace(zero_cost_audit, student_logits={"original": 0.0, "teacher_counterfactual": 0.0,
                                                           "student_counterfactual": -0.25})
    table = evidence_table(on_the_grid)
    assert table.count("logit 0 → decides 1") == 2 and "logit -0.25 → decides 0" in table
