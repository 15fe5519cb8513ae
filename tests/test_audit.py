import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import recourse.audit as audit
from recourse.attribution import AttributionConfig
from recourse.audit import AuditSettings, Models, audit_image, audit_steps, verdict
from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.generation import CounterfactualConfig, LatentDenoiser, LatentFaceGenerator, default_scheduler, fit_pca_autoencoder
from recourse.data import ATTRIBUTES
from recourse.metrics import ImageRecourse

SMILING = ATTRIBUTES.index("Smiling")
TINY = AuditSettings(CounterfactualConfig(steps=10, noise_level=0.5, finish_steps=5),
                     AttributionConfig(ig_steps=4, occlusion_window=4, occlusion_stride=4))


class NegateOne(nn.Module):
    """The teacher with one attribute's logit negated: a student that disagrees on exactly it."""

    def __init__(self, teacher: nn.Module, index: int) -> None:
        super().__init__()
        self.teacher, self.index = teacher, index

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        logits = self.teacher(images).clone()
        logits[:, self.index] = -logits[:, self.index]
        return logits


@pytest.fixture(scope="module")
def tiny() -> tuple[AttributeClassifier, LatentFaceGenerator, torch.Tensor]:
    torch.manual_seed(0)
    teacher = AttributeClassifier(ClassifierConfig(widths=(4, 8), resolution=16, dropout=0.0)).eval()
    faces = (np.random.default_rng(0).random((64, 3, 16, 16)) * 255).astype(np.uint8)
    generator = LatentFaceGenerator(fit_pca_autoencoder(faces, latent_dim=8), LatentDenoiser(latent_dim=8, width=16, depth=1),
                                    default_scheduler())
    image = torch.rand(3, 16, 16, generator=torch.Generator().manual_seed(3))
    return teacher, generator, image


def test_same_model_as_student_gives_identical_recourse(tiny):
    teacher, generator, image = tiny
    models = Models(teacher, teacher, teacher, "ptq-int8")
    result = audit_image(image, "ptq-int8", "Smiling", None, TINY, models, generator)
    # same seed and same guiding model: the same counterfactual
    torch.testing.assert_close(result.teacher_counterfactual, result.student_counterfactual, rtol=0, atol=0)
    torch.testing.assert_close(result.teacher_difference, result.teacher_counterfactual - image)
    assert result.predictions.diverging == ()
    teacher_decision = int(torch.sigmoid(teacher(image[None]))[0, SMILING] >= 0.5)
    assert result.predictions.target == 1 - teacher_decision
    r = result.recourse
    assert r.teacher_valid == r.student_accepts_teacher == r.student_valid
    if r.teacher_valid:
        assert r.crg == pytest.approx(0.0) and r.dirsim == pytest.approx(100.0)
    assert all(a.spearman == pytest.approx(1.0) and a.top_iou == 1.0 for a in result.attributions)
    assert [a.method for a in result.attributions] == ["integrated-gradients", "occlusion"]


def test_a_student_disagreeing_on_one_attribute(tiny):
    teacher, generator, image = tiny
    student = NegateOne(teacher, SMILING).eval()
    result = audit_image(image, "ptq-int8", "Smiling", 1, TINY, Models(teacher, student, student, "ptq-int8"), generator)
    p_f, p_g = result.predictions.teacher_probabilities, result.predictions.student_probabilities
    torch.testing.assert_close(p_g[SMILING], 1 - p_f[SMILING])
    assert result.predictions.diverging == ("Smiling",)
    # the student's decisions on both counterfactuals, recomputed by hand
    with torch.no_grad():
        on_teacher = float(torch.sigmoid(student(result.teacher_counterfactual[None]))[0, SMILING])
        on_student = float(torch.sigmoid(student(result.student_counterfactual[None]))[0, SMILING])
    assert result.recourse.student_accepts_teacher == (on_teacher >= 0.5)
    assert result.recourse.student_valid == (on_student >= 0.5)
    assert result.probabilities_after["student_on_teacher_counterfactual"] == pytest.approx(on_teacher)
    # negated logits: every attribution of the student is the teacher's, negated
    gradient = result.attributions[0]
    torch.testing.assert_close(gradient.student, -gradient.teacher, rtol=1e-4, atol=1e-6)
    assert gradient.spearman == pytest.approx(-1.0)


