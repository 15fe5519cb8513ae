"""The recourse audit app: ``python app.py`` (offline, CPU), also a Hugging Face Space.

Thin by design: these functions only convert UI values, call ``recourse.audit`` and
convert its results back (``recourse.report`` draws the HTML). Layout first, then events.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import gradio as gr
import numpy as np
import torch
from PIL import Image

from recourse.audit import AuditSettings, audit_image, audit_steps
from recourse.benchmark import BenchmarkResult
from recourse.checkpoints import CheckpointError
from recourse.data import ATTRIBUTES, SPLITS
from recourse.generation import CounterfactualConfig
from recourse.models import VARIANTS, load_student, load_teacher, variant_is_built
from recourse.paths import assets_dir
from recourse.render.audit_html import attribution_table, audit_record, predictions_chart, report_html, value_cards
from recourse.render.benchmark import accuracy_plot, display_rows
from recourse.render.pictures import audit_pictures, enlarge, to_pil
from recourse.scan import scan_folder

GALLERY = assets_dir() / "gallery"
BENCHMARK = assets_dir() / "benchmark.json"
TARGETS = {"flip the full-precision decision": None, "1 (attribute present)": 1, "0 (attribute absent)": 0}
DEFAULTS = CounterfactualConfig()
# Two heavy requests at a time on two cores; the rest wait in the queue (never dropped).
HEAVY_CONCURRENCY = int(os.environ.get("RECOURSE_APP_CONCURRENCY", "2"))
EXPECTED_ERRORS = (ValueError, CheckpointError, OSError)  # bad input and missing checkpoints
EXPORTS = Path(tempfile.gettempdir()) / f"recourse-audit-exports-{os.getpid()}"
EXPORT_LIFETIME_S = 3600


# ---------------------------------------------------------------------------------------
# Plain functions
# ---------------------------------------------------------------------------------------


def gallery_faces() -> list[tuple[str, str]]:
    """``(png path, caption)`` of every gallery face; captions come from the provenance files."""
    faces = []
    for png in sorted(GALLERY.glob("*.png")):
        provenance = json.loads(png.with_suffix(".json").read_text()) if png.with_suffix(".json").is_file() else {}
        faces.append((str(png), provenance.get("title", png.stem)))
    return faces


def variant_choices() -> list[tuple[str, str]]:
    return [(v if variant_is_built(v) else f"{v} (not built yet)", v) for v in VARIANTS]


def framed_tensor(pixels: np.ndarray) -> torch.Tensor:
    """``uint8 (H, W, 3)`` → ``(3, H, W)`` in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(pixels)).permute(2, 0, 1).float().div(255.0)


def chosen_image(upload: str | None, selected: np.ndarray | None):
    """An upload (a file path: aligned by the audit) wins over a gallery or folder face
    (already framed pixels)."""
    if upload:
        return Path(upload)
    if selected is not None:
        return framed_tensor(np.asarray(selected, dtype=np.uint8))
    raise gr.Error("Choose a face from the gallery or upload a photo first.")


def settings_from(steps: float, guidance: float, seed: float) -> AuditSettings:
    try:
        return AuditSettings(CounterfactualConfig(steps=int(steps), guidance_scale=float(guidance), seed=int(seed)))
    except (TypeError, ValueError) as error:
        raise gr.Error(f"Generator settings: {error}") from None


def target_from(label: str):
    if label not in TARGETS:
        raise gr.Error(f"unknown target {label!r}; choose one of: {', '.join(TARGETS)}")
    return TARGETS[label]


def _export(result, source: str) -> tuple[str, str]:
    """The audit as JSON and as a one-page HTML report, in a fresh folder. Gradio serves a
    copy from its own cache, so folders older than an hour are removed here."""
    EXPORTS.mkdir(parents=True, exist_ok=True)
    for old in EXPORTS.iterdir():
        if time.time() - old.stat().st_mtime > EXPORT_LIFETIME_S:
            shutil.rmtree(old, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix="audit-", dir=EXPORTS))
    stem = f"audit-{result.predictions.variant}-{result.predictions.attribute}"
    json_path, html_path = folder / f"{stem}.json", folder / f"{stem}.html"
    json_path.write_text(json.dumps({"image": source, **audit_record(result)}, indent=2) + "\n")
    html_path.write_text(report_html(result, source))
    return str(json_path), str(html_path)


