"""The app: its event functions in this process on a tiny ``RECOURSE_HOME``, and ``python app.py``
launched for real on localhost, driven through gradio_client, with the committed models."""

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch
from PIL import Image

import app  # imported here, with the checkout as its home: the gallery is the committed one
from recourse.data import ATTRIBUTES
from recourse.generation import CounterfactualConfig
from recourse.render.audit_html import CARD_TITLES
from recourse.ui.settings import STOPS, picture_stop
from tests.conftest import ROOT, build_home, still_generator, tiny_classifier

FLIP = "flip the full-precision decision"
TARGET_LABELS = {1: "1 (attribute present)", 0: "0 (attribute absent)"}


def photo() -> Path:
    """A public-domain portrait shipped inside the matplotlib wheel (not a dataset photo)."""
    import matplotlib

    return Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"


def no_progress(*args, **kwargs) -> None:
    """Stands in for gradio's progress bar outside a request."""


# --- in this process, on a tiny home --------------------------------------------------------


@pytest.mark.slow
def test_the_app_shows_a_recourse_that_changes_nothing(project_home):
    """A generator that edits nothing and a target both models already decide: the value cards
    and the verdict say why CRG_i and DirSim_i are undefined, and the exports are strict JSON."""
    from recourse import models

    teacher = tiny_classifier(seed=0)
    build_home(project_home, teacher, still_generator(16))
    pixels = (np.random.default_rng(0).random((16, 16, 3)) * 255).astype(np.uint8)
    x = app.framed_tensor(pixels)[None]
    with torch.no_grad():
        teacher_logits, student_logits = teacher(x)[0], models.load_student("ptq-int8").decider(x)[0]
    agreed = [i for i in range(40) if (teacher_logits[i] >= 0) == (student_logits[i] >= 0)]
    index = max(agreed, key=lambda i: abs(float(teacher_logits[i])))
    target = int(teacher_logits[index] >= 0)
    steps = list(app.run_audit(None, pixels, "ptq-int8", ATTRIBUTES[index], TARGET_LABELS[target], 4, 40, 0, 0.0,
                               progress=no_progress))
    # the predictions first, a status after each later stage (where a gone caller stops it), then everything
    assert len(steps) >= 2 and app.cards not in steps[0] and all(set(step) == {app.status} for step in steps[1:-1])
    shown = steps[-1]
    cards = shown[app.cards]
    assert cards.count('class="value-card"') == len(CARD_TITLES)
    assert cards.count("no judge") == 2  # this home has no judge checkpoint: the audit runs without one
    assert cards.count(">not trained<") == 2  # nor a stronger judge: said, not hidden
    assert cards.count("not measured: 16-px faces") == 2  # dlib's distance is calibrated at 64 px
    assert cards.count("undefined: the full-precision recourse changes nothing") == 2  # CRG_i and DirSim_i
    assert "cannot be compared with the full-precision one: the full-precision recourse changes nothing" \
        in shown[app.verdict]
    values = shown[app.raw]
    assert values["recourse"]["crg"] is None and values["recourse"]["teacher_cost"] == 0
    exported = json.loads(Path(shown[app.export_json]).read_text(),
                          parse_constant=lambda name: pytest.fail(f"{name} in the export"))
    assert exported["recourse"] == values["recourse"] and exported["verdict"] in shown[app.verdict]
    assert html.escape(exported["verdict"]) in Path(shown[app.export_html]).read_text()


@pytest.mark.parametrize("method, screen, recorded", [
    ("pca-walk", {"steps": 4}, {"finish_steps": 4}),
    ("pca-walk-cone", {"steps": 4, "guidance": 30}, {"finish_steps": 4, "cone_degrees": 30.0}),
    ("denoised", {"edit_steps": 3, "sigma": 0.3}, {"edit_steps": 3, "sigma": 0.3}),
])
@pytest.mark.slow
def test_the_method_choice_reaches_the_audit_and_its_exports(project_home, method, screen, recorded):
    """The chosen method and its own settings are what the audit ran with, and the JSON and
    HTML exports record them (AuditSettings.to_dict holds the whole config)."""
    build_home(project_home, tiny_classifier(seed=0), still_generator(16))
    pixels = (np.random.default_rng(0).random((16, 16, 3)) * 255).astype(np.uint8)
    chosen = {"steps": 10, "guidance": 40, "seed": 0, "margin": 0.0, "edit_steps": 2, "sigma": 0.4, **screen}
    shown = list(app.run_audit(None, pixels, "ptq-int8", "Smiling", FLIP, method=method, **chosen,
                               progress=no_progress))[-1]
    exported = json.loads(Path(shown[app.export_json]).read_text())
    for settings in (exported["settings"], shown[app.raw]["settings"]):
        values = settings["counterfactual"]
        assert values["method"] == method and values["margin"] == CounterfactualConfig().margin
        assert settings["stops"]["visible"] == 0.0  # the screen's margin: where the pictures are shown
        assert {key: values[key] for key in recorded} == recorded
    summary = app.method_summary(CounterfactualConfig(**exported["settings"]["counterfactual"]), "Smiling")
    assert summary.startswith(method + ",") and summary in shown[app.status]
    assert html.escape(summary) in Path(shown[app.export_html]).read_text()


