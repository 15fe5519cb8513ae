"""The recourse audit app: ``python app.py`` (offline, CPU), also a Hugging Face Space.

Thin by design: these functions only convert UI values, call the library and convert its
results back (``recourse.render`` draws). Plain functions first, then the layout, then events.

Public mode (on a Space, detected from ``SPACE_ID``, or with ``RECOURSE_PUBLIC=1``): the
failure scan never takes a server path; it ranks uploaded photos, the gallery, or the
folders an operator lists in ``RECOURSE_SCAN_ROOTS`` (shown by name only). Every request
goes through the queue (the direct ``/run`` routes are closed), each caller may have a few
requests queued and upload so much per window, and audits and scans keep to a cost budget.

Local mode only: "Your models" audits an auditor's own pair, given as two model cards
(``recourse.foreign``); a public app has no such control, and its audit refuses card paths, so
a stranger can never make the server read a file of its choosing.

Always: uploads reach the app as checked paths in Gradio's upload folder and are decoded by
``recourse.faces`` only (``recourse.inputs``); request bodies are capped
(``recourse.request_limits``).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import replace
from pathlib import Path

import gradio as gr
from gradio_client import handle_file
import numpy as np
import torch
from PIL import Image

from recourse import faces
from recourse.audit import (
    COMMITTED, AuditSettings, audit_image, audit_steps, judge_says, minimal_recourse, model_resolution,
    resolve_identity, resolve_strong_judge,
)
from recourse.benchmark import BenchmarkResult
from recourse.checkpoints import CheckpointError
from recourse.data import ATTRIBUTES, SPLITS, DatasetError, to_float_images
from recourse.generation import METHODS, CounterfactualConfig
from recourse.inputs import Choice, OneOf, UploadedFiles, UploadedImage, WholeNumber
from recourse.instance_folder import claim, prune_abandoned
from recourse.memory import give_back, limit_arenas
from recourse.models import VARIANTS, load_generator, load_judge, load_teacher, variant_bits, variant_status
from recourse.paths import assets_dir, variants_dir
from recourse.progress import StageCheck, no_check
from recourse.render.audit_html import (
    attribution_table, audit_record, evidence_table, predictions_chart, report_html, value_cards,
)
from recourse.render.benchmark import accuracy_plot, display_rows
from recourse.render.methods import CONTROL_LABELS, METHOD_CHOICES, METHOD_CONTROLS, METHOD_NOTES, method_summary
from recourse.render.pictures import display_pictures, enlarge, to_pil
from recourse.request_limits import RequestLimits, client_of
from recourse.scan import FolderCase, read_folder, scan_images

GALLERY = assets_dir() / "gallery"
EXAMPLE_PHOTO = assets_dir() / "examples" / "grace-hopper.jpg"
BENCHMARKS = {"test split, denoised generator": "benchmark-denoised.json",
              "validation margin sweep, denoised generator": "results/val-sweep-denoised.json",
              "test split, cone walk (superseded)": "benchmark.json",
              "test split, cone walk, second run on other faces": "benchmark-second.json",
              "validation margin sweep, cone walk": "benchmark-val-sweep.json"}
TARGETS = {"flip the full-precision decision": None, "1 (attribute present)": 1, "0 (attribute absent)": 0}
DEFAULTS = minimal_recourse()
PUBLIC = bool(os.environ.get("SPACE_ID")) or os.environ.get("RECOURSE_PUBLIC") == "1"
SCAN_ROOTS = {Path(p).name: Path(p) for p in os.environ.get("RECOURSE_SCAN_ROOTS", "").split(os.pathsep) if p}
MAX_SCAN_IMAGES = 64 if PUBLIC else 256
# The cost budget. In public mode each method's steps, the margin and the cone are held
# below what the library allows (walk steps 400, cone 0 and margin 10 made a 62 s audit), a
# scan may spend at most so many of the method's steps in all (faces × steps), and audits and
# scans stop at a wall-time limit, checked after each stage of an audit and each face of a scan.
MAX_STEPS = 120 if PUBLIC else 400  # the walks' editing steps; 120: the default
# The denoised method's optimiser steps: each is a pass through the face denoiser and back,
# about 40 walk steps' worth (24, the default, take about 2 s a counterfactual on 2 cores).
MAX_EDIT_STEPS = 48 if PUBLIC else 200
SIGMAS = (0.02, 1.0)  # the noise levels the committed face denoiser was trained on
MAX_MARGIN = 3.0 if PUBLIC else 10.0
MIN_CONE = 10.0 if PUBLIC else 0.0
MAX_SCAN_WORK = 16 * 120 if PUBLIC else MAX_SCAN_IMAGES * 400  # walk steps
MAX_SCAN_EDIT_WORK = 16 * 24 if PUBLIC else MAX_SCAN_IMAGES * 200  # denoiser steps
AUDIT_SECONDS = 90.0 if PUBLIC else math.inf
SCAN_SECONDS = 300.0 if PUBLIC else math.inf
# What one caller may send (recourse.request_limits): a body (uploads excepted) of at most
# 1 MB (no input of this app needs more: images come as uploads), uploads of at most
# UPLOAD_QUOTA bytes per UPLOAD_WINDOW_S, and MAX_QUEUED requests waiting or running.
MAX_BODY_BYTES = 2**20
UPLOAD_QUOTA = (200 if PUBLIC else 10_000) * 2**20
UPLOAD_WINDOW_S = 600.0
PUBLIC_MAX_QUEUED = 4
MAX_QUEUED = PUBLIC_MAX_QUEUED if PUBLIC else 1000
QUEUE_SIZE = 64 if PUBLIC else 256
# Two heavy requests at a time on two cores; the rest wait in the queue (never dropped).
HEAVY_CONCURRENCY = int(os.environ.get("RECOURSE_APP_CONCURRENCY", "2"))
# Sessions whose outputs Gradio keeps in memory (its default, 10,000, lets every API call's
# session hold its audit's pictures and tables until ten thousand more have come).
SESSIONS_KEPT = 200 if PUBLIC else 10_000
EXPECTED_ERRORS = (ValueError, CheckpointError, DatasetError, OSError)  # bad input, missing or broken checkpoints
# Each running app keeps its uploads, Gradio's cache and its exports in a folder of its own
# inside the shared temporary folder (recourse.instance_folder): it cleans only what it made,
# and what a killed instance left once nobody holds it. Children (tests' app processes) share
# the same base instead of nesting in this instance's folder.
TEMP_BASE = Path(os.environ.get("RECOURSE_TEMP_BASE") or os.environ.get("GRADIO_TEMP_DIR")
                 or Path(tempfile.gettempdir()) / "gradio")
os.environ["RECOURSE_TEMP_BASE"] = str(TEMP_BASE)
INSTANCE = claim(TEMP_BASE)
os.environ["GRADIO_TEMP_DIR"] = str(INSTANCE.sub("gradio"))  # read by every Gradio component built below
EXPORTS = INSTANCE.sub("gradio") / "exports"  # inside Gradio's cache: served from where they are, not copied
EXPORT_LIFETIME_S = 900 if PUBLIC else 3600  # a public app writes about 1.3 MB an audit: bounded disk
_EXPORT_LOCK = threading.Lock()

BUDGET_NOTE = (f"This public app's budget: the denoised method at most {MAX_EDIT_STEPS} denoiser steps (optimiser "
               f"steps through the face denoiser; at the default {DEFAULTS.edit_steps} a counterfactual takes about "
               f"2 s on 2 cores, and an audit makes two), the walks at most {MAX_STEPS} editing steps and a cone of at "
               f"least {MIN_CONE:g}°; a margin of at most {MAX_MARGIN:g}. An audit stops after {AUDIT_SECONDS:.0f} s, "
               f"a scan after {SCAN_SECONDS:.0f} s and at most {MAX_SCAN_EDIT_WORK} denoiser steps or "
               f"{MAX_SCAN_WORK} editing steps in all (faces × steps); uploads of "
               f"{faces.MAX_UPLOAD_BYTES // 2**20} MB a file and {UPLOAD_QUOTA // 2**20} MB per "
               f"{UPLOAD_WINDOW_S / 60:g} minutes.")

GLOSSARY = """
- **Recourse** `x'`: the smallest realistic change of the face that makes a model decide the target.
  `x'_f` is guided by the full-precision model, `x'_g` by the compressed one (same seed).
