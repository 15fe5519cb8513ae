"""The app's "Your models" (local mode only): two model cards audited in place of a committed
variant, offering only the attributes both predict; and a public app, which has no such control
and refuses card paths whatever a caller sends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from PIL import Image

import app  # local mode: this process has no RECOURSE_PUBLIC
from tests.conftest import ROOT
from tests.foreign_models import DIFFERENT_ATTRIBUTES, save_different

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def no_progress(*args, **kwargs) -> None:
    """Stands in for gradio's progress bar outside a request."""


# The cards' path is what these tests check, not the edit: two optimiser steps keep them quick.
FEW_EDIT_STEPS = 2


def gallery_pixels() -> np.ndarray:
    return np.array(Image.open(app.gallery_faces()[0][0]).convert("RGB"))


def audit(variant_card, model_card="", attribute="Smiling") -> dict:
    steps = list(app.run_audit(None, gallery_pixels(), "ptq-int8", attribute, next(iter(app.TARGETS)), 20, 40, 0,
                               0.0, edit_steps=FEW_EDIT_STEPS, model_card=model_card, variant_card=variant_card,
                               progress=no_progress))
    return steps[-1]


@pytest.mark.slow
@pytest.mark.parametrize("variant_format", ["torch-export", "onnx"])
def test_your_models_are_audited_and_offer_only_their_attributes(tmp_path: Path, variant_format: str) -> None:
    assert not app.PUBLIC
    model = save_different(tmp_path / "fp", "safetensors")
    variant = save_different(tmp_path / "q", variant_format)
    dropdown, scan_dropdown, status = app.use_cards(str(model), str(variant), "Eyeglasses", "Young")
    offered = [value for _, value in dropdown.choices]
    assert offered == sorted(DIFFERENT_ATTRIBUTES, key=app.ATTRIBUTES.index)  # CelebA's order: Male, Smiling, Young
    assert dropdown.value == offered[0] and "different" in status
    assert [value for _, value in scan_dropdown.choices] == offered and scan_dropdown.value == "Young"
    final = audit(str(variant), str(model))
    record = json.loads(Path(final[app.export_json]).read_text())
    assert record["variant"] == "different" and record["attribute"] == "Smiling"
    assert final[app.verdict].startswith("### ")
    # only what both predict, everywhere the 40 were listed: no p = 0.5 for an attribute neither model predicts
    both = sorted(DIFFERENT_ATTRIBUTES, key=app.ATTRIBUTES.index)
    for values in (record, final[app.raw]):
        assert values["predicted_attributes"] == both
        assert list(values["teacher_probabilities"]) == list(values["student_probabilities"]) == both
        assert set(values["diverging_attributes"]) <= set(both)
    not_predicted = [name.replace("_", " ") for name in app.ATTRIBUTES if name not in both]
    chart = final[app.chart]
    assert "Only the 3 attributes both models predict are shown" in chart and chart.count("<tr") == 1 + 3
    assert not any(f">{name}<" in chart for name in not_predicted)
    report = Path(final[app.export_html]).read_text()
    # the settings name attributes of their own (the edit's residual and luminance lists): not predictions
    from recourse.generation import CounterfactualConfig

    named = set(CounterfactualConfig().space_drop_residual) | set(CounterfactualConfig().space_luminance_only)
    assert not any(f"&quot;{name}&quot;" in report for name in app.ATTRIBUTES if name not in set(both) | named)
    assert all(f"&quot;{name}&quot;" in report for name in both)  # the check can see a name in the report


@pytest.mark.slow
def test_your_models_against_the_committed_classifier_show_only_the_variants_attributes(tmp_path: Path) -> None:
    variant = save_different(tmp_path / "q", "torch-export")
    final = audit(str(variant))
    record = json.loads(Path(final[app.export_json]).read_text())
    both = sorted(DIFFERENT_ATTRIBUTES, key=app.ATTRIBUTES.index)
    # the committed classifier predicts all 40, the variant 3: its 37 silent places (p = 0.5) are no decisions
    assert list(record["teacher_probabilities"]) == both and set(record["diverging_attributes"]) <= set(both)
    assert "Only the 3 attributes" in final[app.chart]


def scan(variant_card, model_card="", attribute="Smiling", count=2):
    return list(app.find_failures("gallery faces", "", None, "test", count, None, "ptq-int8", attribute, 20, 40, 0,
                                  0.0, edit_steps=FEW_EDIT_STEPS, model_card=model_card, variant_card=variant_card,
                                  progress=no_progress))


