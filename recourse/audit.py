"""One per-image recourse audit: what the UI and ``python -m recourse audit`` both call.

For one face ``x``, attribute ``a`` and target ``t`` (default: flip the teacher's decision),
following ``docs/metrics.md``:

1. align ``x`` to the training framing (uploads) or take it as given (framed tensors);
2. both models' 40 probabilities and the attributes whose decisions differ;
3. paired recourse (:mod:`recourse.paired`): ``x'_f`` and ``x'_g`` with the same seed, the
   three validities, both costs, ``CRG_i`` and ``DirSim_i``;
4. IntegratedGradients (teacher vs twin) and Occlusion (teacher vs decider), with their
   Spearman rank correlation and top-10% IoU;
5. the independent robust judge's view of both recourses: "valid" says that a model moved,
   the judge says whether the attribute changed as a person would see it; beside it the
   stronger judge (radius 3) where it is trained;
6. identity: dlib's face-descriptor distance of each recourse to the face, the same person at
   ``≤ 0.6`` (``docs/metrics.md``, FVA). The judges and identity only measure: they never guide.

:func:`audit_steps` yields after step 2 so that a UI can show predictions first;
:func:`audit_image` runs it to the end.
"""

from __future__ import annotations

import functools
import math
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch
from PIL import Image
from torch import nn

from recourse import __version__
from recourse.attribution import AttributionComparison, AttributionConfig, compare_maps, integrated_gradients, occlusion
from recourse.checkpoints import CheckpointError
from recourse.data import ATTRIBUTES, attribute_index, to_float_images
from recourse.generation import CounterfactualConfig, FaceGenerator
from recourse.instruments.identity import DLIB_THRESHOLD, Descriptors, IdentityModelError, descriptor_distances
from recourse.instruments.readings import JudgeReading, judge_readings, path_readings
from recourse.metrics import ImageRecourse
from recourse.paired import Student, columns_of, paired_recourse, stop_on_paths
from recourse.recourse_path import RecoursePath, path_images, recourse_path
from recourse.stops import AuditStops, stops_for
from recourse.progress import StageCheck, no_check

ImageSource = str | os.PathLike | bytes | Image.Image | torch.Tensor


# Below these, a recourse's size and direction are noise, not findings (docs/metrics.md): a
# mean change under half an 8-bit grey level per pixel (0.5/255) is less than a PNG of the face
# can even store, and a face whose full-precision logit lies within 0.1 of the boundary
# (p 0.475-0.525) needs almost no change, so a ratio of two such costs ("2043% larger") or the
# direction of an edit of that size means nothing. (The mean cost of the full-precision
# recourse at margin 0 is 0.014: "teacher_cost" of assets/benchmark.json's margin sweep.)
NOISE_FLOOR_COST = 0.002
BOUNDARY_LOGIT = 0.1


def on_boundary(recourse: ImageRecourse, face_logit: float) -> bool:
    """Whether the face already sits on the full-precision model's boundary: its logit of the
    attribute within ``BOUNDARY_LOGIT`` of 0, or its valid recourse cheaper than the floor (but
    not free: a cost of 0 means the face had the target decision already, see ``reason``)."""
    return abs(face_logit) < BOUNDARY_LOGIT or (
        recourse.teacher_valid and 0 < recourse.teacher_cost < NOISE_FLOOR_COST)


def compared(recourse: ImageRecourse, face_logit: float) -> bool:
    """Whether ``CRG_i`` and ``DirSim_i`` are quoted: both defined, the face off the boundary
    and both recourses at or above the noise floor."""
    return (recourse.crg is not None and recourse.dirsim is not None and not on_boundary(recourse, face_logit)
            and recourse.student_cost >= NOISE_FLOOR_COST)


def minimal_recourse() -> CounterfactualConfig:
    """An audit's default: stop as soon as the guiding model's decision flips (margin 0), the
    smallest change of ``docs/metrics.md``; a margin past the boundary hides disagreements."""
    return CounterfactualConfig(margin=0.0)


