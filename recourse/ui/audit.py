"""The Audit tab: a gallery or uploaded face, a variant, an attribute and a target; the audit
yields the predictions first, then the recourse of both models, their evidence, attributions
and downloads (``AuditTab.run_audit``)."""

from __future__ import annotations

import html
import json
import time
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import numpy as np
import torch
from gradio_client import handle_file
from PIL import Image

from recourse.audit.edit_path import divergence_sentence
from recourse.audit.pipeline import audit_steps
from recourse.audit.verdict import sizes_withheld
from recourse.data import ATTRIBUTES, to_float_images
from recourse.locations import assets_dir, variants_dir
from recourse.models import VARIANTS, variant_bits, variant_status
from recourse.render.audit_html import (
    attribution_table, evidence_table, predictions_chart, stops_summary, value_cards,
)
from recourse.render.methods import CONTROL_LABELS, METHOD_CHOICES, METHOD_CONTROLS, METHOD_NOTES, method_summary
from recourse.render.path_plot import path_svg
from recourse.render.pictures import display_pictures, enlarge, to_pil
from recourse.ui import limits
from recourse.ui.errors import EXPECTED_ERRORS, Refusal, unexpected, without_paths
from recourse.ui.serve.inputs import Bounded, Choice, UploadedImage, WholeNumber
from recourse.ui.serve.memory import give_back
from recourse.ui.settings import DEFAULTS, _number, deadline, method_from, picture_stop, settings_from
from recourse.ui.storage import export, shareable
from recourse.ui.texts import BUDGET_NOTE, GALLERY_LABEL, GLOSSARY
from recourse.ui.your_models import YourModels, black_box_passes, build_your_models, card_pair

EXAMPLE_PHOTO = assets_dir() / "examples" / "grace-hopper.jpg"
TARGETS = {"flip the full-precision decision": None, "1 (attribute present)": 1, "0 (attribute absent)": 0}


def gallery_faces() -> list[tuple[str, str]]:
    """``(png path, caption)`` of every gallery face; captions come from the provenance files."""
    faces_ = []
    # the project's home is read at each call: a notebook or a test may point it elsewhere after import
    for png in sorted((assets_dir() / "gallery").glob("*.png")):
        provenance = json.loads(png.with_suffix(".json").read_text()) if png.with_suffix(".json").is_file() else {}
        faces_.append((str(png), provenance.get("title", png.stem)))
    return faces_


def variant_choices() -> list[tuple[str, str]]:
    """Every variant, grouped by its bits per weight and labelled with why it cannot be used
    where it cannot (loads each once)."""
    choices = []
    for variant in VARIANTS:
        status = variant_status(variant)
        bits = variant_bits(variants_dir() / variant)
        label = f"{bits}-bit · {variant}" if bits is not None else variant
        choices.append((label if status is None else f"{label} ({status})", variant))
    return choices


def framed_tensor(pixels: np.ndarray) -> torch.Tensor:
    """``uint8 (H, W, 3)`` → ``(3, H, W)`` in [0, 1]."""
    return to_float_images(np.array(pixels, dtype=np.uint8).transpose(2, 0, 1).copy())


def chosen_image(upload: str | None, selected: np.ndarray | None):
    """An upload (a file path: aligned by the audit) wins over a gallery or ranked face
    (already framed pixels)."""
    if upload:
        return Path(upload)
    if selected is not None:
        return framed_tensor(np.asarray(selected, dtype=np.uint8))
    raise Refusal("Choose a face from the gallery or upload a photo first.")


def target_from(label: str):
    if label not in TARGETS:
        raise Refusal(f"unknown target {str(label)[:40]!r}; choose one of: {', '.join(TARGETS)}")
    return TARGETS[label]


def method_controls(method: str):
    """The method's own controls shown and the others hidden ("method" event): the note, then
    the denoiser steps, σ, the walks' most editing steps and the cone."""
    shown = METHOD_CONTROLS[method_from(method)]
    fields = ("edit_steps", "sigma", "finish_steps", "cone_degrees")
    return gr.update(value=METHOD_NOTES[method]), *(gr.update(visible=field in shown) for field in fields)


def follow_stop(attribute: str, method: str):
    """The margin slider moved to where ``attribute``'s pictures are shown with ``method`` by
    default ("attribute" and "method" events): the slider reads what the picture is."""
    return gr.update(value=picture_stop(attribute, method))


def select_gallery_face(event: gr.SelectData):
    path = gallery_faces()[event.index][0]
    pixels = np.asarray(Image.open(path).convert("RGB"))
    return pixels, None, enlarge(Image.fromarray(pixels), smooth=True)