def run_audit(upload, selected, variant, attribute, target, steps, guidance, seed, progress=gr.Progress()):
    """The audit event: predictions are yielded first, then everything."""
    image = chosen_image(upload, selected)
    settings = settings_from(steps, guidance, seed)
    wanted = target_from(target)
    source = f"Uploaded photo {Path(upload).name}." if upload else "Gallery or folder face."
    try:
        for step in audit_steps(image, variant, attribute, wanted, settings):
            progress(step.fraction, desc=step.stage)
            p = step.predictions
            if step.stage == "predictions":
                yield {
                    aligned_view: enlarge(to_pil(p.aligned)), status: f"**Alignment:** {p.alignment}",
                    chart: predictions_chart(p, variant), **{c: None for c in RESULT_OUTPUTS},
                }
            elif step.result is not None:
                result = step.result
                pictures = {name: enlarge(picture) for name, picture in audit_pictures(result).items()}
                json_file, html_file = _export(result, source)
                values = result.to_dict()
                yield {
                    aligned_view: pictures["aligned"], chart: predictions_chart(p, variant),
                    teacher_cf: pictures["teacher_counterfactual"], teacher_diff: pictures["teacher_difference"],
                    student_cf: pictures["student_counterfactual"], student_diff: pictures["student_difference"],
                    cards: value_cards(result), verdict: f"### {result.verdict}",
                    ig_teacher: pictures["integrated-gradients_teacher"], ig_student: pictures["integrated-gradients_student"],
                    occ_teacher: pictures["occlusion_teacher"], occ_student: pictures["occlusion_student"],
                    attributions: attribution_table(result), raw: values, export_json: json_file, export_html: html_file,
                    status: f"**Alignment:** {p.alignment} · audit took {result.seconds['total']:.2f} s",
                }
    except EXPECTED_ERRORS as error:
        message = str(error).replace(str(upload), Path(upload).name) if upload else str(error)
        raise gr.Error(message) from None


def select_gallery_face(event: gr.SelectData):
    path = gallery_faces()[event.index][0]
    pixels = np.asarray(Image.open(path).convert("RGB"))
    return pixels, None, enlarge(Image.fromarray(pixels))


def benchmark_view():
    """The dataset-level table and a plot of accuracy against VD, CRG and DirSim."""
    if not BENCHMARK.is_file():
        return ("**No benchmark yet.** Run `python -m recourse benchmark --data PATH --split test --n 500 --out DIR` "
                "and copy its `benchmark.json` to `assets/benchmark.json`.", None, None)
    try:
        result = BenchmarkResult.from_dict(json.loads(BENCHMARK.read_text()))
    except (json.JSONDecodeError, ValueError) as error:
        return f"**{BENCHMARK.name} is not a benchmark file** ({error}).", None, None
    import pandas as pd

    headers, cells = display_rows(result)
    caption = (f"From `{result.command}` on {result.date}, N = {result.n} recourse tasks. "
               "Definitions: docs/metrics.md.")
    return caption, pd.DataFrame(cells, columns=headers), accuracy_plot(result)


def find_failures(folder, split, count, variant, attribute, progress=gr.Progress()):
    """Rank a folder's images by recourse divergence; yields the table as it grows."""
    if not folder or not Path(folder).is_dir():
        raise gr.Error(f"{folder!r} is not a folder; give a CelebA-HQ or original CelebA folder")
    try:
        for done, total, cases in scan_folder(folder, variant, attribute, int(count), split):
            progress(done / total, desc=f"{done} of {total} images")
            rows = [[rank + 1, c.filename, c.target, _score(c.divergence), c.recourse.teacher_valid,
                     c.recourse.student_accepts_teacher, c.recourse.student_valid, _value(c.recourse.crg),
                     _value(c.recourse.dirsim)] for rank, c in enumerate(cases)]
            found = [(c.filename, (c.image.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)) for c in cases]
            yield rows, found, f"{done} of {total} images ranked (worst first). Click a row to audit it."
    except EXPECTED_ERRORS as error:
        raise gr.Error(str(error)) from None


def _score(value: float | None) -> float | str:
    return "no teacher recourse" if value is None else round(value, 3)


def _value(value: float | None) -> float | str:
    return "undefined" if value is None else round(value, 3)


