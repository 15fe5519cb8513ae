"""The Find failures tab: faces ranked by how far the compressed model's recourse departs from
the full-precision one, worst first; a ranked face opens in the Audit tab (select_failure)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import numpy as np
from PIL import Image

from recourse.audit.instruments import model_resolution
from recourse.audit.photo_folder import Skipped, frame_photo, image_files, is_celeba_folder
from recourse.audit.scan import FolderCase, read_folder, scan_images
from recourse.audit.verdict import judge_says
from recourse.data import ATTRIBUTES, SPLITS, to_float_images
from recourse.models import VARIANTS, load_teacher
from recourse.progress import StageCheck, no_check
from recourse.render.methods import method_summary
from recourse.render.pictures import enlarge
from recourse.ui import limits
from recourse.ui.audit import TARGETS, framed_tensor, gallery_faces
from recourse.ui.errors import EXPECTED_ERRORS, Refusal, unexpected, without_paths
from recourse.ui.serve.inputs import Bounded, Choice, OneOf, UploadedFiles
from recourse.ui.serve.memory import give_back
from recourse.ui.settings import DEFAULTS, deadline, scan_count, settings_from
from recourse.ui.texts import FAILURES_INTRO, YOUR_MODELS_SCAN_NOTE
from recourse.ui.your_models import black_box_passes, card_pair


def _scan_inputs(source: str, folder: str, root: str, split: str, count: int, photos: list | None, resolution: int,
                 check: StageCheck = no_check) -> tuple[tuple[str, ...], list, list[Skipped]]:
    """Names and framed images to rank, from the chosen source, and the files skipped with
    their reasons; ``check`` after each photo is decoded and again once it is framed, so that a
    time limit holds within a photo. A photo named twice is ranked once."""
    if source == "gallery faces":
        chosen = gallery_faces()[:count]
        return (tuple(caption for _, caption in chosen),
                [framed_tensor(np.asarray(Image.open(path).convert("RGB"))) for path, _ in chosen], [])
    if source == "uploaded photos":
        if not photos:
            raise Refusal("Upload one or more photos to rank.")
        paths = [Path(photo) for photo in dict.fromkeys(photos)][:count]  # checked upload paths (UploadedFiles)
        return _framed([(path.name, path) for path in paths], resolution, check)
    if source == "listed folder":
        if root not in limits.SCAN_ROOTS:
            raise Refusal("Choose one of the listed folders.")
        return _folder(limits.SCAN_ROOTS[root], split, count, resolution, check)
    if limits.PUBLIC:
        raise Refusal("This public app does not read server folders; rank uploaded photos or the gallery.")
    if not folder or not Path(folder).is_dir():
        raise Refusal(f"{str(folder)[:300]!r} is not a folder on this computer")
    return _folder(Path(folder), split, count, resolution, check)


def _framed(named: list[tuple[str, Path]], resolution: int, check: StageCheck, count: int | None = None):
    """The first ``count`` photos of ``named`` framed, and every one skipped before them with its reason."""
    names, images, skipped = [], [], []
    for name, path in named:
        if count is not None and len(names) == count:
            break
        framed = frame_photo(path, resolution, check)
        if isinstance(framed, tuple):
            skipped.append(Skipped(name, framed[0], without_paths(framed[1])))
        else:
            names.append(name)
            images.append(to_float_images(framed))
        check("frame")
    return tuple(names), images, skipped


def _folder(folder: Path, split: str, count: int, resolution: int, check: StageCheck):
    """A CelebA folder's split as the dataset frames it, or any folder's photos, recursively."""
    if is_celeba_folder(folder):
        names, images = read_folder(folder, split, count, resolution)
        return names, list(images), []
    root = folder.resolve()
    files = image_files(root)
    if not files:
        raise Refusal(f"{folder.name}: no image files in it or its subfolders")
    return _framed([(path.relative_to(root).as_posix(), path) for path in files], resolution, check, count)


def skipped_note(skipped: list[Skipped], shown: int = 12) -> str:
    """The skipped files in a line each (the first ``shown``), for the status."""
    if not skipped:
        return ""
    lines = [f"- {item.file}: {item.reason} ({item.detail})" for item in skipped[:shown]]
    more = len(skipped) - shown
    return "\n\nSkipped:\n" + "\n".join(lines) + (f"\n- … and {more} more" if more > 0 else "")


def find_failures(source, folder, root, split, count, photos, variant, attribute, steps, guidance, seed, margin,
                  method=DEFAULTS.method, edit_steps=DEFAULTS.edit_steps, sigma=DEFAULTS.sigma, model_card=None,
                  variant_card=None, progress=gr.Progress()):
    """Rank faces by recourse divergence; yields the table and thumbnails as they grow.
    ``model_card`` and ``variant_card`` (local mode only): rank "Your models" instead of ``variant``."""
    pair = card_pair(model_card, variant_card)  # first: a public app refuses card paths before anything
    settings = settings_from(steps, guidance, seed, margin, method, edit_steps, sigma, attribute)
    count = scan_count(count, settings.counterfactual, attribute)
    models, name = {}, variant
    if pair is not None:
        from recourse.foreign.pairs import require

        try:
            require(pair, attribute)
        except ValueError as error:
            raise Refusal(str(error)) from None
        models, name = {"teacher": pair.teacher, "student": pair.student}, pair.name
    passes = pair.black_box.forward_passes if pair is not None and pair.black_box is not None else 0
    # checked after each photo's decoding and framing, and each counterfactual
    in_time = deadline(time.perf_counter(), limits.SCAN_SECONDS, "scan",
                       "rank fewer faces or lower the steps (Generator settings)")
    try:
        names, images, skipped = _scan_inputs(source, folder, root, split, count, photos,
                                              model_resolution(pair.teacher if pair is not None else load_teacher()),
                                              in_time)
        if not names:
            raise Refusal("None of the photos has a face that could be framed." + skipped_note(skipped))
        for done, total, cases in scan_images(names, images, name, attribute, settings, **models, check=in_time):
            progress(done / total, desc=f"{done} of {total} faces")
            in_time("face")
            rows = [[rank + 1, c.filename, c.target, c.score_label, c.recourse.teacher_valid,
                     c.recourse.student_accepts_teacher, c.recourse.student_valid, _value(c.recourse.crg, c.compared),
                     _value(c.recourse.dirsim, c.compared), judge_says(c.judge, "teacher"),
                     judge_says(c.judge, "student")]
                    for rank, c in enumerate(cases)]
            found = {"variant": variant, "attribute": attribute, "cases": [_pixels(c) for c in cases]}
            thumbnails = [(Image.fromarray(pixels), f"#{rank + 1} {c.score_label}")
                          for rank, (c, (_, pixels)) in enumerate(zip(cases, found["cases"]))]
            yield (rows, thumbnails, found,
                   f"{done} of {total} faces ranked (worst first), {len(skipped)} skipped, for **{name}**, "
                   f"**{attribute}**, "
                   f"{method_summary(settings.counterfactual, attribute)}, "
                   f"pictures at margin {settings.stops.visible:g}, numbers at "
                   f"margin {settings.stops.numbers:g}"
                   f"{black_box_passes(pair, passes)}. Click a row or a thumbnail to audit it with these settings"
                   + (" and Your models." if pair is not None else ".") + skipped_note(skipped))
    except gr.Error:
        raise
    except EXPECTED_ERRORS as error:
        raise Refusal(without_paths(error)) from None
    except Exception as error:  # noqa: BLE001
        raise unexpected(error) from None
    finally:
        give_back()


def _pixels(case: FolderCase) -> tuple[str, np.ndarray]:
    return case.filename, (case.image.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)


# Plain column names; the symbols of docs/metrics.md in brackets for those who read them.
RANKING_COLUMNS = ("rank", "file", "target", "divergence", "original accepts its own edit (V_f(x'_f))",
                   "compressed accepts the original's edit (V_g(x'_f))",
                   "compressed accepts its own edit (V_g(x'_g))", "size gap (CRG)", "direction agreement % (DirSim)",
                   "judge sees the original's edit", "judge sees the compressed's edit")


def _value(value: float | None, compared: bool = True) -> float | str:
    """A size gap or direction agreement as a ranking shows it: never quoted below the noise floor."""
    if value is None:
        return "no edit to compare"
    return round(value, 3) if compared else "not compared"


def select_failure(found, event: gr.SelectData):
    """A ranked face, opened in the Audit tab with the scan's variant and attribute."""
    if not found or not found.get("cases"):
        raise Refusal("Rank some faces first.")
    row = event.index[0] if isinstance(event.index, (list, tuple)) else event.index
    _, pixels = found["cases"][row]
    pixels = np.asarray(pixels, dtype=np.uint8)
    return (pixels, None, enlarge(Image.fromarray(pixels), smooth=True), found["variant"], found["attribute"],
            next(iter(TARGETS)), gr.Tabs(selected="audit"))