@dataclass(frozen=True)
class PathState:
    """What the path view redraws from, kept per session: the face, each model's whole edit,
    both paths, the variant's name and whether the verdict compares the recourses' sizes."""

    face: torch.Tensor
    edits: tuple[torch.Tensor, torch.Tensor]  # the full-precision model's, the compressed model's
    paths: tuple
    variant: str
    sizes_compared: bool = True  # False: the captions give no "needs N% more" (recourse.audit.verdict.sizes_withheld)


def path_state(result) -> PathState | None:
    if not result.paths or result.teacher_edit is None or result.student_edit is None:
        return None
    return PathState(result.predictions.aligned, (result.teacher_edit, result.student_edit), result.paths,
                     result.predictions.variant, not sizes_withheld(result.recourse, result.face_logit))


def paths_view(state: PathState, alpha: float) -> str:
    """Both paths' plots, each marked at ``alpha``, with the sentence of where the models part."""
    compared = state.sizes_compared
    blocks = "".join(f'<figure class="recourse-path-figure">{path_svg(path, state.variant, alpha, compared)}'
                     f'<figcaption>{html.escape(divergence_sentence(path, state.variant, compared))}'
                     '</figcaption></figure>' for path in state.paths)
    return f'<div class="recourse-paths">{blocks}</div>'


def point_on_edits(state: PathState, alpha: float) -> list[Image.Image]:
    """Each model's edit at ``alpha`` of the way, as shown beside the plots."""
    return [enlarge(to_pil((state.face + alpha * (edit - state.face)).clamp(0, 1)), smooth=True)
            for edit in state.edits]


def initial_alpha(state: PathState) -> float:
    """Where the view opens: the visible stop on the full-precision model's path (its whole
    edit where the stop is never reached)."""
    stop = state.paths[0].stops.get("visible", state.paths[0].stops.get("stop"))
    return 1.0 if stop is None else round(float(stop), 4)


def show_path_point(position, state: PathState | None):
    """The path view moved to ``position`` (the "along the edits" slider)."""
    if state is None:
        return gr.update(), gr.update(), gr.update()
    alpha = float(_number("Position along the edits", position, 0.0, 1.0))
    return paths_view(state, alpha), *point_on_edits(state, alpha)