def test_predictions_come_first_and_the_result_serialises(tiny):
    teacher, generator, image = tiny
    steps = list(audit_steps(image, "ptq-int4", "Young", 0, TINY, Models(teacher, teacher, teacher, "ptq-int4"), generator))
    assert steps[0].stage == "predictions" and steps[0].result is None and steps[0].predictions is not None
    assert steps[-1].result is not None and [s.fraction for s in steps] == sorted(s.fraction for s in steps)
    record = json.loads(json.dumps(steps[-1].result.to_dict()))
    assert record["variant"] == "ptq-int4" and record["attribute"] == "Young" and record["target"] == 0
    assert len(record["teacher_probabilities"]) == 40 and record["seed"] == TINY.counterfactual.seed
    assert record["settings"]["counterfactual"]["steps"] == 10 and record["versions"]["captum"]
    assert record["images"]["aligned"].startswith("data:image/png;base64,")
    assert {"teacher_valid", "student_accepts_teacher", "student_valid", "crg", "dirsim"} <= set(record["recourse"])


def test_the_student_kind_is_reported(tiny):
    teacher, generator, image = tiny
    twin, integer = copy.deepcopy(teacher), copy.deepcopy(teacher)
    assert Models(teacher, twin, twin, "ptq-int4").student_kind == "twin"
    result = audit_image(image, "ptq-int8", "Smiling", None, TINY, Models(teacher, twin, integer, "ptq-int8"), generator)
    assert result.student_model == "integer" and result.attributions[1].student_model == "integer"
    assert result.attributions[0].student_model == "twin"


@pytest.mark.parametrize("kwargs, message", [
    ({"attribute": "Smile"}, "unknown attribute"),
    ({"target": 2}, "target must be 0, 1 or None"),
    ({"image": torch.rand(3, 8, 8)}, "framed image must be"),
    ({"image": torch.rand(3, 16, 16) * 2}, r"values in \[0, 1\]"),
    ({"image": b"not an image"}, "not a readable image"),
])
def test_bad_inputs_raise_clear_errors(tiny, kwargs, message):
    teacher, generator, image = tiny
    arguments = {"image": image, "variant": "ptq-int8", "attribute": "Smiling", "target": None, "settings": TINY,
                 "models": Models(teacher, teacher, teacher, "ptq-int8"), "generator": generator, **kwargs}
    with pytest.raises(ValueError, match=message):
        audit_image(**arguments)


def test_unknown_and_missing_variants(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="unknown variant 'nope'"):
        audit.load_student("nope")
    monkeypatch.setattr(audit, "VARIANTS_DIR", tmp_path / "variants")
    audit.load_student.cache_clear()
    try:
        with pytest.raises(audit.VariantNotFoundError, match="is missing. Make it with python -m recourse quantize"):
            audit.load_student("cfq-qat")
    finally:
        audit.load_student.cache_clear()


@pytest.mark.parametrize("values, expected", [
    ((False, False, False, 0.1, 0.1, None, None), "found no valid recourse"),
    ((True, False, True, 0.1, 0.15, 0.5, 80.0), "rejects the recourse the full-precision model accepts"),
    ((True, True, True, 0.1, 0.05, 0.5, 80.0), "accepts the recourse the full-precision model accepts. Its own recourse is a 50% smaller"),
    ((True, False, False, 0.1, 0.1, None, None), "finds no valid recourse"),
])
def test_verdict_in_plain_words(values, expected):
    assert expected in verdict(ImageRecourse(*values, reason=""))


GALLERY_FACE = Path(__file__).resolve().parents[1] / "assets" / "gallery" / "grace-hopper.png"


@pytest.mark.skipif(not (audit.VARIANTS_DIR / "ptq-int8" / "config.json").is_file(), reason="no ptq-int8 variant checkpoint")
def test_committed_models_audit_a_gallery_face():
    from PIL import Image

    image = torch.from_numpy(np.array(Image.open(GALLERY_FACE).convert("RGB"))).permute(2, 0, 1).float() / 255
    result = audit_image(image, "ptq-int8", "Smiling")
    models = audit.load_models("ptq-int8")
    with torch.no_grad():
        teacher_after = float(torch.sigmoid(models.teacher(result.teacher_counterfactual[None]))[0, SMILING])
        student_before = torch.sigmoid(models.student(image[None]))[0]
    assert result.recourse.teacher_valid == ((teacher_after >= 0.5) == bool(result.predictions.target))
    torch.testing.assert_close(result.predictions.student_probabilities, student_before)
    assert result.student_model == ("integer" if models.student is not models.student_twin else "twin")
    assert audit.load_models("ptq-int8").teacher is models.teacher  # loaded once, shared


