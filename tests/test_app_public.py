"""The app as a public Space: the failure scan never touches a server path, errors say
nothing of the server, exports survive concurrent audits, and a ranked face reopens in the
audit exactly as it was ranked. Through the real server where a stranger would come in."""

import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from scripts.figures.app_screenshot import start_app


ROOT = Path(__file__).resolve().parents[1]
GALLERY = "gallery faces"


@pytest.fixture(scope="module")
def public_client(public_app):
    """A client of the suite's public app (``public_app``), this module's own process in public mode too."""
    from gradio_client import Client

    before = os.environ.get("RECOURSE_PUBLIC")
    os.environ["RECOURSE_PUBLIC"] = "1"
    try:
        yield Client(public_app[0], verbose=False)
    finally:
        if before is None:
            os.environ.pop("RECOURSE_PUBLIC")
        else:
            os.environ["RECOURSE_PUBLIC"] = before


def scan(client, source, folder="", count=2, variant="ptq-int4", attribute="Smiling", margin=0.0):
    # inputs: source, folder, listed root, split, count, photos, variant, attribute, steps, guidance, seed, margin
    return client.predict(source, folder, None, "test", count, None, variant, attribute, 20, 40, 0, margin,
                          "denoised", 2, 1.0, api_name="/find_failures")  # two edit steps: quick, in any budget


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_a_public_app_never_reads_a_server_folder(public_client):
    from gradio_client.exceptions import AppError

    messages = []
    for folder in (str(Path.home()), str(Path.home() / "no-such-folder"), str(ROOT.parent / "shared" / "data")):
        with pytest.raises(AppError) as refused:
            scan(public_client, "server folder", folder)
        messages.append(str(refused.value))
    # the same answer whether the folder exists or not, and no path in it
    assert len(set(messages)) == 1, messages
    assert str(Path.home()) not in messages[0] and "shared" not in messages[0]


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_a_public_app_ranks_the_gallery(public_client):
    rows, thumbnails, status = scan(public_client, GALLERY, count=2)
    assert len(rows["data"]) == 2 == len(thumbnails)
    assert "ptq-int4" in status and "Smiling" in status and "margin 0" in status


@pytest.mark.slow
@pytest.mark.requires("committed_variants")
def test_a_ranked_face_reopens_with_the_scans_variant_and_attribute_and_reproduces_its_row():
    import app
    from recourse.audit.pipeline import audit_image
    from recourse.audit.result import minimal_recourse
    from recourse.audit.verdict import judge_says
    from recourse.ui.settings import settings_from

    class Selection:
        index = (0, 1)

    # the scan with the app's defaults but four edit steps (for speed), as the audit below
    defaults = replace(minimal_recourse(), edit_steps=4)
    rows, _, found, _ = list(app.find_failures(GALLERY, "", None, "test", 2, None, "cf-ptq", "Young",
                                               defaults.finish_steps, defaults.cone_degrees, 0, 0.0,
                                               edit_steps=defaults.edit_steps, progress=lambda *a, **k: None))[-1]
    pixels, upload, _, variant, attribute, target, _ = app.select_failure(found, Selection())
    assert (variant, attribute, upload) == ("cf-ptq", "Young", None)
    assert target == next(iter(app.TARGETS))  # flip the full-precision decision, as the scan did
    # the scan's own settings, as the app made them from the same controls
    settings = settings_from(defaults.finish_steps, defaults.cone_degrees, 0, 0.0, edit_steps=defaults.edit_steps)
    result = audit_image(app.framed_tensor(pixels), variant=variant, attribute=attribute, settings=settings)
    first = rows[0]
    assert result.recourse.teacher_valid == first[4] and result.recourse.student_accepts_teacher == first[5]
    assert result.recourse.student_valid == first[6]
    if result.recourse.crg is None:
        assert first[7] == first[8] == "no edit to compare"
    elif not result.compared:
        assert first[7] == first[8] == "not compared"  # below the noise floor, in the audit as in the row
    else:
        assert round(result.recourse.crg, 3) == first[7] and round(result.recourse.dirsim, 3) == first[8]
    assert result.judge is not None  # the committed judge: the row says what it says in the audit
    assert (first[9], first[10]) == (judge_says(result.judge, "teacher"), judge_says(result.judge, "student"))