@dataclass(frozen=True, eq=False)
class AuditTab:
    """The Audit tab's components (build_audit_tab) and the events that fill its results."""

    gallery: gr.Gallery
    upload: UploadedImage
    variant: Choice
    attribute: Choice
    target: Choice
    margin: Bounded
    run: gr.Button
    method: Choice
    method_note: gr.Markdown
    edit_steps: Bounded
    sigma: Bounded
    steps: Bounded
    guidance: Bounded
    seed: WholeNumber
    models: YourModels | None  # local mode only
    status: gr.Markdown
    verdict: gr.Markdown
    original_view: gr.Image
    teacher_cf: gr.Image
    student_cf: gr.Image
    evidence: gr.HTML
    cards: gr.HTML
    teacher_diff: gr.Image
    student_diff: gr.Image
    ig_teacher: gr.Image
    ig_student: gr.Image
    occ_teacher: gr.Image
    occ_student: gr.Image
    attributions: gr.HTML
    chart: gr.HTML
    export_json: gr.File
    export_html: gr.File
    raw: gr.JSON
    paths: gr.HTML
    position: Bounded
    teacher_path_view: gr.Image
    student_path_view: gr.Image
    path_state: gr.State

    @property
    def result_outputs(self) -> list:
        """What an audit fills, the aligned face aside (it shows the chosen face until then)."""
        return [self.teacher_cf, self.teacher_diff, self.student_cf, self.student_diff, self.evidence, self.cards,
                self.verdict, self.ig_teacher, self.ig_student, self.occ_teacher, self.occ_student, self.attributions,
                self.raw, self.export_json, self.export_html, self.chart, self.status, self.paths,
                self.teacher_path_view, self.student_path_view, self.path_state, self.position]

    def clear_results(self):
        """Every result output emptied, so that nothing of an earlier audit stays under a new one
        (the position slider keeps its place until the next audit moves it)."""
        return [None] * (len(self.result_outputs) - 1) + [gr.update()]

    def _path_outputs(self, state: PathState | None) -> dict:
        if state is None:
            return {self.path_state: None, self.paths: None, self.teacher_path_view: None,
                    self.student_path_view: None}
        alpha = initial_alpha(state)
        teacher_view, student_view = point_on_edits(state, alpha)
        return {self.path_state: state, self.paths: paths_view(state, alpha), self.teacher_path_view: teacher_view,
                self.student_path_view: student_view, self.position: alpha}

    def run_audit(self, upload, selected, variant, attribute, target, steps, guidance, seed, margin,
                  method=DEFAULTS.method, edit_steps=DEFAULTS.edit_steps, sigma=DEFAULTS.sigma, model_card=None,
                  variant_card=None, progress=gr.Progress()):
        """The audit event: predictions are yielded first, then everything. ``model_card`` and
        ``variant_card`` (local mode only): audit "Your models" instead of ``variant``."""
        pair = card_pair(model_card, variant_card)  # first: a public app refuses card paths before anything
        image = chosen_image(upload, selected)
        settings = settings_from(steps, guidance, seed, margin, method, edit_steps, sigma, attribute)
        wanted = target_from(target)
        source = f"Uploaded photo {Path(upload).name}." if upload else "Gallery or ranked face."
        models = {}
        if pair is not None:
            from recourse.foreign.pairs import require

            try:
                require(pair, attribute)
            except ValueError as error:
                raise Refusal(str(error)) from None
            variant, models = pair.name, {"teacher": pair.teacher, "student": pair.student}
        passes = pair.black_box.forward_passes if pair is not None and pair.black_box is not None else 0
        # checked after decoding, aligning, each counterfactual and each attribution
        in_time = deadline(time.perf_counter(), limits.AUDIT_SECONDS, "audit",
                           "lower the steps (Generator settings) or the margin")
        try:
            for step in audit_steps(image, variant=variant, attribute=attribute, target=wanted, settings=settings,
                                    **models, check=in_time):
                progress(step.fraction, desc=step.stage)
                in_time(step.stage)
                p = step.predictions
                if step.stage == "predictions":
                    framed = to_pil(p.display if p.display is not None else p.aligned)
                    yield {self.original_view: enlarge(framed, smooth=True),
                           self.status: f"**Alignment:** {p.alignment} · generating recourse…",
                           self.chart: predictions_chart(p, variant)}
                elif step.result is None:
                    # a yield after every stage: Gradio stops iterating here once the caller has gone
                    yield {self.status: f"**Alignment:** {p.alignment} · {step.stage} done, working on…"}
                else:
                    result = step.result
                    pictures = display_pictures(result)
                    json_file, html_file = export(result, source)
                    yield {
                        self.original_view: pictures["aligned"], self.chart: predictions_chart(p, variant),
                        self.teacher_cf: pictures["teacher_counterfactual"],
                        self.teacher_diff: pictures["teacher_difference"],
                        self.student_cf: pictures["student_counterfactual"],
                        self.student_diff: pictures["student_difference"],
                        self.evidence: evidence_table(result, variant), self.cards: value_cards(result),
                        self.verdict: f"### {result.verdict}",
                        self.ig_teacher: pictures["integrated-gradients_teacher"],
                        self.ig_student: pictures["integrated-gradients_student"],
                        self.occ_teacher: pictures["occlusion_teacher"],
                        self.occ_student: pictures["occlusion_student"],
                        self.attributions: attribution_table(result), self.raw: shareable(result.to_dict()),
                        self.export_json: json_file, self.export_html: html_file,
                        self.status: (f"**Alignment:** {p.alignment} · "
                                      f"{method_summary(settings.counterfactual, attribute)} · "
                                      f"{stops_summary(result)} · "
                                      f"audit took {result.seconds['total']:.2f} s{black_box_passes(pair, passes)}"),
                        **self._path_outputs(path_state(result)),
                    }
        except gr.Error:
            raise
        except EXPECTED_ERRORS as error:
            raise Refusal(without_paths(error)) from None
        except Exception as error:  # noqa: BLE001 — a public app answers every request
            raise unexpected(error) from None
        finally:
            give_back()  # what the audit freed goes back to the system (recourse.ui.serve.memory)


def _image_options() -> tuple[dict, dict]:
    """The result pictures' options, and the three faces' (the same without a download button)."""
    image_options = {"type": "pil", "format": "png", "interactive": False, "buttons": ["download"],
                     "min_width": 100}
    # No download button on the three faces: at 390 px it covers their captions, and
    # the audit's download below carries all three.
    face_options = {**image_options, "buttons": []}
    return image_options, face_options


