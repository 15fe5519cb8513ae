"""The recourse path: one model's whole edit ``x → x̃`` (before its stop) sampled at K points,
with both models' logits of the audited attribute along it (``docs/metrics.md``, "The
recourse path").

Where each model's decision flips on the *same* path is the per-image divergence in units a
person can follow: "on the full-precision model's edit, the 4-bit model needs 30% more of the
same change". The stops (the boundary, the benchmark's margin, the visible stop) are where the
guiding model passes each margin on its own path. Pure functions on tensors; the models are
only read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

PATH_POINTS = 33  # α = 0, 1/32, …, 1: a step of 3% of the edit, finer than a person can see
# A flip before this share of the edit is not set against the other as a ratio: there the
# path has moved the face by less than a tenth of its edit, so one or two sampling steps read as a
# large ratio (flips at 1.5% and 3.1% of the edit made "needs 107% more of the same edit").
MIN_FLIP_SHARE = 0.10


def path_images(x: torch.Tensor, end: torch.Tensor, alphas: Sequence[float] | np.ndarray) -> torch.Tensor:
    """``x + α (end − x)`` for each α: ``(K, 3, H, W)`` from two ``(3, H, W)`` faces."""
    alphas_t = torch.as_tensor(np.asarray(alphas, np.float32)).reshape(-1, 1, 1, 1)
    return (x[None] + alphas_t * (end - x)[None]).clamp(0, 1)


def first_crossing(alphas: np.ndarray, toward_target: np.ndarray, level: float) -> float | None:
    """The first α where ``toward_target`` (a logit signed so that up is toward the target)
    reaches ``level``, linearly interpolated between the two samples around it; 0 where it is
    there from the start, None where the path never reaches it."""
    alphas, values = np.asarray(alphas, np.float64), np.asarray(toward_target, np.float64)
    reached = np.flatnonzero(values >= level)
    if reached.size == 0:
        return None
    first = int(reached[0])
    if first == 0:
        return 0.0
    before, after = values[first - 1], values[first]
    share = (level - before) / (after - before)  # after > level > before: a proper fraction
    return float(alphas[first - 1] + share * (alphas[first] - alphas[first - 1]))


@dataclass(frozen=True)
class RecoursePath:
    """One model's edit, sampled: both models' logits of the attribute at each α, where each
    decision flips, and where the guiding model passes each named margin (its stops)."""

    guided_by: str  # "teacher" or "student": whose edit this is
    target: int
    alphas: tuple[float, ...]
    teacher_logits: tuple[float, ...]
    student_logits: tuple[float, ...]  # the compressed model's deciding (integer) kernels
    teacher_flip: float | None  # first α where the full-precision model decides the target
    student_flip: float | None
    stops: dict[str, float | None] = field(default_factory=dict)  # stop name → α on this path
    margins: dict[str, float] = field(default_factory=dict)  # stop name → its margin (logits)
    # the judges trained on other faces, read at some of the α (their scores; NaN: no face found)
    judged_alphas: tuple[float, ...] = ()
    judge_scores: dict[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def extra_edit(self) -> float | None:
        """How much more of the same edit the later-flipping model needs, relative to the
        earlier one: 0.3 = 30% more; None where either never flips or the earlier flips at 0."""
        if self.teacher_flip is None or self.student_flip is None:
            return None
        early, late = sorted((self.teacher_flip, self.student_flip))
        return None if early <= 0 else late / early - 1

    def to_dict(self) -> dict:
        def rounded(values):
            return [round(float(v), 5) for v in values]

        return {"guided_by": self.guided_by, "target": self.target, "alphas": rounded(self.alphas),
                "teacher_logits": rounded(self.teacher_logits), "student_logits": rounded(self.student_logits),
                "teacher_flip": self.teacher_flip, "student_flip": self.student_flip, "stops": dict(self.stops),
                "margins": dict(self.margins), "extra_edit": self.extra_edit,
                "judged_alphas": rounded(self.judged_alphas),
                "judge_scores": {name: [None if math.isnan(v) else round(float(v), 5) for v in values]
                                 for name, values in self.judge_scores.items()}}


@torch.no_grad()
def recourse_path(x: torch.Tensor, end: torch.Tensor, index: int, target: int, teacher: nn.Module,
                  student_decider: nn.Module, guided_by: str, margins: Mapping[str, float],
                  points: int = PATH_POINTS) -> RecoursePath:
    """Sample ``x → end`` (each ``(3, H, W)`` in [0, 1]) at ``points`` evenly spaced α and read
    both models' logit of attribute ``index``; ``margins`` names the stops (e.g. ``{"boundary":
    0, "benchmark": 2, "visible": 10}``), each found on the guiding model's logit."""
    if guided_by not in ("teacher", "student"):
        raise ValueError(f"guided_by must be 'teacher' or 'student', got {guided_by!r}")
    if points < 2:
        raise ValueError("a path needs at least 2 points")
    alphas = np.linspace(0.0, 1.0, points)
    images = path_images(x, end, alphas)
    sign = 1.0 if target == 1 else -1.0
    teacher_logits = teacher(images)[:, index].double().numpy()
    student_logits = student_decider(images)[:, index].double().numpy()
    guiding = teacher_logits if guided_by == "teacher" else student_logits
    stops = {name: first_crossing(alphas, sign * guiding, margin) for name, margin in margins.items()}
    return RecoursePath(
        guided_by=guided_by, target=int(target), alphas=tuple(alphas.tolist()),
        teacher_logits=tuple(teacher_logits.tolist()), student_logits=tuple(student_logits.tolist()),
        teacher_flip=first_crossing(alphas, sign * teacher_logits, 0.0),
        student_flip=first_crossing(alphas, sign * student_logits, 0.0),
        stops=stops, margins=dict(margins))