def test_the_method_choice_offers_every_method_and_defaults_to_the_librarys():
    from recourse.generation import METHODS

    assert sorted(value for _, value in app.method.choices) == sorted(METHODS)
    assert app.method.value == CounterfactualConfig().method == "region-space" == app.DEFAULTS.method
    cone = dict((value, label) for label, value in app.method.choices)["pca-walk-cone"]
    assert "ablation" in cone and "by construction" in app.METHOD_NOTES["pca-walk-cone"]
    # each slider starts at the value the CLI's audit uses
    assert (app.edit_steps.value, app.sigma.value) == (app.DEFAULTS.edit_steps, app.DEFAULTS.sigma)
    assert app.settings_from(app.steps.value, app.guidance.value, app.seed.value, app.margin.value, app.method.value,
                             app.edit_steps.value, app.sigma.value).counterfactual == app.DEFAULTS


@pytest.mark.parametrize("method, visible", [
    ("denoised", {"edit_steps", "sigma"}),
    ("pca-walk", {"steps"}),
    ("pca-walk-cone", {"steps", "guidance"}),
])
def test_only_the_chosen_methods_controls_are_shown(method, visible):
    sliders = ("edit_steps", "sigma", "steps", "guidance")  # the outputs of the "method" event, after its note
    event = next(fn for fn in app.demo.fns.values() if fn.fn is app.method_controls)
    assert [block._id for block in event.outputs] == [app.method_note._id, *(getattr(app, n)._id for n in sliders)]
    note, *updates = app.method_controls(method)
    assert note["value"] == app.METHOD_NOTES[method]
    assert {name for name, update in zip(sliders, updates) if update["visible"]} == visible
    if method == app.DEFAULTS.method:  # as the page first shows them
        assert {name for name in sliders if getattr(app, name).visible} == visible
    with pytest.raises(gr.Error, match="unknown counterfactual method"):
        app.method_controls("pca")


def test_the_benchmark_tab_reads_its_file(project_home):
    from recourse.benchmark import BenchmarkResult, BenchmarkRow

    caption, table, plot = app.benchmark_view()
    assert "No test split, registered run (region edit) benchmark yet" in caption and table is None and plot is None
    row = dict(acc=90.0, vd=None, crg=None, dirsim=None, success_rate=70.0, overhead=None, agreement=100.0,
               twin_integer_agreement=None, bits_per_weight=32.0, size_mb=1.0, latency_batch1_ms=1.0,
               latency_batch32_ms=9.0, integer_kernels=False, n=10, s=7, b=0)
    rows = (BenchmarkRow(method="fp32", **row),
            BenchmarkRow(method="ptq-int4", **{**row, "vd": 4.0, "crg": float("nan"), "dirsim": 80.0, "b": 5}))
    result = BenchmarkResult(date="2026-11-30", command="python -m recourse benchmark", split="test", n=10,
                             attributes=("Smiling",), accuracy_images=20, processes=1, seconds=3.0, settings={},
                             rows=rows)
    (project_home / "assets" / "archive").mkdir(parents=True)
    (project_home / "assets" / "archive" / "benchmark.json").write_text(json.dumps(result.to_dict(), allow_nan=False))
    caption, table, plot = app.benchmark_view()
    assert "2026-11-30" in caption and list(table["method"]) == ["fp32", "ptq-int4"]
    assert list(table["CRG ↓"]) == ["—", "—"]  # undefined, as written (null) in the file
    assert [axis.get_xlabel()[:3] for axis in plot.axes] == ["VD ", "CRG", "Dir"]
    (project_home / "assets" / "archive" / "benchmark.json").write_text("{not json")
    assert "is not a benchmark file" in app.benchmark_view()[0]