- **V_f(x'_f)**: does the full-precision model accept its own recourse? **V_g(x'_f)**: does the
  compressed model accept the full-precision recourse (no = a *validity drop*)? **V_g(x'_g)**:
  does it accept its own?
- **cost** `c = mean |x' − x|` (0–1 scale). **CRG_i** `= |c_g − c_f| / c_f`: how different the two
  recourses are in size (0 = equal). **DirSim_i** `= 100 · cos(x'_f − x, x'_g − x)`: 100 = same direction.
- **Margin**: how far past the decision boundary (in logits) each recourse is pushed; 0 = the
  smallest change that flips the decision, where compressed models disagree most.
- **Attributions** (Captum): which pixels raise (red) or lower (blue) the attribute's logit;
  Spearman ρ and top-10% IoU compare the two models' maps.
- Definitions: `docs/metrics.md` in the repository.
"""


# ---------------------------------------------------------------------------------------
# Plain functions
# ---------------------------------------------------------------------------------------


def gallery_faces() -> list[tuple[str, str]]:
    """``(png path, caption)`` of every gallery face; captions come from the provenance files."""
    faces_ = []
    for png in sorted(GALLERY.glob("*.png")):
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
    raise gr.Error("Choose a face from the gallery or upload a photo first.")


def _number(name: str, value, low: float, high: float, whole: bool = False) -> float:
    """A setting from a request, refused unless it is a finite real number in ``[low, high]``
    (a whole one where ``whole``). ``True`` is not a number here, though Python counts it as 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise gr.Error(f"{name} must be a number, got {str(value)[:40]!r}")
    if whole and value != int(value):
        raise gr.Error(f"{name} must be a whole number, got {value:g}")
    if not low <= value <= high:
        raise gr.Error(f"{name} must be between {low:g} and {high:g} here, got {value:g}")
    return value


def settings_from(steps: float, cone: float, seed: float, margin: float, method: str = DEFAULTS.method,
                  edit_steps: float = DEFAULTS.edit_steps, sigma: float = DEFAULTS.sigma) -> AuditSettings:
    """The audit's settings from the screen, within this app's budget: ``steps`` is the walks'
    most editing steps, ``cone`` the angle around the robust guide's gradient (pca-walk-cone),
    ``edit_steps`` and ``sigma`` the denoised method's. Every value is checked, also those the
    chosen method does not read: they are saved with the result."""
    method = method_from(method)
    steps = int(_number("Most editing steps", steps, 1, MAX_STEPS, whole=True))
    cone = float(_number("Cone", cone, MIN_CONE, 90))
    edit_steps = int(_number("Denoiser steps", edit_steps, 1, MAX_EDIT_STEPS, whole=True))
    sigma = float(_number("Noise level σ", sigma, *SIGMAS))
    seed = int(_number("Seed", seed, 0, 2**31 - 1, whole=True))
    margin = float(_number("Margin", margin, 0, MAX_MARGIN))
    try:
        return AuditSettings(replace(DEFAULTS, method=method, finish_steps=steps, cone_degrees=cone,
                                     edit_steps=edit_steps, sigma=sigma, seed=seed, margin=margin))
    except (TypeError, ValueError, OverflowError) as error:
        raise gr.Error(f"Generator settings: {_public(error)}") from None


def method_from(name) -> str:
    """A counterfactual method's name from a request, refused unless it is one of METHODS:
    the config does not check it, and ``generate`` would refuse it only after the predictions."""
    if not isinstance(name, str) or name not in METHODS:
        raise gr.Error(f"unknown counterfactual method {str(name)[:40]!r}; choose one of: {', '.join(METHODS)}")
    return name


def method_controls(method: str):
    """The method's own controls shown and the others hidden ("method" event): the note, then
    the denoiser steps, σ, the walks' most editing steps and the cone."""
    shown = METHOD_CONTROLS[method_from(method)]
    fields = ("edit_steps", "sigma", "finish_steps", "cone_degrees")
    return gr.update(value=METHOD_NOTES[method]), *(gr.update(visible=field in shown) for field in fields)


def scan_count(count, config: CounterfactualConfig) -> int:
    """How many faces a scan ranks: what was asked, within MAX_SCAN_IMAGES and the budget of
    the chosen method's steps (faces × steps): MAX_SCAN_EDIT_WORK denoiser steps for the
    denoised method, MAX_SCAN_WORK editing steps for the walks."""
    count = int(_number("Faces", count, 1, MAX_SCAN_IMAGES, whole=True))
    if config.method == "denoised":
        steps, budget, unit = config.edit_steps, MAX_SCAN_EDIT_WORK, "denoiser steps"
    else:
        steps, budget, unit = config.finish_steps, MAX_SCAN_WORK, "editing steps"
    affordable = max(1, budget // max(1, steps))
    if count > affordable:
        raise gr.Error(f"{count} faces at {steps} {unit} is more than this app's budget of {budget} {unit} a scan; "
                       f"rank at most {affordable} faces, or lower the steps")
    return count


def target_from(label: str):
    if label not in TARGETS:
        raise gr.Error(f"unknown target {str(label)[:40]!r}; choose one of: {', '.join(TARGETS)}")
    return TARGETS[label]


def _public(error: BaseException) -> str:
    """An error's message without server paths."""
    message = str(error)
    for name, root in SCAN_ROOTS.items():  # a listed folder is shown by its name only
        message = message.replace(str(root), name).replace(str(root.resolve()), name)
    for path in (str(assets_dir().parent), str(Path.cwd()), tempfile.gettempdir(), str(Path.home())):
        message = message.replace(path + os.sep, "").replace(path, "…")
    return message[:500]


def _shareable(record: dict) -> dict:
    """An audit's record as a public app gives it out: without the server's library versions."""
    return {key: value for key, value in record.items() if key != "versions"} if PUBLIC else record


def _shareable_result(result):
    """An audit as a public app gives it out, in every form (the HTML report included): without
    the server's library versions."""
    return replace(result, versions={}) if PUBLIC else result


def _unexpected(error: BaseException) -> gr.Error:
    traceback.print_exception(error)  # the server's log keeps the details
    return gr.Error("Something went wrong inside the app (logged on the server). Try again or choose other settings.")


def _prune_exports() -> None:
    """Remove export folders older than an hour (also those left by an earlier run). Other
    audits may prune at the same time, so a folder that vanishes meanwhile is fine."""
    if not EXPORTS.is_dir():
        return
    for old in list(EXPORTS.iterdir()):
        try:
            if time.time() - old.stat().st_mtime > EXPORT_LIFETIME_S:
                shutil.rmtree(old, ignore_errors=True)
        except FileNotFoundError:
            continue


def _export(result, source: str) -> tuple[str, str]:
    """The audit as JSON and as a one-page HTML report, in a fresh folder of its own."""
    with _EXPORT_LOCK:
        _prune_exports()
        EXPORTS.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="audit-", dir=EXPORTS))
    stem = f"audit-{result.predictions.variant}-{result.predictions.attribute}"
    json_path, html_path = folder / f"{stem}.json", folder / f"{stem}.html"
    result = _shareable_result(result)
    json_path.write_text(json.dumps({"image": source, **_shareable(audit_record(result))}, indent=2) + "\n")
    html_path.write_text(report_html(result, source))
    return str(json_path), str(html_path)


