"""A scan of a whole folder, at an auditor's scale: every photo screened cheaply
(``recourse.audit.screening``), the most suspicious ones given a full audit
(``recourse.audit.scan.scan_images``), each file ranked or listed as skipped with its reason.

The work is cut into shards of photos; each shard's screening, and each full audit, is kept
as a small JSON file under ``out`` as soon as it is done, so that a killed scan goes on where
it stopped. Under ``torchrun`` (or ``accelerate launch``) each process takes every n-th shard
and every n-th audit, and the first process gathers and ranks them, as the benchmark does.
Without ``out`` nothing is kept and one process does it all.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from recourse.audit.photo_folder import Skipped, frame_photo, image_files, is_celeba_folder
from recourse.audit.result import AuditSettings, product_settings
from recourse.audit.screening import (
    PATH_STEP_CHANGE, PATH_STEPS, ScreenRow, screen, screen_by_edits, shortlist,
)
from recourse.progress import Progress, silent

KEPT_VERSION = 2  # of the kept files' content: a file of another version is made again


@dataclass(frozen=True)
class ScanPlan:
    """What to scan, and how."""

    folder: Path
    variant: str
    attribute: str
    settings: AuditSettings = field(default_factory=product_settings)  # the app's and the command line's
    top: int = 20  # faces given a full audit, the highest screening scores
    count: int | None = None  # at most this many photos, in name order (None: every one)
    split: str = "test"  # a CelebA folder's split; other folders have none
    shard_size: int = 64
    out: Path | None = None  # where shards and audits are kept (resumable); None: nothing kept
    # "edits": the audit's own edits, a shard at a time (recourse.audit.screening.screen_by_edits), where
    # the attribute's edit is a region-space one; "gradients": the models' input gradients only
    screening: str = "edits"
    # True: screen by edits even where every photo gets a full audit (a measurement of the screening
    # against those audits: scripts/measurements/screening_recall.py)
    measure_screening: bool = False


@dataclass(frozen=True)
class ScanResult:
    """The ranked full audits, every framed photo's screening, the skipped files."""

    audited: list[dict]  # ranked worst first: file, target, divergence, score, face_logit, recourse, judge
    screened: list[ScreenRow]  # highest screening score first
    skipped: list[Skipped]
    seconds: dict[str, float]  # "screening", "audits": this run's wall time of each pass
    processes: int
    made: dict[str, int] = field(default_factory=dict)  # "screening", "audits": photos this run did itself, not read back

    def rates(self) -> dict[str, float | None]:
        """Photos a minute of each pass over every process, from the work this run did itself."""
        return {stage: (self.made.get(stage, 0) / seconds * 60 if seconds and self.made.get(stage) else None)
                for stage, seconds in self.seconds.items()}

    def summary(self) -> str:
        return (f"{len(self.screened)} ranked, {len(self.skipped)} skipped; the {len(self.audited)} most "
                "suspicious given a full audit")

    def to_dict(self) -> dict:
        return {"summary": self.summary(), "processes": self.processes, "seconds": self.seconds, "made": self.made,
                "audited": self.audited, "screened": [row.to_dict() for row in self.screened],
                "skipped": [item.to_dict() for item in self.skipped]}


# --- the photos --------------------------------------------------------------------------------------


def photo_names(plan: ScanPlan) -> list[str]:
    """The photos of the plan's folder, in order: a CelebA folder's split, or every image file."""
    if is_celeba_folder(plan.folder):
        from recourse.data import select_split

        names = list(select_split(plan.folder, plan.split).filenames)
    else:
        root = Path(plan.folder).resolve()
        names = [path.relative_to(root).as_posix() for path in image_files(root)]
    return names if plan.count is None else names[:plan.count]


def framer(plan: ScanPlan, resolution: int) -> Callable[[str], np.ndarray | tuple[str, str]]:
    """A function framing one photo of the folder by name: ``(3, R, R)`` uint8, or ``(reason, detail)``."""
    root = Path(plan.folder).resolve()
    if not is_celeba_folder(root):
        return lambda name: frame_photo(root / name, resolution)
    from recourse.data import DatasetError, detect_layout, image_dir, open_rgb, resize_square
    from recourse.faces import CelebAFramer, FaceAlignmentError

    original, directory = detect_layout(root) == "celeba", image_dir(root)
    frame = CelebAFramer() if original else resize_square

    def framed(name: str) -> np.ndarray | tuple[str, str]:
        try:
            return frame(open_rgb(directory / name), resolution)
        except (FaceAlignmentError, DatasetError) as error:
            return ("no face" if "no face" in str(error) else "unreadable"), str(error)

    return framed