def test_gallery_faces_have_provenance():
    faces = app.gallery_faces()
    assert len(faces) >= 2
    for path, title in faces:
        provenance = json.loads(Path(path).with_suffix(".json").read_text())
        assert provenance["title"] == title and provenance["source"] and provenance["license"]
        assert np.asarray(Image.open(path)).shape == (64, 64, 3)


# --- python app.py, for real ------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(local_app):
    from gradio_client import Client

    return Client(local_app, verbose=False)


EDIT_DEFAULTS = CounterfactualConfig()


def audit(client, path, variant="ptq-int8", attribute="Smiling", target=FLIP, steps=EDIT_DEFAULTS.finish_steps,
          guidance=EDIT_DEFAULTS.cone_degrees, seed=0, margin=None, method=EDIT_DEFAULTS.method,
          edit_steps=EDIT_DEFAULTS.edit_steps, sigma=EDIT_DEFAULTS.sigma):
    """An audit through the API; the editing settings default to the app's (and the CLI's), the
    margin to where the slider stands for ``attribute``."""
    from gradio_client import handle_file

    if margin is None:  # a bad attribute or method is the app's to refuse
        from recourse.generation import METHODS

        margin = picture_stop(attribute, method) if attribute in ATTRIBUTES and method in METHODS else STOPS.visible
    return client.predict(handle_file(str(path)), variant, attribute, target, steps, guidance, seed, margin, method,
                          edit_steps, sigma, api_name="/audit")


def values_of(outputs) -> dict:
    """The 'All values' JSON among the audit's outputs."""
    return next(o for o in outputs if isinstance(o, dict) and "recourse" in o)