YOUR_MODELS_SCAN_NOTE = ("Where **Your models** on the Audit tab names model cards, that pair is ranked in place of "
                         "the compressed variant (its attributes only).")
PUBLIC_CARDS_REFUSED = "This public app audits only its committed models; model cards are read in local mode only."


def card_pair(model_card: str | None, variant_card: str | None):
    """The pair of "Your models" (recourse.foreign.pairs), or None when no variant card is
    given. Refused outright in public mode: a card path is a path on the server."""
    model_card, variant_card = (str(v).strip() if v else "" for v in (model_card, variant_card))
    if not variant_card and not model_card:
        return None
    if PUBLIC:
        raise gr.Error(PUBLIC_CARDS_REFUSED)
    if not variant_card:
        raise gr.Error("Give the compressed model's card too (the full-precision card alone has nothing to audit).")
    from recourse.foreign.loaders import ForeignModelError
    from recourse.foreign.pairs import cached_pair

    try:
        return cached_pair(model_card or None, variant_card)
    except (ForeignModelError, ValueError, OSError, ImportError) as error:
        raise gr.Error(f"Your models: {error}") from None


def use_cards(model_card, variant_card, attribute, scan_attribute=None):
    """The "Use these models" event: load both cards and offer only the attributes both predict,
    on the Audit tab and on Find failures (which ranks the same pair)."""
    pair = card_pair(model_card, variant_card)
    offered = list(ATTRIBUTES) if pair is None else list(pair.attributes)
    dropdowns = [gr.Dropdown(choices=offered, value=value if value in offered else offered[0])
                 for value in (attribute, scan_attribute or attribute)]
    if pair is None:
        return *dropdowns, "Auditing the committed models."
    kind = "a black box: gradients estimated from forward passes" if pair.black_box is not None else "differentiable"
    return (*dropdowns,
            f"Auditing **{pair.name}** ({kind}) against "
            f"{'your full-precision model' if model_card else 'the committed classifier'}; "
            f"{len(pair.attributes)} attributes both predict. Find failures ranks this pair too. Clear both boxes to go "
            "back to the committed models.")