# --- kept files ---------------------------------------------------------------------------------------


def _key(*parts) -> str:
    return hashlib.sha256(json.dumps([KEPT_VERSION, *parts], sort_keys=True, default=str).encode()).hexdigest()[:16]


def _read_kept(path: Path | None, key: str) -> dict | None:
    if path is None or not path.is_file():
        return None
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # cut off by a kill: made again
    return kept if isinstance(kept, dict) and kept.get("key") == key else None


def _keep(path: Path | None, content: dict) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(content))
    os.replace(partial, path)  # whole or absent: a kill never leaves half a file under the name


# --- the two passes -------------------------------------------------------------------------------------


def screen_shard(plan: ScanPlan, names: list[str], frame, teacher, student, generator=None,
                 by_edits: bool | None = None) -> dict:
    """One shard's screening rows and skipped files (as dicts); ``by_edits`` (default: as the plan
    says, :func:`screens_by_edits`) chooses the audit's own edits or the models' gradients."""
    from recourse.data import to_float_images

    files, images, skipped = [], [], []
    for name in names:
        framed = frame(name)
        if isinstance(framed, tuple):
            skipped.append(Skipped(name, *framed).to_dict())
        else:
            files.append(name)
            images.append(to_float_images(framed))
    rows = []
    if files:
        batch, margin = torch.stack(images), numbers_margin(plan.settings)
        if screens_by_edits(plan, generator) if by_edits is None else by_edits:
            screened = screen_by_edits(files, batch, teacher, student, plan.attribute, plan.settings, generator)
        else:
            screened = screen(files, batch, teacher, student.twin, student.decider, plan.attribute, margin)
        rows = [row.to_dict() for row in screened]
    return {"rows": rows, "skipped": skipped}


def screens_by_edits(plan: ScanPlan, generator, photos: int | None = None) -> bool:
    """Whether the plan's screening makes the audit's own edits, a shard at a time: asked for, the
    attribute's audit edit is a region-space one (a pixel edit costs too much to screen with), and
    the folder's ``photos`` are more than the full audits (where every photo gets its full audit
    anyway, the edits would be made twice for a ranking nobody needs: the models' gradients order
    the screening's list instead)."""
    from recourse.generation.methods import edit_kind

    every_photo_audited = photos is not None and photos <= plan.top and not plan.measure_screening
    return (plan.screening == "edits" and generator is not None and not every_photo_audited
            and edit_kind(plan.settings.edit_config, plan.attribute, generator) == "region-space")


def numbers_margin(settings: AuditSettings) -> float:
    """The margin an audit's numbers are read at: where the screening looks too."""
    return settings.stops.numbers if settings.stops is not None else settings.counterfactual.margin


def audit_record(case) -> dict:
    """A full audit's row as kept and reported (rank-free)."""
    judge = case.judge
    return {"file": case.filename, "target": case.target, "divergence": case.divergence,
            "score": case.score_label, "compared": case.compared, "face_logit": case.face_logit,
            "student_on_teacher": case.student_on_teacher,
            "recourse": case.recourse.to_dict(),
            "judge": None if judge is None else {"on_face": judge.on_face,
                                                 "on_teacher_counterfactual": judge.on_teacher_counterfactual,
                                                 "on_student_counterfactual": judge.on_student_counterfactual}}


def rank_records(records: list[dict]) -> list[dict]:
    """Worst first, as ``recourse.audit.scan`` ranks: scored faces by divergence, then those on the
    boundary, then those without a full-precision recourse; equal divergences by the compressed
    model's logit on the original's counterfactual (lowest first), then by file name."""
    def group(record: dict) -> int:
        return 0 if record["divergence"] is not None else (1 if record["recourse"]["teacher_valid"] else 2)

    return sorted(records, key=lambda r: (group(r), -(r["divergence"] or 0.0), r["student_on_teacher"], r["file"]))


def _models(plan: ScanPlan, teacher, student):
    from recourse import models

    teacher = teacher if teacher is not None else models.load_teacher()
    student = student if student is not None else models.load_student(plan.variant)
    return teacher, student


def _shards(plan: ScanPlan, names: list[str]) -> list[list[str]]:
    return [names[start:start + plan.shard_size] for start in range(0, len(names), plan.shard_size)]


