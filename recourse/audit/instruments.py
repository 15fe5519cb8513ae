"""The instruments an audit reads, apart from the models it audits: the robust judges and dlib's
face descriptor (``docs/metrics.md``, judge FR, FVA and FS), which only measure and never guide,
and the artifact check of each model's edit, which says whether their ticks count.

Each ``resolve_*`` says which instrument an audit uses (the committed one for ``COMMITTED``, a
module or callable as given, None: left out) and, where there is none, why; each ``*_view``
reads it on the face and both recourses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from recourse.audit.edit_path import RecoursePath, path_images
from recourse.checkpoints import CheckpointError
from recourse.generation.regions import face_landmarks
from recourse.generation.spaces.artifacts import ArtifactCheck, check_attribute_edit, counted
from recourse.instruments.identity import DLIB_THRESHOLD, Descriptors, IdentityModelError, descriptor_distances
from recourse.instruments.readings import JudgeReading, judge_readings, path_readings

COMMITTED = "committed"


def model_resolution(model: nn.Module) -> int:
    return getattr(getattr(model, "config", None), "resolution", 64)


@torch.no_grad()
def model_probabilities(model: nn.Module, images: torch.Tensor) -> torch.Tensor:
    """``sigmoid(model(images))``: a model's probabilities, without gradients."""
    return torch.sigmoid(model(images))


@dataclass(frozen=True)
class JudgeView:
    """The robust judge's ``p_a`` on the face and on both recourses (``docs/metrics.md``, judge FR).

    Ordinary classifiers are moved by low-amplitude edits a person does not see; the judge,
    adversarially trained, is not, so a valid recourse that leaves the judge's decision where
    it was flipped the model without changing the face's attribute. Whether it "sees" the
    change is counted only where it did not already decide the target on the face. It never
    guides a counterfactual."""

    target: int
    on_face: float
    on_teacher_counterfactual: float
    on_student_counterfactual: float

    @property
    def counted(self) -> bool:
        return (self.on_face >= 0.5) != bool(self.target)

    def sees(self, probability: float) -> bool | None:
        """Whether the judge decides the target on a recourse; None where it is not counted."""
        return (probability >= 0.5) == bool(self.target) if self.counted else None

    @property
    def sees_teacher_change(self) -> bool | None:
        return self.sees(self.on_teacher_counterfactual)

    @property
    def sees_student_change(self) -> bool | None:
        return self.sees(self.on_student_counterfactual)

    def to_dict(self) -> dict:
        return {"on_face": round(self.on_face, 6),
                "on_teacher_counterfactual": round(self.on_teacher_counterfactual, 6),
                "on_student_counterfactual": round(self.on_student_counterfactual, 6), "counted": self.counted,
                "sees_teacher_change": self.sees_teacher_change, "sees_student_change": self.sees_student_change}


@dataclass(frozen=True)
class IdentityView:
    """Whether each recourse is still the same person for dlib's face descriptor
    (``docs/metrics.md``, FVA and FS): its descriptor distance to the face, kept at
    ``≤ threshold``. It only measures; no recourse is steered by it."""

    teacher_distance: float  # ‖e(x) − e(x'_f)‖₂
    student_distance: float  # ‖e(x) − e(x'_g)‖₂
    detected: tuple[bool, bool, bool]  # dlib's detector found x, x'_f, x'_g (else its fixed box placed the landmarks)
    threshold: float = DLIB_THRESHOLD

    def kept(self, model: str) -> bool:
        """Whether the ``"teacher"`` or ``"student"`` recourse is the same person for dlib."""
        return getattr(self, f"{model}_distance") <= self.threshold

    def to_dict(self) -> dict:
        return {"teacher_distance": round(self.teacher_distance, 4), "student_distance": round(self.student_distance, 4),
                "teacher_kept": self.kept("teacher"), "student_kept": self.kept("student"),
                "threshold": self.threshold, "detected": list(self.detected)}


def judge_view(judge: nn.Module | None, x: torch.Tensor, teacher_counterfactual: torch.Tensor,
               student_counterfactual: torch.Tensor, index: int, target: int) -> JudgeView | None:
    """The judge's ``p_a`` on ``x`` and both recourses (each ``(3, H, W)``); None without a judge."""
    if judge is None:
        return None
    on = model_probabilities(judge, torch.stack([x, teacher_counterfactual, student_counterfactual]))[:, index]
    return JudgeView(target, *on.tolist())


def resolve_judge(judge: nn.Module | None | str, resolution: int) -> nn.Module | None:
    """The judge to use: the committed one for ``COMMITTED`` where it is there and sees
    ``resolution``, else None; a module as given."""
    if judge != COMMITTED:
        return judge
    from recourse import models

    try:
        judge = models.load_judge()
    except (CheckpointError, FileNotFoundError):  # an audit works without it; the card says so
        return None
    return judge if model_resolution(judge) == resolution else None


JUDGED_RESOLUTION = 64  # the faces the judges were calibrated on


JUDGED_PATH_STEP = 4  # the judges read every 4th point of a path: 9 of 33, about a second an audit


def judged_path(path: RecoursePath, x: torch.Tensor, edit: torch.Tensor, attribute: str) -> RecoursePath:
    """``path`` with the judges trained on other faces read along it (unchanged where none
    covers the attribute or they do not load: the audit's readings say why)."""
    alphas = path.alphas[::JUDGED_PATH_STEP]
    try:
        scores = path_readings(path_images(x, edit, alphas), attribute)
    except (CheckpointError, OSError, RuntimeError, ImportError):
        return path
    return replace(path, judged_alphas=tuple(alphas), judge_scores=scores) if scores else path