def black_box_passes(pair, before: int) -> str:
    """What a black-box variant's forward passes came to since ``before`` (empty for others)."""
    if pair is None or pair.black_box is None:
        return ""
    return f" · {pair.name} is a black box: {pair.black_box.forward_passes - before:,} forward passes"


def clear_results():
    """Every result output emptied, so that nothing of an earlier audit stays under a new one."""
    return [None] * len(RESULT_OUTPUTS)


def run_audit(upload, selected, variant, attribute, target, steps, guidance, seed, margin, method=DEFAULTS.method,
              edit_steps=DEFAULTS.edit_steps, sigma=DEFAULTS.sigma, model_card=None, variant_card=None,
              progress=gr.Progress()):
    """The audit event: predictions are yielded first, then everything. ``model_card`` and
    ``variant_card`` (local mode only): audit "Your models" instead of ``variant``."""
    pair = card_pair(model_card, variant_card)  # first: a public app refuses card paths before anything
    image = chosen_image(upload, selected)
    settings = settings_from(steps, guidance, seed, margin, method, edit_steps, sigma)
    wanted = target_from(target)
    source = f"Uploaded photo {Path(upload).name}." if upload else "Gallery or ranked face."
    models = {}
    if pair is not None:
        from recourse.foreign.pairs import require

        try:
            require(pair, attribute)
        except ValueError as error:
            raise gr.Error(str(error)) from None
        variant, models = pair.name, {"teacher": pair.teacher, "student": pair.student}
    passes = pair.black_box.forward_passes if pair is not None and pair.black_box is not None else 0
    # checked after decoding, aligning, each counterfactual and each attribution
    in_time = _deadline(time.perf_counter(), AUDIT_SECONDS, "audit",
                        "lower the steps (Generator settings) or the margin")
    try:
        for step in audit_steps(image, variant, attribute, wanted, settings, **models, check=in_time):
            progress(step.fraction, desc=step.stage)
            in_time(step.stage)
            p = step.predictions
            if step.stage == "predictions":
                framed = to_pil(p.display if p.display is not None else p.aligned)
                yield {original_view: enlarge(framed, smooth=True), status: f"**Alignment:** {p.alignment} · generating recourse…",
                       chart: predictions_chart(p, variant)}
            elif step.result is None:
                # a yield after every stage: Gradio stops iterating here once the caller has gone
                yield {status: f"**Alignment:** {p.alignment} · {step.stage} done, working on…"}
            else:
                result = step.result
                pictures = display_pictures(result)
                json_file, html_file = _export(result, source)
                yield {
                    original_view: pictures["aligned"], chart: predictions_chart(p, variant),
                    teacher_cf: pictures["teacher_counterfactual"], teacher_diff: pictures["teacher_difference"],
                    student_cf: pictures["student_counterfactual"], student_diff: pictures["student_difference"],
                    evidence: evidence_table(result, variant), cards: value_cards(result),
                    verdict: f"### {result.verdict}",
                    ig_teacher: pictures["integrated-gradients_teacher"],
                    ig_student: pictures["integrated-gradients_student"],
                    occ_teacher: pictures["occlusion_teacher"], occ_student: pictures["occlusion_student"],
                    attributions: attribution_table(result), raw: _shareable(result.to_dict()),
                    export_json: json_file, export_html: html_file,
                    status: (f"**Alignment:** {p.alignment} · {method_summary(settings.counterfactual)} · "
                             f"margin {settings.counterfactual.margin:g} · "
                             f"audit took {result.seconds['total']:.2f} s{black_box_passes(pair, passes)}"),
                }
    except gr.Error:
        raise
    except EXPECTED_ERRORS as error:
        raise gr.Error(_public(error)) from None
    except Exception as error:  # noqa: BLE001 — a public app answers every request
        raise _unexpected(error) from None
    finally:
        give_back()  # what the audit freed goes back to the system (recourse.memory)


def _deadline(started: float, limit: float, what: str, advice: str) -> StageCheck:
    """A stage check that stops the work once it has run past ``limit`` seconds."""
    return lambda stage: _within(started, limit, what, advice)


def _within(started: float, limit: float, what: str, advice: str) -> None:
    """Stop an audit or scan that has run past its wall-time limit (the budget of public mode)."""
    if time.perf_counter() - started > limit:
        raise gr.Error(f"This {what} ran past this app's limit of {limit:.0f} s and was stopped; {advice}.")


def select_gallery_face(event: gr.SelectData):
    path = gallery_faces()[event.index][0]
    pixels = np.asarray(Image.open(path).convert("RGB"))
    return pixels, None, enlarge(Image.fromarray(pixels), smooth=True)


def first_benchmark_run() -> str:
    """The first run whose file is committed (the denoised run while it is still running: the next)."""
    return next((run for run, name in BENCHMARKS.items() if (assets_dir() / name).is_file()), next(iter(BENCHMARKS)))


