"""The Python API (``import recourse``, recourse/api.py): one face audited by the API, by
``recourse audit`` and by the app gives one verdict and the same numbers; pairs of one's own tiny
models; the errors a notebook meets; ``import recourse`` stays light."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import recourse
from recourse.attribution import AttributionConfig
from recourse.audit.paired import Student
from recourse.audit.result import AuditSettings
from recourse.generation import CounterfactualConfig
from tests.conftest import ROOT, BrightnessModel, build_home, still_generator, tiny_classifier

FACE = ROOT / "assets" / "examples" / "grace-hopper.jpg"  # a public-domain photo shipped with the repo
# the walk: its edits flip the tiny generator's brightness decisions (as tests/test_audit.py)
TINY = AuditSettings(CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, finish_steps=5),
                     AttributionConfig(ig_steps=4, occlusion_window=4, occlusion_stride=4))


def no_progress(*args, **kwargs) -> None:
    """Stands in for gradio's progress bar outside a request."""


def test_import_recourse_is_light_and_every_public_name_resolves():
    code = ("import sys, recourse; recourse.__all__; "
            "print(sorted(m for m in ('torch', 'diffusers', 'captum', 'cv2', 'gradio') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert all(getattr(recourse, name) is not None for name in recourse.__all__)
    assert set(recourse.__all__) <= set(dir(recourse))
    with pytest.raises(AttributeError, match="no attribute 'audit_face'"):
        recourse.audit_face  # noqa: B018


def test_audit_image_defaults_to_the_products_settings():
    import inspect

    from recourse.audit.pipeline import audit_image, audit_steps

    for function in (audit_image, audit_steps):
        parameters = list(inspect.signature(function).parameters.values())
        assert parameters[0].name == "image"
        assert all(p.kind is p.KEYWORD_ONLY for p in parameters[1:]), function.__name__
        assert inspect.signature(function).parameters["settings"].default is None
    assert recourse.Auditor.__call__.__kwdefaults__ == {"target": None, "progress": None}


# --- one face: the API, the command line and the app ------------------------------------------


@pytest.mark.slow
def test_the_api_the_cli_and_the_app_give_one_audit(project_home, tmp_path):
    """On a tiny home, at everyone's default settings: the same verdict and the same values."""
    import app
    from recourse.cli import main
    from recourse.ui.settings import DEFAULTS, picture_stop

    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    result = recourse.Auditor(recourse.load_pair("ptq-int8"))(FACE, attribute="Smiling")
    api = json.loads(result.save_json(tmp_path / "api.json", source=str(FACE)).read_text())

    cli_file = tmp_path / "cli.json"
    assert main(["audit", str(FACE), "--variant", "ptq-int8", "--attribute", "Smiling", "--json", str(cli_file)]) == 0
    cli = json.loads(cli_file.read_text())

    # the app's upload with every control at its default (the margin slider at Smiling's stop in this home)
    shown = list(app.run_audit(str(FACE), None, "ptq-int8", "Smiling", next(iter(app.TARGETS)), DEFAULTS.finish_steps,
                               DEFAULTS.cone_degrees, DEFAULTS.seed, picture_stop("Smiling"), DEFAULTS.method,
                               DEFAULTS.edit_steps, DEFAULTS.sigma, progress=no_progress))[-1]
    ui = shown[app.raw]
    exported = json.loads(Path(shown[app.export_json]).read_text())

    assert api["verdict"] == cli["verdict"] == ui["verdict"] == result.verdict
    assert api["settings"]["stops"] is not None  # the product's stops, not the bare minimal recourse
    for key in (set(api) - {"seconds", "image", "command"}):
        assert api[key] == cli[key], key
        assert key == "images" or api[key] == ui[key], key
        assert api[key] == exported[key], key
    assert api["image"] == cli["image"] == str(FACE)


# --- pairs of one's own models -----------------------------------------------------------------


def calibration_images() -> torch.Tensor:
    return torch.rand(8, 3, 16, 16, generator=torch.Generator().manual_seed(0))


def test_load_pair_takes_ones_own_models():
    teacher, student = tiny_classifier(seed=0), tiny_classifier(seed=1)
    pair = recourse.load_pair(teacher=teacher, student=student)
    assert isinstance(pair, recourse.Pair) and pair.teacher is teacher and pair.name == "own-model"
    assert pair.student.twin is student and pair.student.decider is student and pair.student.kind == "twin"

    quantized = recourse.quantize(teacher, "ptq-int8", calibration_images())
    assert isinstance(quantized, recourse.QuantizedModel) and quantized.config.method == "ptq-int8"
    pair = recourse.load_pair(teacher=teacher, student=quantized)
    assert pair.name == pair.student.name == "own-ptq-int8" and pair.student.twin is quantized.twin
    assert pair.student.decider is quantized.decider

    given = Student("mine", twin=student, decider=student)
    assert recourse.load_pair(teacher=teacher, student=given).student is not None
    assert recourse.load_pair(teacher=teacher, student=given, name="renamed").student.name == "renamed"


@pytest.mark.parametrize("arguments, error, message", [
    ({"variant": "int3-magic"}, ValueError, "unknown variant 'int3-magic'; expected one of"),
    ({}, ValueError, "needs a committed variant's name"),
    ({"student": "a quantized model"}, TypeError, "student must be a torch nn.Module.*got str"),
    ({"student": np.zeros(3)}, TypeError, "got ndarray"),
    ({"teacher": lambda x: x, "student": tiny_classifier()}, TypeError, "teacher must be a torch nn.Module"),
    ({"student": tiny_classifier().train()}, ValueError, r"in training mode: call \.eval\(\)"),
    ({"variant": "ptq-int8", "student": tiny_classifier()}, ValueError, "not both"),
    ({"student": tiny_classifier(), "name": ""}, ValueError, "name must be a non-empty string"),
])
def test_load_pair_errors_are_clear(arguments, error, message):
    arguments = {"teacher": tiny_classifier(), **arguments} if "student" in arguments else arguments
    variant = arguments.pop("variant", None)
    with pytest.raises(error, match=message):
        recourse.load_pair(variant, **arguments)


def test_quantize_refuses_what_is_not_a_method():
    with pytest.raises(ValueError, match="unknown method 'int3'"):
        recourse.quantize(tiny_classifier(), "int3", calibration_images())
    with pytest.raises(TypeError, match="config must be a compression config"):
        recourse.quantize(tiny_classifier(), 8, calibration_images())


class SmilingOnly(BrightnessModel):
    """An own model that predicts one attribute (as an auditor's card may say)."""

    supported_attributes = ("Smiling",)


def test_an_auditor_refuses_a_missing_or_unpredicted_attribute():
    teacher = BrightnessModel().eval()
    auditor = recourse.Auditor(recourse.load_pair(teacher=teacher, student=SmilingOnly().eval()), TINY)
    face = torch.full((3, 16, 16), 0.3)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'attribute'"):
        auditor(face)
    with pytest.raises(TypeError, match="positional"):
        auditor(face, "Smiling")
    with pytest.raises(ValueError, match="unknown attribute 'Smile'"):
        auditor(face, attribute="Smile")
    with pytest.raises(ValueError, match="'Young' is not predicted by both models of own-model; they predict Smiling"):
        auditor(face, attribute="Young")
    with pytest.raises(TypeError, match="pair must be a recourse.Pair"):
        recourse.Auditor(teacher)


def test_an_auditor_of_ones_own_models_saves_the_apps_evidence(project_home, tmp_path, tiny_generator):
    """A seeded tiny pair: the result is audit_image's, and its files are the app's export."""
    from recourse.audit.pipeline import audit_image
    from recourse.render.audit_html import audit_record

    teacher = BrightnessModel().eval()
    pair = recourse.load_pair(teacher=teacher, student=teacher, name="same")
    auditor = recourse.Auditor(pair, TINY, generator=tiny_generator)
    face = torch.rand(3, 16, 16, generator=torch.Generator().manual_seed(3)) * 0.6
    steps = []
    result = auditor(face, attribute="Smiling", progress=steps.append)
    assert steps[0].stage == "predictions" and steps[-1].result is result
    assert result.recourse.teacher_valid and result.recourse.crg == 0.0  # its own student: the same recourse
    again = audit_image(face, variant="same", attribute="Smiling", settings=TINY, teacher=teacher,
                        student=pair.student, generator=tiny_generator)
    assert result.recourse == again.recourse and result.verdict == again.verdict

    saved = json.loads(result.save_json(tmp_path / "out" / "audit.json").read_text())
    assert saved == json.loads(json.dumps(audit_record(result)))
    page = result.save_html(tmp_path / "audit.html", source="a test face").read_text()
    assert "Recourse audit" in page and "a test face" in page and "same" in page


def test_scan_folder_runs_the_scan_with_the_products_settings(monkeypatch, tmp_path):
    import recourse.api

    plans = []
    monkeypatch.setattr(recourse.api, "run_scan", lambda plan, progress, **models: plans.append((plan, models)))
    teacher = tiny_classifier()
    pair = recourse.load_pair(teacher=teacher, student=teacher, name="mine")
    recourse.scan_folder(tmp_path, variant=pair, attribute="Smiling", top=3)
    plan, models = plans[0]
    assert plan.settings == recourse.product_settings() and plan.variant == "mine" and plan.top == 3
    assert models == {"teacher": teacher, "student": pair.student}
    with pytest.raises(ValueError, match="not a folder"):
        recourse.scan_folder(tmp_path / "nowhere", variant=pair, attribute="Smiling")
    with pytest.raises(ValueError, match="top and count must be at least 1"):
        recourse.scan_folder(tmp_path, variant=pair, attribute="Smiling", top=0)
    with pytest.raises(ValueError, match="unknown attribute 'Smile'"):
        recourse.scan_folder(tmp_path, variant=pair, attribute="Smile")