def test_scan_folder_ranks_and_a_listed_image_reproduces_its_row(tiny, hq_folder):
    teacher, generator, _ = tiny
    student = NegateOne(teacher, SMILING).eval()
    models = Models(teacher, student, student, "ptq-int8")
    root, _ = hq_folder  # test split: ids 27000, 27001, 29999
    steps = list(audit.scan_folder(root, "ptq-int8", "Smiling", count=3, split="test", settings=TINY, models=models,
                                   generator=generator))
    assert [(done, total) for done, total, _ in steps] == [(1, 3), (2, 3), (3, 3)]
    cases = steps[-1][2]
    assert sorted(c.filename for c in cases) == ["27000.jpg", "27001.jpg", "29999.jpg"]
    scores = [c.divergence for c in cases if c.divergence is not None]
    assert scores == sorted(scores, reverse=True)
    for case in cases:
        assert case.divergence == audit.divergence_score(case.recourse)
        single = audit_image(case.image, "ptq-int8", "Smiling", None, TINY, models, generator)
        assert single.predictions.target == case.target and single.recourse == case.recourse


@pytest.mark.parametrize("values, expected", [
    ((False, False, False, 0.1, 0.1, None, None), None),
    ((True, True, True, 0.1, 0.1, 0.0, 100.0), 0.0),
    ((True, False, True, 0.1, 0.2, 1.0, 50.0), 1.25),
    ((True, False, False, 0.1, 0.2, None, None), 2.0),
])
def test_divergence_score_hand_computed(values, expected):
    assert audit.divergence_score(ImageRecourse(*values, reason="")) == expected


def test_scan_folder_rejects_a_folder_that_is_not_celeba(tiny, tmp_path):
    teacher, generator, _ = tiny
    with pytest.raises(ValueError, match="not a CelebA folder"):
        next(audit.scan_folder(tmp_path, "ptq-int8", "Smiling", models=Models(teacher, teacher, teacher, "ptq-int8"),
                               generator=generator))


@pytest.mark.parametrize("arguments, message", [
    (["--variant", "nope", "--attribute", "Smiling"], "unknown variant 'nope'"),
    (["--variant", "ptq-int8", "--attribute", "Smile"], "unknown attribute 'Smile'"),
])
def test_cli_audit_errors_exit_2_with_a_message(tmp_path, capsys, arguments, message):
    from recourse.cli import main

    assert main(["audit", str(GALLERY_FACE), *arguments]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(not (audit.VARIANTS_DIR / "ptq-int8" / "config.json").is_file(), reason="no ptq-int8 variant checkpoint")
@pytest.mark.parametrize("content, message", [
    (b"not an image", "not a readable image"), (None, "no such file"),
])
def test_cli_audit_bad_image_exits_2(tmp_path, capsys, content, message):
    from recourse.cli import main

    path = tmp_path / "photo.jpg"
    if content is not None:
        path.write_bytes(content)
    assert main(["audit", str(path), "--variant", "ptq-int8", "--attribute", "Smiling"]) == 2
    assert message in capsys.readouterr().err


def test_a_variant_folder_that_does_not_exist_is_named_with_the_command_that_makes_it(monkeypatch, tmp_path):
    from recourse import audit as audit_module

    monkeypatch.setattr(audit_module, "VARIANTS_DIR", tmp_path)
    audit_module.load_student.cache_clear()
    try:
        with pytest.raises(audit_module.VariantNotFoundError,
                           match="variant 'kd-quant' is not available.*python -m recourse quantize --method kd-quant"):
            audit_module.load_student("kd-quant")
        with pytest.raises(ValueError, match="unknown variant 'int3'"):
            audit_module.load_student("int3")
    finally:
        audit_module.load_student.cache_clear()