def _face_inputs() -> tuple[gr.Gallery, UploadedImage]:
    """The gallery, then the upload beside its example photo."""
    gallery = gr.Gallery(gallery_faces(), label=GALLERY_LABEL, columns=6, rows=1, height=150,
                         allow_preview=False, elem_id="gallery")
    with gr.Row(equal_height=True):
        upload = UploadedImage(label="…or upload a photo (the face is found and aligned)", type="filepath",
                               sources=["upload"], height=90, buttons=[], elem_id="upload", scale=3,
                               min_width=160)
        with gr.Column(scale=1, min_width=90):
            gr.Examples([[str(EXAMPLE_PHOTO)]], inputs=[upload], label="Example")
    return gallery, upload


def _audit_choices() -> tuple[Choice, Choice, Choice, Bounded]:
    """The variant and the attribute in a row, then the target decision and the margin."""
    with gr.Row():
        variant = Choice(list(VARIANTS), value=VARIANTS[0], label="Compressed variant", min_width=140)
        attribute = Choice(list(ATTRIBUTES), value="Smiling", label="Attribute", min_width=140)
    with gr.Row():
        target = Choice(list(TARGETS), value=next(iter(TARGETS)), label="Target decision",
                        min_width=400)  # a row of its own: its choices read whole
        # at the attribute's own stop, and moved there when the attribute or the method changes
        margin = Bounded(0, limits.MAX_MARGIN, value=picture_stop(attribute.value), step=0.25, elem_id="margin",
                         min_width=400, label="Pictures at margin (0 = boundary)")
    return variant, attribute, target, margin


def _generator_settings() -> tuple[Choice, gr.Markdown, Bounded, Bounded, Bounded, Bounded, WholeNumber]:
    """The folded generator settings: the method, its note, its controls and the seed."""
    with gr.Accordion("Generator settings", open=False):
        # only the chosen method's controls are shown (method_controls)
        used = METHOD_CONTROLS[DEFAULTS.method]
        method = Choice(METHOD_CHOICES, value=DEFAULTS.method, label="Counterfactual method", elem_id="method")
        method_note = gr.Markdown(METHOD_NOTES[DEFAULTS.method], elem_id="method-note")
        edit_steps = Bounded(1, limits.MAX_EDIT_STEPS, value=DEFAULTS.edit_steps, step=1,
                             label=CONTROL_LABELS["edit_steps"], visible="edit_steps" in used)
        sigma = Bounded(*limits.SIGMAS, value=DEFAULTS.sigma, step=0.02, label=CONTROL_LABELS["sigma"],
                        visible="sigma" in used)
        steps = Bounded(10, limits.MAX_STEPS, value=DEFAULTS.finish_steps, step=10,
                        label=CONTROL_LABELS["finish_steps"], visible="finish_steps" in used)
        guidance = Bounded(limits.MIN_CONE, 90, value=DEFAULTS.cone_degrees, step=1,
                           label=CONTROL_LABELS["cone_degrees"], visible="cone_degrees" in used)
        seed = WholeNumber(value=DEFAULTS.seed, precision=0, minimum=0, maximum=2**31 - 1,
                           label=CONTROL_LABELS["seed"])
        if limits.PUBLIC:
            gr.Markdown(BUDGET_NOTE, elem_id="budget")
    return method, method_note, edit_steps, sigma, steps, guidance, seed


def _verdict_and_faces(face_options: dict) -> tuple[gr.Markdown, gr.Markdown, gr.Image, gr.Image, gr.Image,
                                                    gr.HTML, gr.HTML]:
    """The status and the verdict, the three faces in a row, the evidence and the value cards."""
    status = gr.Markdown("Choose a face and press **Audit**.", label="Status", elem_id="status")
    verdict = gr.Markdown(label="Verdict", elem_id="verdict")
    with gr.Row(equal_height=True, elem_classes="faces"):
        original_view = gr.Image(label="Face x", elem_id="aligned", **face_options)
        teacher_cf = gr.Image(label="Full precision x'_f", elem_id="teacher-cf", **face_options)
        student_cf = gr.Image(label="Compressed x'_g", elem_id="student-cf", **face_options)
    evidence = gr.HTML(label="Probabilities before and after", elem_id="evidence")
    cards = gr.HTML(label="Per-image values", elem_id="value-cards")
    return status, verdict, original_view, teacher_cf, student_cf, evidence, cards