def independent_readings(x: torch.Tensor, teacher_counterfactual: torch.Tensor, student_counterfactual: torch.Tensor,
                         attribute: str, target: int, resolution: int) -> tuple[tuple[JudgeReading, ...], str | None]:
    """The calibrated judges' readings of an audit's three faces and, where there are none, why."""
    if resolution != JUDGED_RESOLUTION:  # as for the robust judge: another framing, no reading
        return (), None
    try:
        readings = judge_readings(x, teacher_counterfactual, student_counterfactual, attribute, target)
    except (CheckpointError, OSError, RuntimeError, ImportError) as error:
        return (), f"not loaded ({str(error).splitlines()[0][:200] if str(error) else type(error).__name__})"
    return readings, None if readings else f"no calibrated judge covers {attribute}"


def resolve_strong_judge(judge: nn.Module | None | str, resolution: int) -> tuple[nn.Module | None, str | None]:
    """The stronger judge to use and, where there is none, why: the committed one for
    ``COMMITTED`` ("not trained" while ``checkpoints/strong-judge`` does not exist, "in training
    (epoch k of n)" while it holds an early epoch's checkpoint); a module as given; None: "not used"."""
    if judge is None:
        return None, "not used"
    if judge != COMMITTED:
        return judge, None
    from recourse import models
    from recourse.locations import strong_judge_dir

    if not strong_judge_dir().is_dir():
        return None, "not trained"
    try:
        # a checkpoint its training saved after an early epoch is not the judge fixed in advance
        unfinished = models.training_unfinished(strong_judge_dir())
        judge = None if unfinished else models.load_strong_judge()
    except (CheckpointError, FileNotFoundError):
        return None, "does not load"
    if unfinished:
        return None, unfinished
    if model_resolution(judge) != resolution:
        return None, f"sees {model_resolution(judge)}-px faces, not {resolution}-px"
    return judge, None


# The resolution the identity instrument was calibrated at (assets/results/identity-calibration.json):
# a smaller face gives dlib too few pixels for a descriptor that means anything.
IDENTITY_RESOLUTION = 64
Describe = Callable[[torch.Tensor], Descriptors]


def resolve_identity(identity: Describe | None | str, resolution: int) -> tuple[Describe | None, str | None]:
    """The face descriptor to use and, where there is none, why: dlib's for ``COMMITTED`` on
    faces of at least ``IDENTITY_RESOLUTION`` px; a callable as given; None: "not used"."""
    if identity is None:
        return None, "not used"
    if identity != COMMITTED:
        return identity, None
    if resolution < IDENTITY_RESOLUTION:
        return None, f"{resolution}-px faces: below the {IDENTITY_RESOLUTION} px dlib's distance is calibrated at"
    from recourse.instruments.identity import face_descriptor

    try:
        return face_descriptor(), None
    except IdentityModelError:
        return None, "dlib or its models are not installed"


def shared_instruments(teacher: nn.Module) -> dict:
    """The committed judges and dlib's face descriptor for audits of ``teacher``'s faces, resolved
    once and given to every audit (``audit_image``'s ``judge``, ``strong_judge``, ``identity``):
    left to each audit, the stronger judge's folder is read again for every face (whether its
    training has finished). One that is not there is left to the audit, which says why in its
    ``missing``."""
    resolution = model_resolution(teacher)
    strong_judge, _ = resolve_strong_judge(COMMITTED, resolution)
    identity, _ = resolve_identity(COMMITTED, resolution)
    return {"judge": resolve_judge(COMMITTED, resolution),  # None where there is none: the audit says nothing else
            "strong_judge": COMMITTED if strong_judge is None else strong_judge,
            "identity": COMMITTED if identity is None else identity}


def identity_view(describe: Describe | None, x: torch.Tensor, teacher_counterfactual: torch.Tensor,
                  student_counterfactual: torch.Tensor) -> IdentityView | None:
    """dlib's distances of both recourses to ``x`` (each ``(3, H, W)`` in [0, 1]), from one call
    of the descriptor on the three faces; None without one."""
    if describe is None:
        return None
    described = describe(torch.stack([x, teacher_counterfactual, student_counterfactual]))
    vectors = np.asarray(described.vectors)
    distances = descriptor_distances(vectors[[0, 0]], vectors[1:])
    return IdentityView(float(distances[0]), float(distances[1]), tuple(bool(d) for d in described.detected))


def artifact_checks(x: torch.Tensor, teacher_counterfactual: torch.Tensor, student_counterfactual: torch.Tensor,
                    attribute: str, generator) -> tuple[ArtifactCheck, ArtifactCheck]:
    """The artifact check of each recourse (``(3, H, W)`` in [0, 1]) as an edit of ``x``: its
    colour readings always, its realism where ``generator``'s edit spaces model the attribute's part."""
    spaces = getattr(generator, "edit_spaces", None)
    # the landmarks are fitted only where a space reads them (a face without one costs no fit)
    points = face_landmarks(x[None])[0][0] if spaces is not None and spaces.edits(attribute) else None
    return (check_attribute_edit(x, teacher_counterfactual, attribute, points, spaces),
            check_attribute_edit(x, student_counterfactual, attribute, points, spaces))


def gated_ticks(record: dict | None, keys: tuple[str, str],
                artifacts: tuple[ArtifactCheck | None, ArtifactCheck | None]) -> dict | None:
    """An instrument's exported ``record`` with its ticks on x'_f and x'_g (``keys``) as they count
    (:func:`counted`); a tick that a failed check struck keeps its reading under ``"as_read"``."""
    if record is None:
        return None
    ticks = {key: counted(record[key], check) for key, check in zip(keys, artifacts)}
    struck = {key: record[key] for key in keys if ticks[key] != record[key]}
    return {**record, **ticks, "as_read": struck} if struck else record