def test_exports_survive_concurrent_audits_and_old_ones_are_pruned(tmp_path, monkeypatch):
    from recourse.ui import storage as app  # the exports, their lock and their pruning

    monkeypatch.setattr(app, "EXPORTS", tmp_path / "exports")
    old = tmp_path / "exports" / "audit-old"
    old.mkdir(parents=True)
    stale = time.time() - 2 * app.EXPORT_LIFETIME_S
    os.utime(old, (stale, stale))
    errors = []

    def export_many():
        for _ in range(20):
            try:
                with app._EXPORT_LOCK:
                    app._prune_exports()
                    app.EXPORTS.mkdir(parents=True, exist_ok=True)
                    folder = Path(app.tempfile.mkdtemp(prefix="audit-", dir=app.EXPORTS))
                (folder / "a.json").write_text("{}")
                os.utime(folder, (stale, stale))  # every export is immediately old: maximal pruning
            except Exception as error:  # noqa: BLE001 — any failure is the bug under test
                errors.append(error)

    threads = [threading.Thread(target=export_many) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert not old.exists()


def test_error_messages_do_not_show_server_paths():
    import app

    message = app._public(FileNotFoundError(f"{Path.cwd() / 'checkpoints' / 'x'}: not found in {Path.home()}"))
    assert str(Path.cwd()) not in message and str(Path.home()) not in message


def test_clearing_empties_every_result_output():
    import app

    cleared = app.clear_results()
    # every output emptied; the position slider along the edits keeps its place (an update of nothing)
    assert cleared[:-1] == [None] * (len(app.RESULT_OUTPUTS) - 1) and app.RESULT_OUTPUTS[-1] is app.position
    assert cleared[-1] == {"__type__": "update"}
    assert app.evidence in app.RESULT_OUTPUTS and app.cards in app.RESULT_OUTPUTS and app.verdict in app.RESULT_OUTPUTS


def test_settings_refuse_non_finite_and_out_of_range_values():
    import gradio as gr

    import app

    for steps, guidance, seed, margin in ((20, float("nan"), 0, 0), (20, 40, 0, float("inf")), (20, 40, 0, -1)):
        with pytest.raises(gr.Error):
            app.settings_from(steps, guidance, seed, margin)
    assert app.settings_from(20, 40, 0, 0.5).stops.visible == 0.5  # the margin moves the pictures
    # the denoised method's own settings: steps within MAX_EDIT_STEPS, σ within the denoiser's trained levels
    for edit_steps, sigma in ((float("inf"), 0.4), (app.MAX_EDIT_STEPS + 1, 0.4), (24, float("nan")), (24, -0.4),
                              (24, app.SIGMAS[1] * 2), (24, app.SIGMAS[0] / 2)):
        with pytest.raises(gr.Error, match="Denoiser steps|Noise level"):
            app.settings_from(20, 40, 0, 0.0, "denoised", edit_steps, sigma)
    config = app.settings_from(20, 40, 0, 0.0, "denoised", app.MAX_EDIT_STEPS, app.SIGMAS[0]).counterfactual
    assert (config.edit_steps, config.sigma) == (app.MAX_EDIT_STEPS, app.SIGMAS[0])


@pytest.mark.requires("committed_variants")
def test_the_api_names_its_outputs_and_offers_a_face_as_the_example():
    import json

    import app

    info = app.demo.get_api_info()
    assert "value_" not in json.dumps(info)
    example = info["named_endpoints"]["/audit"]["parameters"][0]["example_input"]
    assert "grace-hopper.jpg" in json.dumps(example)
    assert not str(example).startswith(str(ROOT))  # no server path on the API page


@pytest.mark.slow
@pytest.mark.requires("committed_variants")
def test_display_pictures_draw_the_edit_on_the_photos_own_crop():
    import app
    from recourse.audit.pipeline import audit_image
    from recourse.audit.result import AuditSettings
    from recourse.render.pictures import display_pictures

    # the minimal recourse (margin 0, no stops): the pictures' crop is what is checked, not where they stop
    result = audit_image(app.EXAMPLE_PHOTO, variant="ptq-int8", attribute="Young", settings=AuditSettings())
    assert result.predictions.display is not None and result.predictions.display.shape == (3, 256, 256)
    pictures = display_pictures(result)
    assert pictures["teacher_counterfactual"].size == (256, 256)
    # a painted edit: the photo's own 256 px crop plus the upsampled edit, not the 64 px image enlarged
    base = np.asarray(pictures["aligned"], dtype=np.float32) / 255
    drawn = np.asarray(pictures["teacher_counterfactual"], dtype=np.float32) / 255
    upsampled = torch.nn.functional.interpolate((result.teacher_counterfactual - result.predictions.aligned)[None],
                                                size=256, mode="bilinear", align_corners=False)[0]
    expected = np.clip(base + upsampled.permute(1, 2, 0).numpy(), 0, 1)
    assert np.abs(drawn - expected).max() <= 1.5 / 255
    # a moved mouth: the crop's own pixels warped around its mouth, nothing above the nose touched
    smiling = audit_image(app.EXAMPLE_PHOTO, variant="ptq-int8", attribute="Smiling", settings=AuditSettings())
    moved = np.asarray(display_pictures(smiling)["teacher_counterfactual"], dtype=np.float32) / 255
    assert np.abs(moved - base).max() > 10 / 255
    assert np.abs(moved - base)[:110].max() <= 1.5 / 255


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_a_broken_variant_is_listed_and_the_rest_work(tmp_path):
    """One tampered checkpoint must not stop the app: it is reported, and audits with the
    other variants still run."""
    import json
    import shutil

    from gradio_client import Client, handle_file
    from gradio_client.exceptions import AppError

    home = tmp_path / "home"
    (home / "checkpoints" / "variants").mkdir(parents=True)
    (home / "assets").symlink_to(ROOT / "assets")
    for name in ("classifier", "generator"):
        (home / "checkpoints" / name).symlink_to(ROOT / "checkpoints" / name)
    for variant in ("ptq-int8", "ptq-int4"):
        shutil.copytree(ROOT / "checkpoints" / "variants" / variant, home / "checkpoints" / "variants" / variant)
    config = home / "checkpoints" / "variants" / "ptq-int4" / "config.json"
    record = json.loads(config.read_text())
    del record["settings"]
    config.write_text(json.dumps(record))
    log = tmp_path / "app.log"
    os.environ["RECOURSE_HOME"] = str(home)
    try:
        with start_app(log=log) as url:
            client = Client(url, verbose=False)
            photo = handle_file(str(ROOT / "assets" / "examples" / "grace-hopper.jpg"))
            outputs = client.predict(photo, "ptq-int8", "Smiling", "flip the full-precision decision", 20, 40, 0, 0.0,
                                     "denoised", 2, 1.0, api_name="/audit")
            assert any(isinstance(o, dict) and "recourse" in o for o in outputs)
            with pytest.raises(AppError) as refused:
                client.predict(photo, "ptq-int4", "Smiling", "flip the full-precision decision", 20, 40, 0, 0.0,
                               api_name="/audit")
            deadline = time.monotonic() + 120
            while "models loaded" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(1)
    finally:
        os.environ.pop("RECOURSE_HOME")
    assert "config.json" in str(refused.value) and str(home) not in str(refused.value)
    text = log.read_text()
    assert "variant ptq-int4: does not load" in text and "variant ptq-int8: loaded" in text
    assert "variant cf-ptq: not built yet" in text


@pytest.mark.slow
@pytest.mark.parametrize("run", ["test split, registered run (region edit)", "validation margin sweep, region edit",
                                 "test split, denoised generator",
                                 "validation margin sweep, denoised generator", "test split, cone walk (superseded)",
                                 "test split, cone walk, second run on other faces", "validation margin sweep, cone walk"])
def test_the_benchmark_tab_reads_every_committed_run(run):
    import json

    import app
    from recourse.locations import assets_dir

    caption, table, figure = app.benchmark_view(run)
    record = json.loads((assets_dir() / app.BENCHMARKS[run]).read_text())
    assert record["command"] in caption and figure is not None
    assert list(table["method"]) == [row["method"] for row in record["rows"]]
    assert list(table["Acc %"]) == [f"{row['acc']:.2f}" for row in record["rows"]]


def test_a_damaged_benchmark_file_is_reported_not_shown(tmp_path, monkeypatch):
    import app

    (tmp_path / "assets" / "archive").mkdir(parents=True)
    (tmp_path / "assets" / "archive" / "benchmark.json").write_text('{"rows": [{"method": "fp32"}]}')
    monkeypatch.setenv("RECOURSE_HOME", str(tmp_path))
    caption, table, figure = app.benchmark_view("test split, cone walk (superseded)")
    assert "is not a benchmark file" in caption and table is None and figure is None
    caption, table, _ = app.benchmark_view("validation margin sweep, cone walk")
    assert "No validation margin sweep, cone walk" in caption and table is None
    # the tab opens on the first run whose file is there
    assert app.first_benchmark_run() == "test split, cone walk (superseded)"


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_two_concurrent_audits_with_old_exports_both_finish(public_client):
    """The probe of the issue: old export folders on disk, two audits at once on an idle server.
    The old folders lie where earlier versions kept every instance's exports: another app's
    files, which this one must leave alone (it prunes only its own instance folder)."""
    import tempfile

    from gradio_client import handle_file

    root = Path(tempfile.gettempdir()) / "recourse-audit-exports"
    old = [root / f"audit-old-{i}" for i in range(20)]
    stale = time.time() - 7200
    for folder in old:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "a.json").write_text("{}")
        os.utime(folder, (stale, stale))
    photo = handle_file(str(ROOT / "assets" / "examples" / "grace-hopper.jpg"))
    jobs = [public_client.submit(photo, variant, "Smiling", "flip the full-precision decision", 20, 40, 0, 0.0,
                                 api_name="/audit") for variant in ("ptq-int8", "ptq-int4")]
    for job in jobs:
        outputs = job.result(timeout=300)
        assert any(isinstance(o, dict) and "recourse" in o for o in outputs)
        assert any(isinstance(o, str) and o.endswith(".json") for o in outputs)
    assert all(folder.exists() for folder in old)