def _screening(plan, state, names, frame, teacher, student, progress, generator=None
               ) -> tuple[list[dict], float, int]:
    """This process's share of the shards, screened or read back; every process's gathered, and
    how many photos all processes screened themselves."""
    started, shards = time.perf_counter(), _shards(plan, names)
    margin = numbers_margin(plan.settings)
    mine = list(range(state.process_index, len(shards), state.num_processes))
    done, made = [], 0
    by_edits = screens_by_edits(plan, generator, len(names))
    how = ("audit edits", plan.settings.to_dict()) if by_edits else ("gradients", PATH_STEPS, PATH_STEP_CHANGE)
    for count, index in enumerate(mine, 1):
        key = _key("screen", plan.variant, plan.attribute, margin, *how, shards[index])
        path = None if plan.out is None else plan.out / "screen" / f"shard-{index:05d}.json"
        kept = _read_kept(path, key)
        if kept is None:
            kept = {"key": key, **screen_shard(plan, shards[index], frame, teacher, student, generator, by_edits)}
            _keep(path, kept)
            made += len(shards[index])
        done.append(kept)
        progress(f"screening (process {state.process_index + 1}/{state.num_processes})", count, len(mine))
    return _gathered(state, done), time.perf_counter() - started, sum(_gathered(state, [made]))


def _audits(plan, state, chosen: list[str], frame, models: dict, progress) -> tuple[list[dict], float, int]:
    """This process's share of the full audits, run or read back; every process's gathered, and
    how many all processes ran themselves."""
    from recourse.audit.scan import scan_images
    from recourse.data import to_float_images

    started, records, made = time.perf_counter(), [], 0
    mine = chosen[state.process_index::state.num_processes]
    settings_key = json.dumps(plan.settings.to_dict(), sort_keys=True, default=str)
    for count, name in enumerate(mine, 1):
        key = _key("audit", plan.variant, plan.attribute, settings_key, name)
        path = None if plan.out is None else plan.out / "audits" / f"{key}.json"
        kept = _read_kept(path, key)
        if kept is None:
            image = to_float_images(frame(name))
            *_, (_, _, cases) = scan_images((name,), [image], plan.variant, plan.attribute, plan.settings,
                                            **models)
            kept = {"key": key, "record": audit_record(cases[0])}
            _keep(path, kept)
            made += 1
        records.append(kept["record"])
        progress(f"full audits (process {state.process_index + 1}/{state.num_processes})", count, len(mine))
    return _gathered(state, records), time.perf_counter() - started, sum(_gathered(state, [made]))


def _gathered(state, items: list) -> list:
    if state.num_processes == 1:
        return items
    from accelerate.utils import gather_object

    return gather_object(items)


def run_scan(plan: ScanPlan, progress: Progress = silent, teacher=None, student=None,
             **audit_models) -> ScanResult | None:
    """Screen every photo, give the ``plan.top`` most suspicious a full audit, rank them; the
    result on the first process, None on the others (see the module's note). ``teacher`` and
    ``student`` (default: the committed classifier and ``plan.variant``), and ``audit_models``
    (``generator``, ``judge``), as :func:`recourse.audit.scan.scan_images` takes them."""
    from accelerate import PartialState

    from recourse.audit.instruments import model_resolution

    state = PartialState(cpu=True)
    teacher, student = _models(plan, teacher, student)
    names = photo_names(plan)
    if not names:
        raise ValueError(f"{Path(plan.folder).name}: no image files in it or its subfolders")
    from recourse import models

    frame = framer(plan, model_resolution(teacher))
    generator = audit_models.get("generator")
    if plan.screening == "edits" and generator is None:  # the audits' own generator: the committed one
        audit_models["generator"] = generator = models.load_generator()
    shards, screening_s, screened_here = _screening(plan, state, names, frame, teacher, student, progress, generator)
    rows = [ScreenRow(**row) for shard in shards for row in shard["rows"]]
    skipped = sorted((Skipped(**item) for shard in shards for item in shard["skipped"]), key=lambda s: s.file)
    chosen = sorted(row.file for row in shortlist(rows, plan.top))
    records, audits_s, audited_here = _audits(plan, state, chosen, frame, {"teacher": teacher, "student": student, **audit_models},
                                progress)
    if not state.is_main_process:
        return None
    return ScanResult(rank_records(records), shortlist(rows, len(rows)), skipped,
                      {"screening": round(screening_s, 2), "audits": round(audits_s, 2)}, state.num_processes,
                      {"screening": screened_here, "audits": audited_here})
