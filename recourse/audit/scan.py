"""Finding recourse failures: a folder's images ranked by how far the student's recourse
departs from the teacher's, each row computed by the same paired core as an audit."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from recourse.audit.image_noise_floor import BOUNDARY_LOGIT, NOISE_FLOOR_COST, compared, on_boundary
from recourse.audit.instruments import COMMITTED, JudgeView, judge_view, model_resolution, resolve_judge
from recourse.audit.paired import Student, flip_targets, paired_recourse, read_stops
from recourse.audit.pipeline import attribute_settings
from recourse.audit.result import AuditSettings, product_settings
from recourse.data import DatasetError, attribute_index, to_float_images
from recourse.generation import FaceGenerator
from recourse.metrics import ImageRecourse
from recourse.progress import StageCheck, no_check


@dataclass(frozen=True)
class FolderCase:
    """One image of a scanned folder: its framed image ``(3, H, W)`` and recourse values."""

    filename: str
    image: torch.Tensor
    target: int
    recourse: ImageRecourse
    divergence: float | None  # see divergence_score; None where there is nothing to compare
    judge: JudgeView | None = None  # the robust judge's view of both recourses, as in an audit
    face_logit: float = float("inf")  # the full-precision logit of the attribute on the face
    # the compressed model's logit on the full-precision counterfactual, + toward the target: among
    # equal divergences, the lower the firmer its refusal of the original's recourse
    student_on_teacher: float = 0.0

    @property
    def on_boundary(self) -> bool:
        """The face sits on the full-precision boundary (recourse.audit.image_noise_floor.on_boundary): ranked apart."""
        return on_boundary(self.recourse, self.face_logit)

    @property
    def compared(self) -> bool:
        """Whether CRG_i and DirSim_i are above the noise floor (recourse.audit.image_noise_floor.compared)."""
        return compared(self.recourse, self.face_logit)

    @property
    def score_label(self) -> float | str:
        """The divergence as a ranking shows it, or why there is none."""
        if not self.recourse.teacher_valid:
            return "no teacher recourse"
        if self.on_boundary:  # near the boundary, or a recourse too small to read: apart, and said which
            return "on the boundary" if abs(self.face_logit) < BOUNDARY_LOGIT else "below the noise floor"
        return round(self.divergence, 3)


def divergence_score(recourse: ImageRecourse, face_logit: float = float("inf")) -> float | None:
    """Ranks recourse failures, worst first: 1 if the student rejects the teacher's recourse,
    plus 1 if the student finds no valid recourse of its own, plus ``(1 − DirSim_i/100) / 2``
    where DirSim_i is defined and both recourses are above the noise floor (the direction of
    a smaller edit is noise). ``None`` when the teacher has no valid recourse or the face
    sits on its boundary (``face_logit``: its full-precision logit; see
    :func:`recourse.audit.image_noise_floor.on_boundary`): a rejection there is a coin's toss, not a failure."""
    if not recourse.teacher_valid or on_boundary(recourse, face_logit):
        return None
    score = float(not recourse.student_accepts_teacher) + float(not recourse.student_valid)
    if recourse.dirsim is not None and recourse.student_cost >= NOISE_FLOOR_COST:
        score += (1 - recourse.dirsim / 100) / 2
    return score


def _rank(cases: list[FolderCase]) -> list[FolderCase]:
    """Worst first; faces on the boundary after every scored one, then those without a teacher recourse.
    Equal divergences (the whole-number verdicts, where no DirSim orders them) are ordered by the
    compressed model's logit on the original's counterfactual, lowest first, then by file name."""
    def group(case: FolderCase) -> int:
        return 0 if case.divergence is not None else (1 if case.recourse.teacher_valid else 2)

    return sorted(cases, key=lambda c: (group(c), -(c.divergence or 0.0), c.student_on_teacher, c.filename))