def benchmark_view(run: str | None = None):
    """One benchmark run: its caption, its table and accuracy plotted against VD, CRG and DirSim."""
    run = first_benchmark_run() if run is None else run
    name = BENCHMARKS.get(run)
    if name is None:
        raise gr.Error(f"unknown benchmark run; choose one of: {', '.join(BENCHMARKS)}")
    path = assets_dir() / name
    if not path.is_file():
        return (f"**No {run} benchmark yet.** Run `python -m recourse benchmark --data PATH --split test --tasks 180 "
                f"--out DIR` and copy its `benchmark.json` to `assets/{name}`.", None, None)
    try:
        result = BenchmarkResult.from_dict(json.loads(path.read_text()))
    except (json.JSONDecodeError, ValueError) as error:
        return f"**assets/{name} is not a benchmark file** ({_public(error)}).", None, None
    import pandas as pd

    headers, cells = display_rows(result)
    caption = (f"**{run}**: `{result.command}` on {result.date}, N = {result.n} recourse tasks "
               f"({', '.join(result.attributes)}). Lower VD and CRG and higher DirSim mean the compressed model "
               "keeps the full-precision recourse. Definitions: docs/metrics.md; intervals and paired differences: "
               f"assets/{name.replace('.json', '.md')}.")
    return caption, pd.DataFrame(cells, columns=headers), accuracy_plot(result)


def _scan_inputs(source: str, folder: str, root: str, split: str, count: int, photos: list | None, resolution: int,
                 check: StageCheck = no_check):
    """Names and framed images to rank, from the chosen source; ``check`` after each photo is
    decoded and aligned. A photo named twice is ranked once."""
    if source == "gallery faces":
        chosen = gallery_faces()[:count]
        return (tuple(caption for _, caption in chosen),
                [framed_tensor(np.asarray(Image.open(path).convert("RGB"))) for path, _ in chosen])
    if source == "uploaded photos":
        if not photos:
            raise gr.Error("Upload one or more photos to rank.")
        names, images = [], []
        for photo in list(dict.fromkeys(photos))[:count]:  # checked paths in the upload folder (UploadedFiles)
            path = Path(photo)
            try:
                images.append(to_float_images(faces.align_face(path, resolution).image))
                names.append(path.name)
            except faces.FaceAlignmentError as error:
                gr.Warning(f"{path.name}: {_public(error)}; left out")
            check("align")
        if not images:
            raise gr.Error("None of the uploaded photos has a face that could be aligned.")
        return tuple(names), images
    if source == "listed folder":
        if root not in SCAN_ROOTS:
            raise gr.Error("Choose one of the listed folders.")
        names, images = read_folder(SCAN_ROOTS[root], split, count, resolution)
        return names, list(images)
    if PUBLIC:
        raise gr.Error("This public app does not read server folders; rank uploaded photos or the gallery.")
    if not folder or not Path(folder).is_dir():
        raise gr.Error(f"{str(folder)[:200]!r} is not a folder; give a CelebA-HQ or original CelebA folder")
    names, images = read_folder(folder, split, count, resolution)
    return names, list(images)


def find_failures(source, folder, root, split, count, photos, variant, attribute, steps, guidance, seed, margin,
                  method=DEFAULTS.method, edit_steps=DEFAULTS.edit_steps, sigma=DEFAULTS.sigma, model_card=None,
                  variant_card=None, progress=gr.Progress()):
    """Rank faces by recourse divergence; yields the table and thumbnails as they grow.
    ``model_card`` and ``variant_card`` (local mode only): rank "Your models" instead of ``variant``."""
    pair = card_pair(model_card, variant_card)  # first: a public app refuses card paths before anything
    settings = settings_from(steps, guidance, seed, margin, method, edit_steps, sigma)
    count = scan_count(count, settings.counterfactual)
    models, name = {}, variant
    if pair is not None:
        from recourse.foreign.pairs import require

        try:
            require(pair, attribute)
        except ValueError as error:
            raise gr.Error(str(error)) from None
        models, name = {"teacher": pair.teacher, "student": pair.student}, pair.name
    passes = pair.black_box.forward_passes if pair is not None and pair.black_box is not None else 0
    # checked after each photo's alignment and each counterfactual
    in_time = _deadline(time.perf_counter(), SCAN_SECONDS, "scan",
                        "rank fewer faces or lower the steps (Generator settings)")
    try:
        names, images = _scan_inputs(source, folder, root, split, count, photos,
                                     model_resolution(pair.teacher if pair is not None else load_teacher()), in_time)
        for done, total, cases in scan_images(names, images, name, attribute, settings, **models, check=in_time):
            progress(done / total, desc=f"{done} of {total} faces")
            in_time("face")
            rows = [[rank + 1, c.filename, c.target, c.score_label, c.recourse.teacher_valid,
                     c.recourse.student_accepts_teacher, c.recourse.student_valid, _value(c.recourse.crg, c.compared),
                     _value(c.recourse.dirsim, c.compared), judge_says(c.judge, "teacher"), judge_says(c.judge, "student")]
                    for rank, c in enumerate(cases)]
            found = {"variant": variant, "attribute": attribute, "cases": [_pixels(c) for c in cases]}
            thumbnails = [(Image.fromarray(pixels), f"#{rank + 1} {c.score_label}")
                          for rank, (c, (_, pixels)) in enumerate(zip(cases, found["cases"]))]
            yield (rows, thumbnails, found,
                   f"{done} of {total} faces ranked (worst first) for **{name}**, **{attribute}**, "
                   f"{method_summary(settings.counterfactual)}, margin {settings.counterfactual.margin:g}"
                   f"{black_box_passes(pair, passes)}. Click a row or a thumbnail to audit it with these settings"
                   + (" and Your models." if pair is not None else "."))
    except gr.Error:
        raise
    except EXPECTED_ERRORS as error:
        raise gr.Error(_public(error)) from None
    except Exception as error:  # noqa: BLE001
        raise _unexpected(error) from None
    finally:
        give_back()