def _recourse_paths(face_options: dict) -> tuple[gr.HTML, gr.Image, gr.Image, Bounded, gr.State]:
    """The open paths accordion: both plots, each model's edit at the slider, the slider and the
    path view's state."""
    with gr.Accordion("Where the two models part along each edit (the recourse paths)", open=True,
                      elem_id="recourse-paths"):
        paths = gr.HTML(label="Recourse paths", elem_id="path-plots")
        with gr.Row(equal_height=True):
            # small: the plots say where; these show what the face looks like there
            path_view = {**face_options, "height": 150, "min_width": 120}
            teacher_path_view = gr.Image(label="Full-precision edit, at the slider", elem_id="teacher-path-view",
                                         **path_view)
            student_path_view = gr.Image(label="Compressed edit, at the slider", elem_id="student-path-view",
                                         **path_view)
        position = Bounded(0, 1, value=1, step=1 / 32, label="Along the edits (share of each model's whole edit)",
                           elem_id="path-position")
        state = gr.State(None)
    return paths, teacher_path_view, student_path_view, position, state


def _differences_and_attributions(image_options: dict) -> tuple[gr.Image, gr.Image, gr.Image, gr.Image, gr.Image,
                                                                gr.Image, gr.HTML]:
    """The folded difference pictures, then the folded attributions with their agreement."""
    with gr.Accordion("Where each recourse changes the face", open=False):
        with gr.Row():
            teacher_diff = gr.Image(label="x'_f − x (red brighter, blue darker)", **image_options)
            student_diff = gr.Image(label="x'_g − x (red brighter, blue darker)", **image_options)
    with gr.Accordion("Attributions (Captum)", open=False):
        with gr.Row():
            ig_teacher = gr.Image(label="IntegratedGradients: full precision", **image_options)
            ig_student = gr.Image(label="IntegratedGradients: fake-quantized twin", **image_options)
            occ_teacher = gr.Image(label="Occlusion: full precision", **image_options)
            occ_student = gr.Image(label="Occlusion: deployed compressed model", **image_options)
        attributions = gr.HTML(label="Attribution agreement")
    return teacher_diff, student_diff, ig_teacher, ig_student, occ_teacher, occ_student, attributions


def _predictions_downloads_and_values() -> tuple[gr.HTML, gr.File, gr.File, gr.JSON]:
    """The folded predictions chart, downloads, all values and glossary."""
    with gr.Accordion("Both models' predictions", open=False):
        chart = gr.HTML(label="Predictions", elem_id="predictions")
    with gr.Accordion("Download this audit (JSON, one-page HTML report)", open=False):  # no empty boxes
        with gr.Row(elem_classes="downloads"):
            export_json = gr.File(label="Audit as JSON", interactive=False)
            export_html = gr.File(label="One-page report (HTML)", interactive=False)
    with gr.Accordion("All values", open=False):
        raw = gr.JSON(label="All values")
    with gr.Accordion("Glossary", open=False):
        gr.Markdown(GLOSSARY)
    return chart, export_json, export_html, raw


def build_audit_tab() -> AuditTab:
    """The tab's contents: the choices on the left, the verdict and the faces on the right, the
    rest folded below."""
    image_options, face_options = _image_options()
    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=300):
            gallery, upload = _face_inputs()
            variant, attribute, target, margin = _audit_choices()
            # the button above the folded settings: it stays on a 1280×800 first screen
            run = gr.Button("Audit", variant="primary", elem_id="run-audit")
            method, method_note, edit_steps, sigma, steps, guidance, seed = _generator_settings()
            models = None if limits.PUBLIC else build_your_models()
        with gr.Column(scale=3, min_width=300):
            status, verdict, original_view, teacher_cf, student_cf, evidence, cards = _verdict_and_faces(face_options)
    paths, teacher_path_view, student_path_view, position, state = _recourse_paths(face_options)
    (teacher_diff, student_diff, ig_teacher, ig_student, occ_teacher, occ_student,
     attributions) = _differences_and_attributions(image_options)
    chart, export_json, export_html, raw = _predictions_downloads_and_values()
    # The API page's example upload is a face, not gradio's default picture.
    upload.example_payload = lambda: handle_file(str(EXAMPLE_PHOTO.relative_to(assets_dir().parent)))
    upload.example_value = upload.example_payload
    return AuditTab(gallery, upload, variant, attribute, target, margin, run, method, method_note, edit_steps, sigma,
                    steps, guidance, seed, models, status, verdict, original_view, teacher_cf, student_cf, evidence,
                    cards, teacher_diff, student_diff, ig_teacher, ig_student, occ_teacher, occ_student, attributions,
                    chart, export_json, export_html, raw, paths, position, teacher_path_view, student_path_view,
                    state)