@dataclass(frozen=True)
class AuditSettings:
    """Everything that changes an audit's numbers; saved with every result."""

    counterfactual: CounterfactualConfig = field(default_factory=minimal_recourse)
    attribution: AttributionConfig = field(default_factory=AttributionConfig)
    # Where the picture and the numbers are read on each model's edit (recourse.stops); None:
    # both at the counterfactual's own margin, the stop of its edit.
    stops: AuditStops | None = None

    @property
    def edit_config(self) -> CounterfactualConfig:
        """The settings of each model's whole edit: aimed past every stop."""
        if self.stops is None:
            return self.counterfactual
        return replace(self.counterfactual, margin=max(self.counterfactual.margin, self.stops.edit))

    def path_margins(self) -> dict[str, float]:
        """The stops drawn on each recourse path, by name."""
        return self.stops.margins() if self.stops is not None else {"stop": self.counterfactual.margin}

    def to_dict(self) -> dict:
        return {"counterfactual": asdict(self.counterfactual), "attribution": asdict(self.attribution),
                "stops": None if self.stops is None else self.stops.to_dict()}


def product_settings(picture_margin: float | None = None, numbers_at: str = "benchmark",
                     counterfactual: CounterfactualConfig | None = None) -> AuditSettings:
    """The app's and the command line's audit: pictures at the visible stop (or at
    ``picture_margin``), numbers at the benchmark's validated margin (or the boundary)."""
    return AuditSettings(counterfactual=counterfactual or CounterfactualConfig(),
                         stops=stops_for(picture_margin, numbers_at))


@dataclass(frozen=True)
class Predictions:
    """Step 2, shown before the slower steps finish. Tensors: ``aligned (3, H, W)`` in [0, 1],
    probabilities ``(40,)``. Only ``attributes`` may be read: an auditor's own model may predict
    a subset of CelebA's 40, and its other places hold p = 0.5 that is no prediction."""

    aligned: torch.Tensor
    alignment: str  # what the alignment did, for the user
    display: torch.Tensor | None  # the same framing at display size (3, D, D) when the photo is larger
    variant: str
    attribute: str
    target: int
    teacher_probabilities: torch.Tensor
    student_probabilities: torch.Tensor
    diverging: tuple[str, ...]  # attributes whose decisions differ (among ``attributes``)
    attributes: tuple[str, ...] = ATTRIBUTES  # what both models predict, in CelebA's order

    def to_dict(self) -> dict:
        return {
            "variant": self.variant, "attribute": self.attribute, "target": self.target, "alignment": self.alignment,
            "predicted_attributes": list(self.attributes),
            "teacher_probabilities": _named(self.teacher_probabilities, self.attributes),
            "student_probabilities": _named(self.student_probabilities, self.attributes),
            "diverging_attributes": list(self.diverging),
        }


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