def _pixels(case: FolderCase) -> tuple[str, np.ndarray]:
    return case.filename, (case.image.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)


def _value(value: float | None, compared: bool = True) -> float | str:
    """CRG_i or DirSim_i as a ranking shows it: never quoted below the noise floor."""
    if value is None:
        return "undefined"
    return round(value, 3) if compared else "not compared"


def select_failure(found, event: gr.SelectData):
    """A ranked face, opened in the Audit tab with the scan's variant and attribute."""
    if not found or not found.get("cases"):
        raise gr.Error("Rank some faces first.")
    row = event.index[0] if isinstance(event.index, (list, tuple)) else event.index
    _, pixels = found["cases"][row]
    pixels = np.asarray(pixels, dtype=np.uint8)
    return (pixels, None, enlarge(Image.fromarray(pixels), smooth=True), found["variant"], found["attribute"],
            next(iter(TARGETS)), gr.Tabs(selected="audit"))


def load_models(log=print) -> None:
    """Load every model before serving. Loading a variant traces it with torch.fx, which
    patches ``nn.Module.__call__`` for the whole process while it runs: an audit running in
    another thread at that moment would fail, so nothing is loaded once requests are served.
    A variant that does not load is reported, not fatal."""
    started = time.perf_counter()
    log("loading the full-precision classifier, the robust judge and the generator…")
    load_teacher()
    try:
        load_judge()
    except (CheckpointError, FileNotFoundError) as error:  # audits run without it; their cards say "no judge"
        log(f"robust judge: not loaded ({_public(error)})")
    load_generator()  # its files checked against their manifest; a failure is a CheckpointError
    # the stronger judge and dlib's face descriptor (seconds to load) before the first request;
    # where either is absent, audits run and their cards say why ("not trained")
    resolution = model_resolution(load_teacher())
    strong = resolve_strong_judge(COMMITTED, resolution)[1]
    log(f"stronger judge: {'loaded' if strong is None else strong}")
    identity = resolve_identity(COMMITTED, resolution)[1]
    log(f"identity (dlib face descriptor): {'loaded' if identity is None else identity}")
    for variant in VARIANTS:
        status = variant_status(variant)
        log(f"variant {variant}: {'loaded' if status is None else status}")
    log(f"models loaded in {time.perf_counter() - started:.1f} s")


def warm_up(log=print) -> None:
    """One small audit, so that the first user's audit does not pay for first-call costs."""
    faces_ = gallery_faces()
    available = [v for v in VARIANTS if variant_status(v) is None]
    if faces_ and available:
        started = time.perf_counter()
        audit_image(framed_tensor(np.array(Image.open(faces_[0][0]).convert("RGB"))), available[0], "Smiling")
        log(f"warm-up done in {time.perf_counter() - started:.1f} s")


# ---------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------

CSS = Path(__file__).with_name("app.css").read_text()  # the layout, its rules explained there

CACHE_LIFETIME_S = 900  # uploads and outputs in Gradio's cache are deleted this old (every 600 s)