def read_folder(folder: str | os.PathLike, split: str, count: int,
                resolution: int) -> tuple[tuple[str, ...], Iterator[torch.Tensor]]:
    """The first ``count`` usable images of ``split`` of a folder in either CelebA layout, framed
    like the training images (original CelebA photos are aligned), one ``(3, R, R)`` at a time.
    An original CelebA photo that cannot be decoded or framed is left out, as in a dataset run."""
    from recourse.data import detect_layout, image_dir, open_rgb, resize_square, select_split
    from recourse.faces import CelebAFramer, FaceAlignmentError

    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    root = Path(folder)
    original = detect_layout(root) == "celeba"
    framer = CelebAFramer() if original else resize_square
    directory = image_dir(root)
    names, images = [], []
    for name in select_split(root, split).filenames:
        if len(names) == count:
            break
        try:
            images.append(to_float_images(framer(open_rgb(directory / name), resolution)))
        except (FaceAlignmentError, DatasetError):
            if not original:
                raise
            continue
        names.append(name)
    if not names:
        raise ValueError(f"{root.name}: split {split!r} has no usable images")
    return tuple(names), iter(images)


def scan_folder(folder: str | os.PathLike, variant: str, attribute: str, count: int = 16, split: str = "test",
                **options) -> Iterator[tuple[int, int, list[FolderCase]]]:
    """Rank the first ``count`` usable images of a folder's ``split`` (either CelebA layout);
    ``options`` are those of :func:`scan_images`."""
    from recourse import models

    teacher = options.pop("teacher", None) or models.load_teacher()
    names, images = read_folder(folder, split, count, model_resolution(teacher))
    yield from scan_images(names, images, variant, attribute, teacher=teacher, **options)


def scan_images(
    names: tuple[str, ...],
    images: Iterable[torch.Tensor],
    variant: str,
    attribute: str,
    settings: AuditSettings | None = None,
    batch_size: int = 1,
    teacher: nn.Module | None = None,
    student: Student | None = None,
    generator: FaceGenerator | None = None,
    judge: nn.Module | None | str = COMMITTED,
    check: StageCheck = no_check,
) -> Iterator[tuple[int, int, list[FolderCase]]]:
    """Rank framed images ``(3, R, R)`` in [0, 1] by recourse divergence for one variant and attribute.

    Yields ``(done, total, cases ranked worst first)`` after each batch. Each image gets the
    seed of ``settings`` (None: the product's, :func:`recourse.audit.result.product_settings`) and
    the target that flips the teacher's decision, and is read at the same stops, as a single audit
    of it would. With ``batch_size=1`` (the default) an audit of a listed image reproduces its
    row exactly; larger batches are faster but change the convolutions' rounding, which the
    student twin's quantization and twenty guided steps can amplify into visibly different values.
    ``judge`` and ``check`` (after each counterfactual) as in :func:`recourse.audit.pipeline.audit_steps`.
    """
    from recourse import models

    settings = settings if settings is not None else product_settings()
    teacher = teacher if teacher is not None else models.load_teacher()
    student = student if student is not None else models.load_student(variant)
    # the committed generator, its files checked against their manifest
    generator = generator if generator is not None else models.load_generator()
    settings = attribute_settings(settings, attribute, generator)  # each face read where an audit reads it
    judge = resolve_judge(judge, model_resolution(teacher))
    index = attribute_index(attribute)
    images = iter(images)
    seed = settings.counterfactual.seed
    cases: list[FolderCase] = []
    for start in range(0, len(names), batch_size):
        batch_names = names[start:start + batch_size]
        x = torch.stack([next(images) for _ in batch_names])  # (B, 3, H, W)
        targets = flip_targets(teacher, x, attribute)
        paired = paired_recourse(x, attribute, targets, teacher, student, settings.edit_config, generator,
                                 seeds=(seed,) * len(x), check=check, concurrent=True)  # the two models at once
        stopped = read_stops(x, attribute, targets, teacher, student, paired, settings.stops)  # as an audit reads it
        face_logits = torch.logit(paired.teacher.probability_before.double())
        on_teacher = stopped.columns.student_logit * (2 * stopped.columns.target - 1)
        for i, name in enumerate(batch_names):
            recourse = stopped.columns.image(i)
            judged = judge_view(judge, x[i], stopped.teacher_pictures[i], stopped.student_pictures[i], index,
                                int(targets[i]))
            face_logit = float(face_logits[i])
            cases.append(FolderCase(name, x[i], int(targets[i]), recourse, divergence_score(recourse, face_logit),
                                    judged, face_logit, float(on_teacher[i])))
        yield len(cases), len(names), _rank(cases)