def select_failure(found, event: gr.SelectData):
    if not found:
        raise gr.Error("Rank a folder first.")
    row = event.index[0] if isinstance(event.index, (list, tuple)) else event.index
    filename, pixels = found[row]
    pixels = np.asarray(pixels, dtype=np.uint8)
    return pixels, None, enlarge(Image.fromarray(pixels)), gr.Tabs(selected="audit")


def warm_up() -> None:
    """Load every available model once and run one small audit, so the first user's
    predictions are not delayed by loading."""
    faces = gallery_faces()
    load_teacher()
    for variant in VARIANTS:
        if variant_is_built(variant):
            try:
                load_student(variant)
            except EXPECTED_ERRORS as error:  # a broken variant must not stop the app
                print(f"warning: variant {variant} does not load: {error}")
    available = [v for v in VARIANTS if variant_is_built(v)]
    if faces and available:
        image = framed_tensor(np.array(Image.open(faces[0][0]).convert("RGB")))
        audit_image(image, available[0], "Smiling")


# ---------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------

with gr.Blocks(title="Recourse audit", analytics_enabled=False, delete_cache=(3600, 3600)) as demo:
    selected_face = gr.State(None)  # per user: framed pixels of the chosen gallery or folder face
    found_faces = gr.State([])  # per user: (filename, pixels) of the last folder ranking, worst first
    gr.Markdown("# Recourse audit of a compressed face-attribute classifier\n"
                "Does the quantized model still honour the *recourse* (the smallest realistic change that flips "
                "an attribute) that the full-precision model gives? Definitions: `docs/metrics.md`.")
    with gr.Tabs() as tabs:
        with gr.Tab("Audit", id="audit"):
            with gr.Row():
                with gr.Column(scale=2):
                    gallery = gr.Gallery(gallery_faces(), label="Gallery (generated faces and a public-domain photo; "
                                         "provenance in assets/gallery/*.json)", columns=6, height=180,
                                         allow_preview=False, elem_id="gallery")
                    upload = gr.File(label="…or upload a photo (aligned automatically)", type="filepath",
                                     height=110, elem_id="upload")
                with gr.Column(scale=1):
                    aligned_view = gr.Image(label="Face audited (aligned crop)", type="pil", format="png", interactive=False,
                                            height=200, elem_id="aligned")
            with gr.Row():
                variant = gr.Dropdown(variant_choices(), value=VARIANTS[0], label="Compressed variant")
                attribute = gr.Dropdown(list(ATTRIBUTES), value="Smiling", label="Attribute")
                target = gr.Dropdown(list(TARGETS), value=next(iter(TARGETS)), label="Target decision")
            with gr.Accordion("Generator settings", open=False):
                steps = gr.Slider(2, 50, value=DEFAULTS.steps, step=1, label="DDIM steps")
                guidance = gr.Slider(0, 100, value=DEFAULTS.guidance_scale, step=1, label="Guidance strength")
                seed = gr.Number(value=DEFAULTS.seed, precision=0, minimum=0, label="Seed (the same for both models)")
            run = gr.Button("Audit", variant="primary", elem_id="run-audit")
            with gr.Row():
                with gr.Column(scale=3):
                    status = gr.Markdown()
                    verdict = gr.Markdown(elem_id="verdict")
                    cards = gr.HTML(elem_id="value-cards")
                    with gr.Row():
                        teacher_cf = gr.Image(label="Full-precision recourse x'_f", type="pil", format="png",
                                              interactive=False, elem_id="teacher-cf")
                        teacher_diff = gr.Image(label="x'_f − x (red brighter, blue darker)", type="pil", format="png",
                                                interactive=False)
                        student_cf = gr.Image(label="Compressed recourse x'_g (same seed)", type="pil", format="png",
                                              interactive=False, elem_id="student-cf")
                        student_diff = gr.Image(label="x'_g − x", type="pil", format="png", interactive=False)
                    with gr.Accordion("Attributions (Captum)", open=True):
                        with gr.Row():
                            ig_teacher = gr.Image(label="IntegratedGradients: full precision", type="pil", format="png",
                                                  interactive=False)
                            ig_student = gr.Image(label="IntegratedGradients: fake-quantized twin", type="pil",
                                                  format="png", interactive=False)
                            occ_teacher = gr.Image(label="Occlusion: full precision", type="pil", format="png",
                                                   interactive=False)
                            occ_student = gr.Image(label="Occlusion: integer-kernel model", type="pil", format="png",
                                                   interactive=False)
                        attributions = gr.HTML()
                with gr.Column(scale=2):
                    chart = gr.HTML(label="Predictions", elem_id="predictions")
            with gr.Row():
                export_json = gr.File(label="Audit as JSON", interactive=False)
                export_html = gr.File(label="One-page report (HTML)", interactive=False)
            with gr.Accordion("All values", open=False):
                raw = gr.JSON()
        with gr.Tab("Benchmark", id="benchmark"):
            caption, table, plot = benchmark_view()
            benchmark_caption = gr.Markdown(caption)
            benchmark_table = gr.Dataframe(table, interactive=False)
            benchmark_plot = gr.Plot(plot)
            refresh = gr.Button("Reload assets/benchmark.json")
        with gr.Tab("Find failures", id="failures"):
            gr.Markdown("Rank the first N images of a folder (CelebA-HQ or original CelebA layout) by how far the "
                        "compressed model's recourse departs from the full-precision one: +1 if it rejects the "
                        "full-precision recourse, +1 if it finds none of its own, + (1 − DirSim_i/100)/2.")
            with gr.Row():
                folder = gr.Textbox(label="Folder", placeholder="../shared/data/celeba-hq-64")
                split = gr.Dropdown(list(SPLITS), value="test", label="Split")
                count = gr.Slider(1, 256, value=16, step=1, label="Images")
            with gr.Row():
                scan_variant = gr.Dropdown(variant_choices(), value=VARIANTS[0], label="Compressed variant")
                scan_attribute = gr.Dropdown(list(ATTRIBUTES), value="Smiling", label="Attribute")
            with gr.Row():
                scan = gr.Button("Rank", variant="primary")
                cancel = gr.Button("Cancel")
            scan_status = gr.Markdown()
            ranking = gr.Dataframe(headers=["rank", "file", "target", "divergence", "V_f(x'_f)", "V_g(x'_f)", "V_g(x'_g)",
                                            "CRG_i", "DirSim_i"], interactive=False)

    RESULT_OUTPUTS = [teacher_cf, teacher_diff, student_cf, student_diff, cards, verdict, ig_teacher, ig_student,
                      occ_teacher, occ_student, attributions, raw, export_json, export_html]
    AUDIT_INPUTS = [upload, selected_face, variant, attribute, target, steps, guidance, seed]
    AUDIT_OUTPUTS = [aligned_view, status, chart, *RESULT_OUTPUTS]

    # -----------------------------------------------------------------------------------
    # Events
    # -----------------------------------------------------------------------------------
    gallery.select(select_gallery_face, None, [selected_face, upload, aligned_view], api_visibility="private")
    upload.upload(lambda: None, None, selected_face, api_visibility="private")
    run.click(run_audit, AUDIT_INPUTS, AUDIT_OUTPUTS, api_name="audit", concurrency_limit=HEAVY_CONCURRENCY,
              concurrency_id="heavy")
    refresh.click(benchmark_view, None, [benchmark_caption, benchmark_table, benchmark_plot], api_name="benchmark")
    scanning = scan.click(find_failures, [folder, split, count, scan_variant, scan_attribute],
                          [ranking, found_faces, scan_status], api_name="find_failures",
                          concurrency_limit=HEAVY_CONCURRENCY, concurrency_id="heavy")
    cancel.click(None, None, None, cancels=[scanning])
    ranking.select(select_failure, found_faces, [selected_face, upload, aligned_view, tabs], api_visibility="private").then(
        run_audit, AUDIT_INPUTS, AUDIT_OUTPUTS, concurrency_limit=HEAVY_CONCURRENCY, concurrency_id="heavy",
        api_visibility="private")

    demo.load(lambda: [gr.Dropdown(choices=variant_choices())] * 2, None, [variant, scan_variant],
              api_visibility="private")

demo.queue(max_size=256)


if __name__ == "__main__":
    warm_up()
    theme = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                              font_mono=["ui-monospace", "monospace"])  # system fonts: nothing fetched, offline
    demo.launch(theme=theme, max_file_size="40mb", show_error=True)