def divergence_sentence(path: RecoursePath, student_name: str, sizes_compared: bool = True) -> str:
    """What a person reads under the plot: where the two decisions flip on this edit, and
    where the edit ends before the visible stop (its picture is then the whole edit).
    ``sizes_compared``: False where the audit's verdict says the two recourses' sizes are not
    compared (the noise floor), so that the flips are given without "needs N% more"."""
    return _flips_sentence(path, student_name, sizes_compared) + _short_of_visible(path)


def sampling_step(path: RecoursePath) -> float:
    """The share of the edit between two sampled points of the path (1/32 at ``PATH_POINTS``)."""
    return 1 / (len(path.alphas) - 1)


def _short_of_visible(path: RecoursePath) -> str:
    if "visible" not in path.margins or path.stops.get("visible") is not None:
        return ""
    guiding = path.teacher_logits if path.guided_by == "teacher" else path.student_logits
    reached = (1.0 if path.target == 1 else -1.0) * guiding[-1]
    return (f" This edit ends at logit {reached:+.1f} toward the target, short of the visible stop "
            f"({path.margins['visible']:g}): its picture is the whole edit.")


def _flips_sentence(path: RecoursePath, student_name: str, sizes_compared: bool = True) -> str:
    whose = "the full-precision model's edit" if path.guided_by == "teacher" else f"{student_name}'s own edit"
    flips = {"the full-precision model": path.teacher_flip, student_name: path.student_flip}
    never = [name for name, alpha in flips.items() if alpha is None]
    if len(never) == 2:
        return f"On {whose}, neither model's decision flips."
    if never:
        other = next(name for name in flips if name not in never)
        return (f"On {whose}, {other} flips at {flips[other]:.0%} of the edit; {never[0]} does not flip anywhere "
                "along it.")
    return f"On {whose}, " + _both_flip(path, student_name, sizes_compared)


def _both_flip(path: RecoursePath, student_name: str, sizes_compared: bool) -> str:
    """Where both decisions flip, as the rest of a sentence; a ratio only where it can be read:
    both flips past ``MIN_FLIP_SHARE`` of the edit, more than a sampling step apart, and the
    verdict comparing the recourses' sizes."""
    teacher, student = path.teacher_flip, path.student_flip
    step = sampling_step(path)
    if max(teacher, student) < MIN_FLIP_SHARE:
        if f"{teacher:.0%}" == f"{student:.0%}":
            return f"both models flip within the first {MIN_FLIP_SHARE:.0%} of the edit (both at {teacher:.0%})."
        return (f"both models flip within the first {MIN_FLIP_SHARE:.0%} of the edit (at {teacher:.0%} and "
                f"{student:.0%}), too early to say which needs more of it.")
    if abs(teacher - student) <= step:
        return (f"both models flip at about {min(teacher, student):.0%} of the edit (less than one sampling step, "
                f"{step:.0%} of the edit, apart).")
    both = f"the full-precision model flips at {teacher:.0%} of the edit and {student_name} at {student:.0%}"
    if not sizes_compared:
        return both + "; the two recourses' sizes are not compared here (see the verdict)."
    if min(teacher, student) < MIN_FLIP_SHARE:
        return both + "."
    later = student_name if student > teacher else "the full-precision model"
    return both + f": {later} needs {path.extra_edit:.0%} more of the same edit."
