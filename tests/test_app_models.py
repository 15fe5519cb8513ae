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


def gallery_pixels() -> np.ndarray:
    return np.array(Image.open(app.gallery_faces()[0][0]).convert("RGB"))


def audit(variant_card, model_card="", attribute="Smiling") -> dict:
    steps = list(app.run_audit(None, gallery_pixels(), "ptq-int8", attribute, next(iter(app.TARGETS)), 20, 40, 0,
                               0.0, model_card, variant_card, progress=no_progress))
    return steps[-1]


@pytest.mark.parametrize("variant_format", ["torch-export", "onnx"])
def test_your_models_are_audited_and_offer_only_their_attributes(tmp_path: Path, variant_format: str) -> None:
    assert not app.PUBLIC
    model = save_different(tmp_path / "fp", "safetensors")
    variant = save_different(tmp_path / "q", variant_format)
    dropdown, status = app.use_cards(str(model), str(variant), "Eyeglasses")
    offered = [value for _, value in dropdown.choices]
    assert offered == sorted(DIFFERENT_ATTRIBUTES, key=app.ATTRIBUTES.index)  # CelebA's order: Male, Smiling, Young
    assert dropdown.value == offered[0] and "different" in status
    final = audit(str(variant), str(model))
    record = json.loads(Path(final[app.export_json]).read_text())
    assert record["variant"] == "different" and record["attribute"] == "Smiling"
    assert final[app.verdict].startswith("### ")


def test_an_attribute_your_models_do_not_predict_is_refused(tmp_path: Path) -> None:
    variant = save_different(tmp_path / "q", "onnx")
    with pytest.raises(gr.Error, match="does not predict Eyeglasses"):
        audit(str(variant), attribute="Eyeglasses")


def test_bad_cards_get_a_clear_message_and_empty_boxes_mean_the_committed_models(tmp_path: Path) -> None:
    with pytest.raises(gr.Error, match="Your models: .*"):
        app.card_pair("", str(tmp_path / "missing"))
    with pytest.raises(gr.Error, match="Give the compressed model's card too"):
        app.card_pair(str(save_different(tmp_path / "fp", "onnx")), "")
    dropdown, status = app.use_cards("", "", "Smiling")
    assert len(dropdown.choices) == 40 and status == "Auditing the committed models."


PUBLIC_CHECK = """
import json, sys
import gradio as gr
import app
assert app.PUBLIC
ids = {getattr(block, "elem_id", None) for block in app.demo.blocks.values()}
labels = [str(getattr(block, "label", "")) for block in app.demo.blocks.values()]
audit = next(fn for fn in app.demo.fns.values() if fn.api_name == "audit")
refused = []
for call in (lambda: app.card_pair("", sys.argv[1]),
             lambda: list(app.run_audit(None, None, "ptq-int8", "Smiling", next(iter(app.TARGETS)), 20, 40, 0, 0.0,
                                        "", sys.argv[1], progress=lambda *a, **k: None)),
             lambda: app.use_cards(sys.argv[1], sys.argv[1], "Smiling")):
    try:
        call()
    except gr.Error as error:
        refused.append(error.message)
print(json.dumps({"your_models": "your-models" in ids, "card_labels": [l for l in labels if "card" in l.lower()],
                  "audit_inputs": len(audit.inputs), "use_models": any(fn.api_name == "use_models"
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
    assert seen["audit_inputs"] == 9  # the committed variant's inputs only: no card path can be sent
    assert seen["refused"] == [app.PUBLIC_CARDS_REFUSED] * 3  # refused before any file is read