@dataclass(frozen=True)
class AuditResult:
    """A whole audit. Images are ``(3, H, W)`` in [0, 1]; difference maps are ``x' − x``."""

    predictions: Predictions
    teacher_counterfactual: torch.Tensor  # x'_f
    student_counterfactual: torch.Tensor  # x'_g
    teacher_difference: torch.Tensor
    student_difference: torch.Tensor
    probabilities_after: dict[str, float]  # p_a of each model on each counterfactual
    student_logits: dict[str, float]  # the student's logit of a on x, x'_f and x'_g
    recourse: ImageRecourse  # V_f(x'_f), V_g(x'_f), V_g(x'_g), costs, CRG_i, DirSim_i
    attributions: tuple[AttributionComparison, ...]
    judge: JudgeView | None  # None where no judge applies (not committed, or another input size)
    settings: AuditSettings
    seed: int
    student_model: str  # "integer" or "twin": which form of the student made the decisions
    versions: dict[str, str]
    seconds: dict[str, float]
    strong_judge: JudgeView | None = None  # the stronger (radius-3) judge; why it is absent: ``missing``
    identity: IdentityView | None = None
    # instrument -> why it is not in this audit ("not trained", ...), so that a card says so
    missing: dict[str, str] = field(default_factory=dict)
    # the calibrated judges' readings of x, x'_f and x'_g, independent ones first
    judge_readings: tuple[JudgeReading, ...] = ()
    # each model's whole edit x̃ (3, H, W) and its path: both models' logits along it, the stops
    teacher_edit: torch.Tensor | None = None
    student_edit: torch.Tensor | None = None
    paths: tuple[RecoursePath, ...] = ()

    @property
    def face_logit(self) -> float:
        """The full-precision logit of the audited attribute on the face."""
        p = self.predictions
        return float(torch.logit(p.teacher_probabilities[attribute_index(p.attribute)].double()))

    @property
    def compared(self) -> bool:
        """Whether CRG_i and DirSim_i are above the noise floor (see :func:`compared`)."""
        return compared(self.recourse, self.face_logit)

    @property
    def verdict(self) -> str:
        return (verdict(self.recourse, self.judge, self.predictions.attribute, self.face_logit)
                + identity_verdict(self.identity, self.recourse))

    def to_dict(self) -> dict:
        """Every value of the audit (the pictures are added by :func:`recourse.render.audit_record`)."""
        r = self.recourse
        return {
            **self.predictions.to_dict(),
            "verdict": self.verdict,
            "recourse": {
                "teacher_valid": r.teacher_valid, "student_accepts_teacher": r.student_accepts_teacher,
                "student_valid": r.student_valid, "teacher_cost": round(r.teacher_cost, 6),
                "student_cost": round(r.student_cost, 6), "crg": _round(r.crg), "dirsim": _round(r.dirsim),
                "reason": r.reason,
                "noise_floor": {"cost": NOISE_FLOOR_COST, "boundary_logit": BOUNDARY_LOGIT,
                                "face_logit": round(self.face_logit, 6),
                                "on_boundary": on_boundary(r, self.face_logit), "compared": self.compared},
            },
            "probabilities_after": {k: round(v, 6) for k, v in self.probabilities_after.items()},
            "student_logits": {k: round(v, 6) for k, v in self.student_logits.items()},
            "attributions": [a.to_dict() for a in self.attributions],
            "judge": None if self.judge is None else self.judge.to_dict(),
            "strong_judge": None if self.strong_judge is None else self.strong_judge.to_dict(),
            "identity": None if self.identity is None else self.identity.to_dict(),
            "judge_readings": [reading.to_dict() for reading in self.judge_readings],
            "missing": dict(self.missing),
            "paths": [path.to_dict() for path in self.paths],
            "student_model": self.student_model,
            "settings": self.settings.to_dict(), "seed": self.seed, "versions": self.versions,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


@dataclass(frozen=True)
class AuditStep:
    """Progress of :func:`audit_steps`: a stage name, the fraction done, and what is ready."""

    stage: str
    fraction: float
    predictions: Predictions | None = None
    result: AuditResult | None = None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _named(probabilities: torch.Tensor, attributes: tuple[str, ...] = ATTRIBUTES) -> dict[str, float]:
    """``attributes``' probabilities by name; the others (not predicted) are left out, not numbers."""
    return {name: round(float(p), 6) for name, p in zip(ATTRIBUTES, probabilities) if name in attributes}


def predicted_attributes(*models: nn.Module) -> tuple[str, ...]:
    """The attributes every one of ``models`` predicts, in CelebA's order: an auditor's own
    model says which (``supported_attributes``, recourse.foreign); the project's predict all 40."""
    kept = set(ATTRIBUTES)
    for model in models:
        kept &= set(getattr(model, "supported_attributes", ATTRIBUTES))
    return tuple(name for name in ATTRIBUTES if name in kept)


def verdict(recourse: ImageRecourse, judge: JudgeView | None = None, attribute: str = "the attribute",
            face_logit: float | None = None) -> str:
    """The audit's outcome in plain words: the two models, then what the robust judge sees.
    ``face_logit``: the full-precision logit of the attribute on the face (None: not known,
    only the costs are held against the noise floor)."""
    return _models_verdict(recourse, face_logit) + judge_verdict(judge, recourse, attribute)


def judge_says(judge: JudgeView | None, model: str) -> str:
    """Whether the judge sees the attribute change in the ``"teacher"`` or ``"student"``
    recourse, in a word: "yes", "no", "not counted" (it decided the target on the face
    already) or "no judge"."""
    if judge is None:
        return "no judge"
    if not judge.counted:
        return "not counted"
    return "yes" if getattr(judge, f"sees_{model}_change") else "no"


def judge_verdict(judge: JudgeView | None, recourse: ImageRecourse, attribute: str) -> str:
    """What the robust judge sees in the valid recourses, as a sentence ("" without a judge)."""
    if judge is None:
        return ""
    name = attribute.replace("_", " ")
    if not judge.counted:
        state = "with" if judge.target else "without"
        return (f" The robust judge already sees the face {state} {name} (p {judge.on_face:.2f}), so it cannot "
                "tell whether the recourses change it.")
    recourses = {"full-precision": (recourse.teacher_valid, judge.sees_teacher_change),
                 "compressed": (recourse.student_valid, judge.sees_student_change)}
    seen = [model for model, (valid, sees) in recourses.items() if valid and sees]
    unseen = [model for model, (valid, sees) in recourses.items() if valid and not sees]
    blind = "likely moved the classifier without a change a person would see"
    if seen and unseen:
        return (f" The robust judge sees {name} change in the {seen[0]} recourse but not in the {unseen[0]} one, "
                f"which {blind}.")
    if len(seen) == 2:
        return f" The robust judge sees {name} change in both recourses."
    if len(unseen) == 2:
        return f" The robust judge sees {name} change in neither recourse: both {blind}."
    if seen:
        return f" The robust judge sees {name} change in the {seen[0]} recourse."
    if unseen:
        return f" The robust judge does not see {name} change in the {unseen[0]} recourse, which {blind}."
    return ""


def identity_verdict(identity: IdentityView | None, recourse: ImageRecourse) -> str:
    """A sentence where a valid recourse is no longer the same person for dlib ("" otherwise:
    the cards give every distance)."""
    if identity is None:
        return ""
    lost = [f"the {name} recourse ({getattr(identity, f'{model}_distance'):.2f})"
            for model, name, valid in (("teacher", "full-precision", recourse.teacher_valid),
                                       ("student", "compressed", recourse.student_valid))
            if valid and not identity.kept(model)]
    if not lost:
        return ""
    return (f" dlib's face descriptor no longer recognises the person in {' and '.join(lost)}: beyond its "
            f"same-person distance {identity.threshold:g}, so that change is not recourse for this person.")


def _models_verdict(recourse: ImageRecourse, face_logit: float | None = None) -> str:
    if not recourse.teacher_valid:
        return ("The full-precision model found no valid recourse for this face, so there is no recourse "
                "for the quantized model to honour.")
    first = ("The quantized model rejects the recourse the full-precision model accepts."
             if not recourse.student_accepts_teacher else
             "The quantized model accepts the recourse the full-precision model accepts.")
    if on_boundary(recourse, 1.0 if face_logit is None else face_logit):
        where = "" if face_logit is None else f" (logit {face_logit:+.3f}, p {1 / (1 + math.exp(-face_logit)):.3f})"
        return (f"The face already sits on the full-precision model's decision boundary{where}: its recourse "
                f"changes the face by {recourse.teacher_cost:.4f} on average, so the two recourses' sizes and "
                f"directions are not compared (below a change of {NOISE_FLOOR_COST} or within {BOUNDARY_LOGIT} "
                f"logits of the boundary they are noise). " + first)
    if not recourse.student_valid:
        return first + " Guided by itself, the quantized model finds no valid recourse."
    if recourse.crg is None or recourse.dirsim is None:  # e.g. the full-precision recourse changes nothing
        return first + f" Its own recourse cannot be compared with the full-precision one: {recourse.reason}."
    if recourse.student_cost < NOISE_FLOOR_COST:
        return (first + f" Its own recourse changes the face by only {recourse.student_cost:.4f} on average, "
                f"below the {NOISE_FLOOR_COST} noise floor: the quantized model sits on its boundary here, so the "
                f"sizes and directions are not compared.")
    change = recourse.student_cost / recourse.teacher_cost - 1
    size = f"{abs(change):.0%} {'larger' if change >= 0 else 'smaller'}"
    return (first + f" Its own recourse is a {size} change than the full-precision one, in a direction "
            f"{recourse.dirsim:.0f}% similar (100% = the same direction).")


DISPLAY_RESOLUTION = 256


def prepare_image(image: ImageSource, resolution: int,
                  check: StageCheck = no_check) -> tuple[torch.Tensor, str, torch.Tensor | None]:
    """``(3, R, R)`` in [0, 1], a message, and the same framing at display size when the photo
    has more pixels than the model sees. Photos (path, bytes, PIL) are aligned; a
    ``(3, R, R)`` tensor is taken as already framed. ``check`` after decoding and aligning."""
    if isinstance(image, torch.Tensor):
        if image.shape != (3, resolution, resolution) or not image.is_floating_point():
            raise ValueError(f"a framed image must be a float (3, {resolution}, {resolution}) tensor, "
                             f"got {tuple(image.shape)} {image.dtype}")
        if not bool(torch.isfinite(image).all()) or float(image.min()) < 0 or float(image.max()) > 1:
            raise ValueError("a framed image must have values in [0, 1]")
        return image.float().contiguous(), "already framed; used as given", None
    from recourse.faces import align_face, crop_square, load_photo

    photo = load_photo(image)
    check("decode")
    aligned = align_face(photo, resolution)
    check("align")
    left, _, right, _ = aligned.crop_box
    display = None
    if right - left > resolution:  # the photo holds more detail than the model's input
        display = to_float_images(crop_square(photo, aligned.crop_box, DISPLAY_RESOLUTION))
    return to_float_images(aligned.image), aligned.message, display


def _check_target(target: int | None) -> None:
    if target is not None and target not in (0, 1):
        raise ValueError(f"target must be 0, 1 or None (flip the full-precision decision), got {target!r}")


def model_resolution(model: nn.Module) -> int:
    return getattr(getattr(model, "config", None), "resolution", 64)


COMMITTED = "committed"


def judge_view(judge: nn.Module | None, x: torch.Tensor, teacher_counterfactual: torch.Tensor,
               student_counterfactual: torch.Tensor, index: int, target: int) -> JudgeView | None:
    """The judge's ``p_a`` on ``x`` and both recourses (each ``(3, H, W)``); None without a judge."""
    if judge is None:
        return None
    on = _probabilities(judge, torch.stack([x, teacher_counterfactual, student_counterfactual]))[:, index]
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
    from recourse.paths import strong_judge_dir

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


@torch.no_grad()
def _probabilities(model: nn.Module, images: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(model(images))


def read_stops(x: torch.Tensor, attribute: str, target: int, teacher: nn.Module, student: Student, paired,
               stops: AuditStops | None) -> tuple[torch.Tensor, torch.Tensor, ImageRecourse]:
    """The pictures ``x'_f``, ``x'_g`` (at the visible stop) and the per-image numbers (at the
    numbers' stop) of one audited face; without stops, both where each edit stopped."""
    if stops is None:
        return paired.teacher.images[0], paired.student.counterfactuals[0], paired.columns.image(0)
    targets = torch.tensor([target])

    def both_at(margin: float) -> tuple[torch.Tensor, torch.Tensor]:
        teacher_at = stop_on_paths(x[None], paired.teacher.edits, teacher, attribute, targets, margin)
        student_at = stop_on_paths(x[None], paired.student.edits, student.decider, attribute, targets, margin)
        return teacher_at, student_at

    pictures = both_at(stops.visible)
    numbers = pictures if stops.numbers == stops.visible else both_at(stops.numbers)
    columns = columns_of(x[None], attribute, targets, teacher, student, *numbers)
    return pictures[0][0], pictures[1][0], columns.image(0)


def audit_steps(
    image: ImageSource,
    variant: str,
    attribute: str,
    target: int | None = None,
    settings: AuditSettings = AuditSettings(),
    teacher: nn.Module | None = None,
    student: Student | None = None,
    generator: FaceGenerator | None = None,
    judge: nn.Module | None | str = COMMITTED,
    strong_judge: nn.Module | None | str = COMMITTED,
    identity: Describe | None | str = COMMITTED,
    check: StageCheck = no_check,
) -> Iterator[AuditStep]:
    """Run an audit, yielding after each stage; the last step carries the :class:`AuditResult`.
    ``check`` is called after each stage, decoding, aligning and each counterfactual among
    them (a time limit raises there).

    ``teacher``, ``student`` and ``generator`` default to the committed checkpoints
    (loaded once); tests pass tiny ones. ``judge`` and ``strong_judge`` default to the
    committed robust judges where they are there and see the teacher's input size; ``identity``
    to dlib's face descriptor (``recourse.instruments.identity.face_descriptor``) on faces of
    at least 64 px; ``None``: left out. What is left out, and why, is in ``missing``.
    """
    from recourse import models

    index = attribute_index(attribute)
    _check_target(target)
    teacher = teacher if teacher is not None else models.load_teacher()
    student = student if student is not None else models.load_student(variant)
    # generate() works on its own copy of the scheduler, so audits may share the generator
    # the committed generator, its files checked against their manifest
    generator = generator if generator is not None else models.load_generator()
    seconds: dict[str, float] = {}
    started = time.perf_counter()

    # (1, 2) framing and predictions
    x, alignment, display = prepare_image(image, model_resolution(teacher), check)
    teacher_p = _probabilities(teacher, x[None])[0]
    with torch.no_grad():
        student_logits_before = student.decider(x[None])[0]  # (40,)
    student_p = torch.sigmoid(student_logits_before)
    teacher_d, student_d = teacher_p >= 0.5, student_p >= 0.5
    predicted = predicted_attributes(teacher, student.twin, student.decider)
    diverging = tuple(name for name, differs in zip(ATTRIBUTES, (teacher_d != student_d).tolist())
                      if differs and name in predicted)
    target = int(not teacher_d[index]) if target is None else int(target)
    predictions = Predictions(x, alignment, display, variant, attribute, target, teacher_p, student_p, diverging,
                              predicted)
    seconds["predictions"] = time.perf_counter() - started
    yield AuditStep("predictions", 0.1, predictions=predictions)

    # (3) paired recourse, one seed for both models
    seed = settings.counterfactual.seed
    paired = paired_recourse(x[None], attribute, torch.tensor([target]), teacher, student, settings.edit_config,
                             generator, seeds=(seed,), check=check)
    seconds["counterfactuals"] = time.perf_counter() - started - seconds["predictions"]
    yield AuditStep("counterfactuals", 0.6, predictions=predictions)
    stopped = read_stops(x, attribute, target, teacher, student, paired, settings.stops)
    x_f, x_g, image_recourse_ = stopped
    with torch.no_grad():
        on_teacher, on_own = (float(v) for v in student.decider(torch.stack([x_f, x_g]))[:, index])
        twin_on_own = float(torch.sigmoid(student.twin(x_g[None])[0, index]))
    probabilities_after = {
        "teacher_on_teacher_counterfactual": float(_probabilities(teacher, x_f[None])[0, index]),
        "teacher_on_student_counterfactual": float(_probabilities(teacher, x_g[None])[0, index]),
        "student_on_teacher_counterfactual": 1 / (1 + math.exp(-on_teacher)),
        "student_on_student_counterfactual": 1 / (1 + math.exp(-on_own)),
        "twin_on_student_counterfactual": twin_on_own,
    }
    student_logits = {"original": float(student_logits_before[index]), "teacher_counterfactual": on_teacher,
                      "student_counterfactual": on_own}
    teacher_edit, student_edit = paired.teacher.edits[0], paired.student.edits[0]
    mark = time.perf_counter()
    paths = tuple(recourse_path(x, edit, index, target, teacher, student.decider, guided_by, settings.path_margins())
                  for edit, guided_by in ((teacher_edit, "teacher"), (student_edit, "student")))
    if model_resolution(teacher) == JUDGED_RESOLUTION:
        paths = tuple(judged_path(path, x, edit, attribute) for path, edit in zip(paths, (teacher_edit, student_edit)))
    seconds["paths"] = time.perf_counter() - mark

    # (4) attributions: same method and settings on both models
    mark = time.perf_counter()
    config = settings.attribution
    gradient = compare_maps("integrated-gradients", integrated_gradients(teacher, x, index, config),
                            integrated_gradients(student.twin, x, index, config), "twin", config)
    check("gradient attributions")
    yield AuditStep("gradient attributions", 0.8, predictions=predictions)
    occluded = compare_maps("occlusion", occlusion(teacher, x, index, config),
                            occlusion(student.decider, x, index, config), student.kind, config)
    seconds["attributions"] = time.perf_counter() - mark
    check("attributions")
    yield AuditStep("attributions", 0.9, predictions=predictions)

    # (5, 6) what the judges see and whether the person is kept: they never guide
    mark = time.perf_counter()
    resolution = model_resolution(teacher)
    judged = judge_view(resolve_judge(judge, resolution), x, x_f, x_g, index, target)
    strong, missing_strong = resolve_strong_judge(strong_judge, resolution)
    describe, missing_identity = resolve_identity(identity, resolution)
    missing = {name: why for name, why in (("strong_judge", missing_strong), ("identity", missing_identity)) if why}
    strongly_judged = judge_view(strong, x, x_f, x_g, index, target)
    seconds["judges"] = time.perf_counter() - mark
    mark = time.perf_counter()
    kept = identity_view(describe, x, x_f, x_g)
    seconds["identity"] = time.perf_counter() - mark
    mark = time.perf_counter()
    readings, missing_readings = independent_readings(x, x_f, x_g, attribute, target, resolution)
    if missing_readings:
        missing["judge_readings"] = missing_readings
    seconds["judge readings"] = time.perf_counter() - mark
    seconds["total"] = time.perf_counter() - started

    result = AuditResult(
        predictions=predictions, teacher_counterfactual=x_f, student_counterfactual=x_g,
        teacher_difference=x_f - x, student_difference=x_g - x, probabilities_after=probabilities_after,
        student_logits=student_logits,
        recourse=image_recourse_, attributions=(gradient, occluded), judge=judged, settings=settings,
        seed=seed, student_model=student.kind, versions=_versions(), seconds=seconds,
        strong_judge=strongly_judged, identity=kept, missing=missing, judge_readings=readings,
        teacher_edit=teacher_edit, student_edit=student_edit, paths=paths,
    )
    yield AuditStep("done", 1.0, predictions=predictions, result=result)


def audit_image(
    image: ImageSource,
    variant: str,
    attribute: str,
    target: int | None = None,
    settings: AuditSettings = AuditSettings(),
    teacher: nn.Module | None = None,
    student: Student | None = None,
    generator: FaceGenerator | None = None,
    progress: Callable[[AuditStep], None] | None = None,
    judge: nn.Module | None | str = COMMITTED,
    strong_judge: nn.Module | None | str = COMMITTED,
    identity: Describe | None | str = COMMITTED,
) -> AuditResult:
    """Audit one face; see the module docstring. ``image``: a photo (path, bytes or PIL,
    aligned automatically) or a framed ``(3, H, W)`` tensor in [0, 1]."""
    for step in audit_steps(image, variant, attribute, target, settings, teacher, student, generator, judge,
                            strong_judge, identity):
        if progress is not None:
            progress(step)
        if step.result is not None:
            return step.result
    raise RuntimeError("the audit ended without a result")  # unreachable: the last step carries it


@functools.lru_cache(maxsize=1)
def _versions() -> dict[str, str]:
    import captum

    return {"recourse": __version__, "torch": torch.__version__, "captum": captum.__version__,
            "numpy": np.__version__, "python": platform.python_version()}