@dataclass(frozen=True, eq=False)
class FailuresTab:
    """The Find failures tab's components (build_failures_tab)."""

    source: OneOf
    photos: UploadedFiles
    folder: gr.Textbox
    root: Choice
    split: Choice
    count: Bounded
    variant: Choice
    attribute: Choice
    scan: gr.Button
    cancel: gr.Button
    status: gr.Markdown
    thumbnails: gr.Gallery
    ranking: gr.Dataframe


def build_failures_tab() -> FailuresTab:
    """The tab's contents: where the faces come from, the pair to rank, and the ranking. A
    public app offers no server folder, only the folders an operator listed."""
    gr.Markdown(FAILURES_INTRO)
    sources = ["gallery faces", "uploaded photos"] + (["listed folder"] if limits.SCAN_ROOTS else [])
    sources += [] if limits.PUBLIC else ["server folder"]
    with gr.Row():
        source = OneOf(sources, value=sources[0], label="Faces to rank")
        photos = UploadedFiles(label="Photos to rank", file_count="multiple", file_types=["image"], height=110)
    with gr.Row():
        folder = gr.Textbox(label="Server folder (any folder of photos, searched recursively, or a CelebA folder)",
                            placeholder="../shared/data/celeba-hq-64", visible=not limits.PUBLIC)
        root = Choice(list(limits.SCAN_ROOTS), label="Listed folder", visible=bool(limits.SCAN_ROOTS))
        split = Choice(list(SPLITS), value="test", label="Split (folders)")
        count = Bounded(1, limits.MAX_SCAN_IMAGES, value=16, step=1, label="Faces")
    with gr.Row():
        variant = Choice(list(VARIANTS), value=VARIANTS[0], label="Compressed variant")
        attribute = Choice(list(ATTRIBUTES), value="Smiling", label="Attribute")
    if not limits.PUBLIC:
        gr.Markdown(YOUR_MODELS_SCAN_NOTE, elem_id="scan-your-models")
    with gr.Row():
        scan = gr.Button("Rank", variant="primary")
        cancel = gr.Button("Cancel")
    status = gr.Markdown(label="Ranking status")
    thumbnails = gr.Gallery(label="Ranked faces, worst first (click to audit)", columns=8, rows=1, height=180,
                            allow_preview=False, elem_id="ranked")
    ranking = gr.Dataframe(headers=list(RANKING_COLUMNS), interactive=False, label="Ranking")
    return FailuresTab(source, photos, folder, root, split, count, variant, attribute, scan, cancel, status,
                       thumbnails, ranking)