@pytest.mark.slow
@pytest.mark.parametrize("variant_format", ["torch-export", "onnx"])
def test_find_failures_ranks_your_models(tmp_path: Path, variant_format: str) -> None:
    model = save_different(tmp_path / "fp", "safetensors")
    variant = save_different(tmp_path / "q", variant_format)
    rows, thumbnails, found, status = scan(str(variant), str(model))[-1]
    assert [row[0] for row in rows] == [1, 2] and len(thumbnails) == 2
    assert "2 of 2 faces ranked" in status and "**different**" in status and "Your models" in status
    assert found["variant"] == "ptq-int8" and found["attribute"] == "Smiling"  # the audit reads the same cards
    if variant_format == "onnx":  # a black box: its cost is said
        assert "is a black box:" in status and "forward passes" in status


@pytest.mark.slow
def test_find_failures_refuses_what_your_models_do_not_predict_and_bad_cards(tmp_path: Path) -> None:
    variant = save_different(tmp_path / "q", "onnx")
    with pytest.raises(gr.Error, match="does not predict Eyeglasses"):
        scan(str(variant), attribute="Eyeglasses")
    with pytest.raises(gr.Error, match="Your models: .*"):
        scan(str(tmp_path / "missing"))
    with pytest.raises(gr.Error, match="Give the compressed model's card too"):
        scan("", str(variant))


@pytest.mark.slow
def test_an_attribute_your_models_do_not_predict_is_refused(tmp_path: Path) -> None:
    variant = save_different(tmp_path / "q", "onnx")
    with pytest.raises(gr.Error, match="does not predict Eyeglasses"):
        audit(str(variant), attribute="Eyeglasses")


def test_bad_cards_get_a_clear_message_and_empty_boxes_mean_the_committed_models(tmp_path: Path) -> None:
    with pytest.raises(gr.Error, match="Your models: .*"):
        app.card_pair("", str(tmp_path / "missing"))
    with pytest.raises(gr.Error, match="Give the compressed model's card too"):
        app.card_pair(str(save_different(tmp_path / "fp", "onnx")), "")
    dropdown, scan_dropdown, status = app.use_cards("", "", "Smiling")
    assert len(dropdown.choices) == len(scan_dropdown.choices) == 40 and status == "Auditing the committed models."


PUBLIC_CHECK = """
import json, sys
import gradio as gr
import app
assert app.PUBLIC
ids = {getattr(block, "elem_id", None) for block in app.demo.blocks.values()}
labels = [str(getattr(block, "label", "")) for block in app.demo.blocks.values()]
audit = next(fn for fn in app.demo.fns.values() if fn.api_name == "audit")
scan = next(fn for fn in app.demo.fns.values() if fn.api_name == "find_failures")
refused = []
for call in (lambda: app.card_pair("", sys.argv[1]),
             lambda: list(app.run_audit(None, None, "ptq-int8", "Smiling", next(iter(app.TARGETS)), 20, 40, 0, 0.0,
                                        model_card="", variant_card=sys.argv[1], progress=lambda *a, **k: None)),
             lambda: app.use_cards(sys.argv[1], sys.argv[1], "Smiling"),
             lambda: list(app.find_failures("gallery faces", "", None, "test", 1, None, "ptq-int8", "Smiling", 20, 40,
                                            0, 0.0, model_card="", variant_card=sys.argv[1],
                                            progress=lambda *a, **k: None))):
    try:
        call()
    except gr.Error as error:
        refused.append(error.message)
print(json.dumps({"your_models": "your-models" in ids, "card_labels": [l for l in labels if "card" in l.lower()],
                  "audit_inputs": len(audit.inputs),
                  "scan_inputs": len(scan.inputs), "scan_note": "scan-your-models" in ids, "use_models": any(fn.api_name == "use_models"
                                                                       for fn in app.demo.fns.values()),
                  "refused": refused}))
"""


@pytest.mark.slow
def test_a_public_app_has_no_your_models_and_refuses_card_paths(tmp_path: Path) -> None:
    card = save_different(tmp_path / "q", "onnx") / "recourse-card.json"
    env = {**os.environ, "RECOURSE_PUBLIC": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", PUBLIC_CHECK, str(card)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert not seen["your_models"] and seen["card_labels"] == [] and not seen["use_models"]
    assert seen["audit_inputs"] == 12  # the committed variant's inputs only: no card path can be sent
    assert seen["scan_inputs"] == 15 and not seen["scan_note"]  # Find failures: nothing new either
    assert seen["refused"] == [app.PUBLIC_CARDS_REFUSED] * 4  # refused before any file is read