@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_upload_audit_equals_the_cli(client, tmp_path):
    outputs = audit(client, photo(), edit_steps=4)  # fewer steps than the default keep the test quick
    ui = values_of(outputs)
    out = tmp_path / "audit.json"
    # The CLI in its own process, like the app, with the same settings (the committed stops are both defaults).
    done = subprocess.run([sys.executable, "-m", "recourse", "audit", str(photo()), "--variant", "ptq-int8",
                           "--attribute", "Smiling", "--edit-steps", "4", "--json", str(out)], cwd=ROOT,
                          env=os.environ.copy(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    cli = json.loads(out.read_text())
    for key in ("recourse", "teacher_probabilities", "student_probabilities", "diverging_attributes", "attributions",
                "probabilities_after", "target", "seed", "settings", "student_model", "verdict"):
        assert ui[key] == cli[key], key
    # the files the UI offers for export carry the same values
    exported = json.loads(Path(next(o for o in outputs if isinstance(o, str) and o.endswith(".json"))).read_text())
    assert exported["recourse"] == cli["recourse"]
    report = Path(next(o for o in outputs if isinstance(o, str) and o.endswith(".html"))).read_text()
    assert html.escape(cli["verdict"]) in report and html.escape("V_g(x'_f)") in report
    # every image came back: the face, two counterfactuals, two differences, four maps, each edit on its path
    assert sum(1 for o in outputs if isinstance(o, str) and o.endswith(".png")) == 11


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
@pytest.mark.parametrize("make, message", [
    (lambda p: Image.new("RGB", (400, 300), (190, 170, 150)).save(p, format="PNG"), "no face found"),
    (lambda p: Image.new("RGB", (20, 20)).save(p, format="PNG"), "too small"),
    (lambda p: p.write_bytes(b"plain text, not an image"), None),  # refused when the upload is decoded
    (lambda p: p.write_bytes(photo().read_bytes()[:5000]), None),
], ids=["no-face", "tiny", "not-an-image", "truncated"])
def test_bad_uploads_get_a_clear_message(client, tmp_path, make, message):
    from gradio_client.exceptions import AppError

    path = tmp_path / "upload.png"
    make(path)
    with pytest.raises(AppError, match=message) as error:
        audit(client, path)
    assert str(tmp_path) not in str(error.value)  # the user's file name, not the server's temp path
    assert "/tmp/gradio" not in str(error.value) and "Traceback" not in str(error.value)


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
@pytest.mark.parametrize("arguments, message", [
    ({"variant": "int3-magic"}, "unknown choice 'int3-magic'; choose one of the list"),
    ({"attribute": "Smile"}, "unknown choice 'Smile'"),
    ({"target": "maybe"}, "unknown choice 'maybe'"),
    ({"steps": 0}, "less than minimum value"),
    ({"seed": -1}, "less than minimum value"),
    ({"method": "dpm"}, "unknown choice 'dpm'"),
    ({"edit_steps": 0}, "less than minimum value"),
    ({"sigma": 0.0}, "less than minimum value"),
])
def test_bad_api_values_get_a_clear_message(client, arguments, message):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match=message):
        audit(client, photo(), **arguments)


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_the_app_still_serves_after_bad_input(client):
    values = values_of(audit(client, photo(), attribute="Young", target="1 (attribute present)", edit_steps=2))
    assert values["attribute"] == "Young" and values["target"] == 1


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_find_failures_ranks_a_folder(client, hq_folder):
    root, _ = hq_folder  # three test-split images of noise, framed at 16 px, resized to the model's 64
    rows, _, status = client.predict("server folder", str(root), None, "test", 3, None, "ptq-int8", "Smiling",
                                        20, 40, 0, 0.0, "denoised", 2, 1.0, api_name="/find_failures")
    table = rows["data"] if isinstance(rows, dict) else rows
    assert [row[0] for row in table] == [1, 2, 3] and "3 of 3" in status
    scores = [row[3] for row in table if not isinstance(row[3], str)]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_find_failures_ranks_any_folder_and_names_each_skipped_file(tmp_path):
    """Was: "not a CelebA folder" for an ordinary folder, and photos without a usable face left
    out without a word."""
    import app
    from tests.test_scan_run import mixed_folder

    folder = mixed_folder(tmp_path)
    *_, (rows, _, _, status) = app.find_failures("server folder", str(folder), None, "test", 16, None, "ptq-int8",
                                                 "Smiling", 20, 40, 0, 0.0, "denoised", 2, 1.0,
                                                 progress=lambda *a, **k: None)
    assert sorted(row[1] for row in rows) == ["people/more/full-length.jpg", "people/portrait.jpg"]
    assert "2 of 2 faces ranked (worst first), 4 skipped" in status
    for line in ("broken.jpg: unreadable", "drawing.png: drawing", "people/crowd.jpg: no face", "wall.png: no face"):
        assert f"- {line} (" in status


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_find_failures_refuses_a_folder_without_photos(client, tmp_path):
    from gradio_client.exceptions import AppError

    (tmp_path / "notes.txt").write_text("not a photo")
    with pytest.raises(AppError, match="no image files in it or its subfolders"):
        client.predict("server folder", str(tmp_path), None, "test", 3, None, "ptq-int8", "Smiling", 20, 40, 0, 0.0,
                       api_name="/find_failures")


def test_the_margin_slider_reads_the_stop_the_pictures_are_shown_at():
    from recourse.audit.stops import attribute_visible_stops

    chosen, _ = attribute_visible_stops()
    assert app.margin.value == picture_stop(app.attribute.value) == chosen[app.attribute.value]
    event = next(fn for fn in app.demo.fns.values() if fn.fn is app.follow_stop)
    assert [block._id for block in event.outputs] == [app.margin._id]
    assert app.follow_stop("Young", "region-space")["value"] == chosen["Young"]
    assert app.follow_stop("Young", "pca-walk")["value"] == STOPS.visible  # a walk: the committed stop
    assert app.follow_stop("Bangs", "region-space")["value"] == STOPS.visible  # no part space: the pixel edit
    with pytest.raises(gr.Error, match="unknown attribute"):
        app.follow_stop("Sunburnt", "region-space")


def test_the_slider_at_the_attributes_stop_is_no_choice_and_moved_it_is():
    young = picture_stop("Young")
    unmoved = app.settings_from(20, 40, 0, young, "region-space", attribute="Young").stops
    assert unmoved.visible_source != "chosen by the user"  # the attribute's own stop, from the committed run
    moved = app.settings_from(20, 40, 0, young + 1, "region-space", attribute="Young").stops
    assert (moved.visible, moved.visible_source) == (young + 1, "chosen by the user")
    committed = app.settings_from(20, 40, 0, STOPS.visible, "region-space", attribute="Young").stops
    assert (committed.visible, committed.visible_source) == (STOPS.visible, "chosen by the user")