with gr.Blocks(title="Recourse audit", analytics_enabled=False, delete_cache=(600, CACHE_LIFETIME_S)) as demo:
    selected_face = gr.State(None)  # per user: framed pixels of the chosen gallery or ranked face
    found_faces = gr.State({})  # per user: the last ranking (variant, attribute, framed faces worst first)
    gr.Markdown("## Recourse audit of a compressed face-attribute classifier\n"
                "Does the compressed model still accept the *recourse* — the smallest realistic change that flips "
                "an attribute — that the full-precision model gives, and would it suggest the same change?")
    with gr.Tabs() as tabs:
        with gr.Tab("Audit", id="audit"):
            with gr.Row(equal_height=False):
                with gr.Column(scale=2, min_width=300):
                    gallery = gr.Gallery(gallery_faces(), label="Gallery: public-domain portraits (NASA, U.S. Navy, U.S. Senate; sources in assets/gallery/SOURCES.md)",
                                         columns=6, rows=1, height=150, allow_preview=False, elem_id="gallery")
                    with gr.Row(equal_height=True):
                        upload = UploadedImage(label="…or upload a photo (the face is found and aligned)",
                                               type="filepath", sources=["upload"], height=90, buttons=[], elem_id="upload", scale=3,
                                          min_width=160)
                        with gr.Column(scale=1, min_width=90):
                            gr.Examples([[str(EXAMPLE_PHOTO)]], inputs=[upload], label="Example")
                    with gr.Row():
                        variant = Choice(list(VARIANTS), value=VARIANTS[0], label="Compressed variant", min_width=140)
                        attribute = Choice(list(ATTRIBUTES), value="Smiling", label="Attribute", min_width=140)
                    with gr.Row():
                        target = Choice(list(TARGETS), value=next(iter(TARGETS)), label="Target decision",
                                        min_width=400)  # a row of its own: its choices read whole
                        margin = gr.Slider(0, MAX_MARGIN, value=DEFAULTS.margin, step=0.25, elem_id="margin",
                                           min_width=400, label="Margin (logits; 0 = minimal recourse)")
                    # the button above the folded settings: it stays on a 1280×800 first screen
                    run = gr.Button("Audit", variant="primary", elem_id="run-audit")
                    with gr.Accordion("Generator settings", open=False):
                        # only the chosen method's controls are shown (method_controls)
                        used = METHOD_CONTROLS[DEFAULTS.method]
                        method = Choice(METHOD_CHOICES, value=DEFAULTS.method, label="Counterfactual method",
                                        elem_id="method")
                        method_note = gr.Markdown(METHOD_NOTES[DEFAULTS.method], elem_id="method-note")
                        edit_steps = gr.Slider(1, MAX_EDIT_STEPS, value=DEFAULTS.edit_steps, step=1,
                                               label=CONTROL_LABELS["edit_steps"], visible="edit_steps" in used)
                        sigma = gr.Slider(*SIGMAS, value=DEFAULTS.sigma, step=0.02, label=CONTROL_LABELS["sigma"],
                                          visible="sigma" in used)
                        steps = gr.Slider(10, MAX_STEPS, value=DEFAULTS.finish_steps, step=10,
                                          label=CONTROL_LABELS["finish_steps"], visible="finish_steps" in used)
                        guidance = gr.Slider(MIN_CONE, 90, value=DEFAULTS.cone_degrees, step=1,
                                             label=CONTROL_LABELS["cone_degrees"], visible="cone_degrees" in used)
                        seed = WholeNumber(value=DEFAULTS.seed, precision=0, minimum=0, maximum=2**31 - 1,
                                           label=CONTROL_LABELS["seed"])
                        if PUBLIC:
                            gr.Markdown(BUDGET_NOTE, elem_id="budget")
                    if not PUBLIC:  # a card path is a path on the server: never offered to strangers
                        with gr.Accordion("Your models (local only): two model cards", open=False,
                                          elem_id="your-models"):
                            model_card = gr.Textbox(label="Full-precision model card (file or folder; empty: the "
                                                          "committed classifier)", placeholder="out/foreign/fp32-pt2")
                            variant_card = gr.Textbox(label="Compressed model card (file or folder)",
                                                      placeholder="out/foreign/ort-int8")
                            use_models = gr.Button("Use these models")
                            models_status = gr.Markdown("Auditing the committed models.", label="Models in use")
                with gr.Column(scale=3, min_width=300):
                    status = gr.Markdown("Choose a face and press **Audit**.", label="Status", elem_id="status")
                    verdict = gr.Markdown(label="Verdict", elem_id="verdict")
                    with gr.Row(equal_height=True, elem_classes="faces"):
                        image_options = {"type": "pil", "format": "png", "interactive": False, "buttons": ["download"],
                                         "min_width": 100}
                        # No download button on the three faces: at 390 px it covers their captions, and
                        # the audit's download below carries all three.
                        face_options = {**image_options, "buttons": []}
                        original_view = gr.Image(label="Face x", elem_id="aligned", **face_options)
                        teacher_cf = gr.Image(label="Full precision x'_f", elem_id="teacher-cf", **face_options)
                        student_cf = gr.Image(label="Compressed x'_g", elem_id="student-cf", **face_options)
                    evidence = gr.HTML(label="Probabilities before and after", elem_id="evidence")
                    cards = gr.HTML(label="Per-image values", elem_id="value-cards")
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
        with gr.Tab("Benchmark", id="benchmark"):
            benchmark_run = OneOf(list(BENCHMARKS), value=first_benchmark_run(), label="Run")
            caption, table, plot = benchmark_view()
            benchmark_caption = gr.Markdown(caption, label="Benchmark run")
            benchmark_table = gr.Dataframe(table, interactive=False, label="Benchmark table", wrap=True,
                                           elem_id="benchmark-table")
            benchmark_plot = gr.Plot(plot, label="Accuracy against recourse metrics")
        with gr.Tab("Find failures", id="failures"):
            gr.Markdown("Rank faces by how far the compressed model's recourse departs from the full-precision one: "
                        "+1 if it rejects the full-precision recourse, +1 if it finds none of its own, "
                        "+ (1 − DirSim_i/100)/2. Each face is audited with the settings of the Audit tab.")
            sources = ["gallery faces", "uploaded photos"] + (["listed folder"] if SCAN_ROOTS else [])
            sources += [] if PUBLIC else ["server folder"]
            with gr.Row():
                scan_source = OneOf(sources, value=sources[0], label="Faces to rank")
                scan_photos = UploadedFiles(label="Photos to rank", file_count="multiple", file_types=["image"],
                                            height=110)
            with gr.Row():
                folder = gr.Textbox(label="Server folder (CelebA-HQ or original CelebA layout)",
                                    placeholder="../shared/data/celeba-hq-64", visible=not PUBLIC)
                scan_root = Choice(list(SCAN_ROOTS), label="Listed folder", visible=bool(SCAN_ROOTS))
                split = Choice(list(SPLITS), value="test", label="Split (folders)")
                count = gr.Slider(1, MAX_SCAN_IMAGES, value=16, step=1, label="Faces")
            with gr.Row():
                scan_variant = Choice(list(VARIANTS), value=VARIANTS[0], label="Compressed variant")
                scan_attribute = Choice(list(ATTRIBUTES), value="Smiling", label="Attribute")
            if not PUBLIC:
                gr.Markdown(YOUR_MODELS_SCAN_NOTE, elem_id="scan-your-models")
            with gr.Row():
                scan = gr.Button("Rank", variant="primary")
                cancel = gr.Button("Cancel")
            scan_status = gr.Markdown(label="Ranking status")
            thumbnails = gr.Gallery(label="Ranked faces, worst first (click to audit)", columns=8, rows=1,
                                    height=180, allow_preview=False, elem_id="ranked")
            ranking = gr.Dataframe(headers=["rank", "file", "target", "divergence", "V_f(x'_f)", "V_g(x'_f)",
                                            "V_g(x'_g)", "CRG_i", "DirSim_i", "judge sees x'_f", "judge sees x'_g"],
                                   interactive=False, label="Ranking")

    RESULT_OUTPUTS = [teacher_cf, teacher_diff, student_cf, student_diff, evidence, cards, verdict, ig_teacher,
                      ig_student, occ_teacher, occ_student, attributions, raw, export_json, export_html, chart, status]
    METHOD_SETTINGS = [method, edit_steps, sigma]  # after the walks' settings: older API calls keep their order
    AUDIT_INPUTS = [upload, selected_face, variant, attribute, target, steps, guidance, seed, margin, *METHOD_SETTINGS]
    if not PUBLIC:
        AUDIT_INPUTS += [model_card, variant_card]
    AUDIT_OUTPUTS = [original_view, *RESULT_OUTPUTS]
    HEAVY = {"concurrency_limit": HEAVY_CONCURRENCY, "concurrency_id": "heavy"}

    # -----------------------------------------------------------------------------------
    # Events
    # -----------------------------------------------------------------------------------
    method.change(method_controls, method, [method_note, edit_steps, sigma, steps, guidance], queue=False,
                  api_visibility="private")
    gallery.select(select_gallery_face, None, [selected_face, upload, original_view], api_visibility="private")
    upload.upload(lambda: None, None, selected_face, api_visibility="private")
    run.click(clear_results, None, RESULT_OUTPUTS, queue=False, api_visibility="private").then(
        run_audit, AUDIT_INPUTS, AUDIT_OUTPUTS, api_name="audit", **HEAVY)
    if not PUBLIC:
        use_models.click(use_cards, [model_card, variant_card, attribute, scan_attribute],
                         [attribute, scan_attribute, models_status], api_name="use_models")
    benchmark_run.change(benchmark_view, benchmark_run, [benchmark_caption, benchmark_table, benchmark_plot],
                         api_name="benchmark")
    SCAN_INPUTS = [scan_source, folder, scan_root, split, count, scan_photos, scan_variant, scan_attribute, steps,
                   guidance, seed, margin, *METHOD_SETTINGS]
    if not PUBLIC:  # the Audit tab's "Your models", ranked in place of the variant when given
        SCAN_INPUTS += [model_card, variant_card]
    scanning = scan.click(find_failures, SCAN_INPUTS, [ranking, thumbnails, found_faces, scan_status],
                          api_name="find_failures", **HEAVY)
    cancel.click(None, None, None, cancels=[scanning])
    for chooser in (ranking, thumbnails):
        chooser.select(select_failure, found_faces,
                       [selected_face, upload, original_view, variant, attribute, target, tabs],
                       api_visibility="private").then(
            clear_results, None, RESULT_OUTPUTS, queue=False, api_visibility="private").then(
            run_audit, AUDIT_INPUTS, AUDIT_OUTPUTS, api_visibility="private", **HEAVY)
    demo.load(lambda: [gr.Dropdown(choices=variant_choices())] * 2, None, [variant, scan_variant],
              api_visibility="private")

# The API page's example upload is a face, not gradio's default picture.
upload.example_payload = lambda: handle_file(str(EXAMPLE_PHOTO.relative_to(assets_dir().parent)))
upload.example_value = upload.example_payload
# One queue for every route: in public mode the direct /run routes are closed (gradio_client
# and the browser join the queue), and the queue holds at most QUEUE_SIZE requests.
demo.queue(max_size=QUEUE_SIZE, api_open=not PUBLIC)


TRUST_FORWARDED = bool(os.environ.get("SPACE_ID"))  # a Space's proxy writes X-Forwarded-For itself


def queued_by(client: str) -> int:
    """How many requests ``client`` has waiting or running in the queue (Gradio 6.31 keeps
    them in ``event_ids_to_events`` from joining until they end)."""
    events = list(getattr(demo._queue, "event_ids_to_events", {}).values())
    return sum(1 for event in events if client_of(event.request.scope, TRUST_FORWARDED) == client)


def request_limits() -> list:
    """The middleware that caps what one caller may send (see recourse.request_limits)."""
    from gradio.route_utils import FnIndexInferError
    from starlette.middleware import Middleware

    return [Middleware(RequestLimits, max_body=MAX_BODY_BYTES, upload_quota=UPLOAD_QUOTA, window_s=UPLOAD_WINDOW_S,
                       max_queued=MAX_QUEUED, queued=queued_by, trust_forwarded=TRUST_FORWARDED, public=PUBLIC,
                       malformed=(FnIndexInferError,))]


def start_up(log=print) -> None:
    """Load the models, or stop with a clear message and exit code 2 (not a traceback) when a
    checkpoint is missing or broken; and remove what a killed earlier run left behind."""
    removed = prune_abandoned(TEMP_BASE, CACHE_LIFETIME_S, time.time(), own=INSTANCE.path)
    log(f"removed {removed} folders of app instances that have ended")
    try:
        load_models(log)
    except (CheckpointError, FileNotFoundError) as error:
        print(f"The app cannot start: {_public(error)}", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    limit_arenas(HEAVY_CONCURRENCY)  # before Gradio's worker threads exist (recourse.memory)
    start_up(lambda line: print(line, flush=True))
    threading.Thread(target=warm_up, daemon=True).start()
    theme = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                              font_mono=["ui-monospace", "monospace"])  # system fonts: nothing fetched, offline
    # show_error=False: errors we raise (gr.Error) are shown; any other, gradio's own included, shows a
    # generic message, since its text may hold server paths
    # public: no monitoring page (it shows every caller's counts) and no run history (it can
    # send a caller's runs to a bucket of theirs from this server)
    demo.launch(theme=theme, css=CSS, max_file_size=faces.MAX_UPLOAD_BYTES, show_error=False,
                app_kwargs={"middleware": request_limits()}, enable_monitoring=False if PUBLIC else None,
                run_history=not PUBLIC, state_session_capacity=SESSIONS_KEPT)
