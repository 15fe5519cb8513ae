"""Metrics of ``docs/metrics.md`` as pure functions on tensors.

Decisions are ``(N,)`` or ``(N, 40)`` tensors of 0/1; validity flags ``(N,)`` booleans;
images ``(N, 3, H, W)`` in [0, 1]. Percentages are in %. A metric over an empty set is NaN.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch


def decisions(logits: torch.Tensor) -> torch.Tensor:
    """``d = [sigmoid(logit) >= 0.5]`` as 0/1 integers."""
    return (logits >= 0).long()


def recourse_cost(originals: torch.Tensor, counterfactuals: torch.Tensor) -> torch.Tensor:
    """``c(x, x') = mean |x' − x|`` over all 3·H·W values, one per image ``(N,)``."""
    return (counterfactuals - originals).abs().flatten(1).mean(dim=1)


# --- counterfactual quality (DiME / ACE protocol) -------------------------------------


def flip_rate(decisions_after: torch.Tensor, target: torch.Tensor) -> float:
    """FR: share of counterfactuals whose decision equals the target, in percent."""
    if len(target) == 0:
        return float("nan")
    return 100.0 * float((decisions_after == target).float().mean())


def mean_number_of_attributes_changed(before: torch.Tensor, after: torch.Tensor, attribute: int) -> float:
    """MNAC: mean count of the *other* 39 attributes whose (oracle) decision changed."""
    changed = (before != after).float()
    changed[:, attribute] = 0
    return float(changed.sum(dim=1).mean()) if len(before) else float("nan")


def frechet_distance(features_a: torch.Tensor, features_b: torch.Tensor) -> float:
    """Fréchet distance between Gaussians fitted to two feature sets ``(N, D)``, ``(M, D)``.

    ``‖μa − μb‖² + Tr(Σa + Σb − 2 (Σa^½ Σb Σa^½)^½)``, in float64 with symmetric square
    roots (eigen-decompositions), so no scipy is needed.
    """
    a, b = features_a.double(), features_b.double()
    mean_a, mean_b = a.mean(dim=0), b.mean(dim=0)
    cov_a, cov_b = torch.cov(a.T), torch.cov(b.T)
    root_a = _sqrt_psd(cov_a)
    cross = _sqrt_psd(root_a @ cov_b @ root_a)
    distance = (mean_a - mean_b).square().sum() + torch.trace(cov_a + cov_b - 2 * cross)
    return float(distance)


def _sqrt_psd(matrix: torch.Tensor) -> torch.Tensor:
    values, vectors = torch.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * values.clamp_min(0).sqrt()) @ vectors.T


# --- recourse under compression (teacher f, student g) --------------------------------


def mean_accuracy(decisions_: torch.Tensor, labels: torch.Tensor) -> float:
    """Acc: mean over attributes of the accuracy of ``(N, 40)`` decisions, in %."""
    return 100.0 * float((decisions_ == labels).float().mean(dim=0).mean())


def agreement(teacher_decisions: torch.Tensor, student_decisions: torch.Tensor) -> float:
    """Share of all decisions (e.g. 40 × N) on which student and teacher agree, in %."""
    return 100.0 * float((teacher_decisions == student_decisions).float().mean())


def validity(decisions_after: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``V_m(x') = [d^m_a(x') = t]`` per task, as booleans."""
    return decisions_after == target


def validity_drop(teacher_valid: torch.Tensor, student_accepts_teacher: torch.Tensor) -> tuple[float, int]:
    """VD over ``S = {V_f(x'_f) = 1}``: share of S whose teacher recourse the student rejects
    (``V_g(x'_f) = 0``), in %, and ``|S|``."""
    in_s = teacher_valid.bool()
    size = int(in_s.sum())
    if size == 0:
        return float("nan"), 0
    return 100.0 * float((~student_accepts_teacher.bool() & in_s).sum()) / size, size


def false_acceptance(teacher_partial_logits: torch.Tensor, student_partial_logits: torch.Tensor,
                     target: torch.Tensor, teacher_valid: torch.Tensor) -> tuple[float, int]:
    """``FA_α`` over ``S``: among partial edits ``x + α(x'_f − x)`` (one logit of attribute
    ``a`` per task, ``(N,)``) that the teacher still rejects, the share the student
    accepts, in %, and the number of such edits (NaN and 0 when there are none)."""
    rejected = teacher_valid.bool() & (decisions(teacher_partial_logits) != target)
    size = int(rejected.sum())
    if size == 0:
        return float("nan"), 0
    accepted = decisions(student_partial_logits) == target
    return 100.0 * float((accepted & rejected).sum()) / size, size


def logit_gap(teacher_logits: torch.Tensor, student_logits: torch.Tensor, target: torch.Tensor,
              teacher_valid: torch.Tensor) -> tuple[float, float]:
    """Over ``S``, at the teacher's recourse: ``mean |logit^g_a − logit^f_a|`` and its signed
    mean, positive where the student leans towards the target (NaN for an empty S)."""
    in_s = teacher_valid.bool()
    if not bool(in_s.any()):
        return float("nan"), float("nan")
    difference = (student_logits.double() - teacher_logits.double())[in_s]
    towards = torch.where(target[in_s].bool(), 1.0, -1.0).double()
    return float(difference.abs().mean()), float((difference * towards).mean())


def both_valid(teacher_valid: torch.Tensor, student_valid: torch.Tensor) -> torch.Tensor:
    """``B = {V_f(x'_f) = 1 and V_g(x'_g) = 1}`` as a mask."""
    return teacher_valid.bool() & student_valid.bool()


def recourse_gap(teacher_cost: torch.Tensor, student_cost: torch.Tensor, mask: torch.Tensor) -> float:
    """CRG over ``B``: ``mean_B |c_g − c_f| / mean_B c_f``.

    NaN for an empty B; 0 when all costs are zero; infinite when only the student pays.
    """
    mask = mask.bool()
    if not bool(mask.any()):
        return float("nan")
    gap = float((student_cost[mask] - teacher_cost[mask]).abs().mean())
    base = float(teacher_cost[mask].mean())
    if base == 0:
        return 0.0 if gap == 0 else math.inf
    return gap / base


def direction_cosines(teacher_change: torch.Tensor, student_change: torch.Tensor) -> torch.Tensor:
    """``cos(δ_f, δ_g)`` per task for changes ``(N, ...)``; 0 where either change is zero
    (a recourse that changes nothing shares no direction)."""
    f, g = teacher_change.flatten(1).double(), student_change.flatten(1).double()
    norms = f.norm(dim=1) * g.norm(dim=1)
    cosine = (f * g).sum(dim=1) / norms.clamp_min(1e-300)
    return torch.where(norms > 0, cosine, torch.zeros_like(cosine))


def directional_similarity(cosines: torch.Tensor, mask: torch.Tensor) -> float:
    """DirSim over ``B``: ``100 · mean_B cos(δ_f, δ_g)`` from per-task cosines
    (:func:`direction_cosines`); NaN for an empty B."""
    mask = mask.bool()
    if not bool(mask.any()):
        return float("nan")
    return 100.0 * float(cosines[mask].mean())


def success_rate(student_valid: torch.Tensor) -> float:
    """The student's own recourse success ``|{V_g(x'_g) = 1}| / N``, in %."""
    return 100.0 * float(student_valid.float().mean()) if len(student_valid) else float("nan")


def overhead(train_seconds: float, make_seconds: float, make_seconds_ptq_int8: float) -> float:
    """``(T_train(f) + T_make(variant)) / (T_train(f) + T_make(PTQ INT8))``."""
    return (train_seconds + make_seconds) / (train_seconds + make_seconds_ptq_int8)


@dataclass(frozen=True)
class ImageRecourse:
    """The app's per-image values for one task; ``None`` where undefined, with ``reason``."""

    teacher_valid: bool  # V_f(x'_f)
    student_accepts_teacher: bool  # V_g(x'_f)
    student_valid: bool  # V_g(x'_g)
    teacher_cost: float
    student_cost: float
    crg: float | None  # |c_g − c_f| / c_f
    dirsim: float | None  # 100 · cos(δ_f, δ_g)
    reason: str  # why CRG / DirSim are undefined, or ""

    def to_dict(self) -> dict:
        return asdict(self)


def image_recourse(teacher_valid: bool, student_accepts_teacher: bool, student_valid: bool,
                   teacher_cost: float, student_cost: float, cosine: float) -> ImageRecourse:
    """Per-image validity, costs, ``CRG_i`` and ``DirSim_i`` of one task, from its columns
    (``cosine`` = ``cos(x'_f − x, x'_g − x)``)."""
    reasons = []
    if not teacher_valid:
        reasons.append("the full-precision model's recourse is not valid for itself")
    if not student_valid:
        reasons.append("the compressed model's recourse is not valid for itself")
    if not reasons and teacher_cost == 0:
        reasons.append("the full-precision recourse changes nothing")
    crg = dirsim = None
    if not reasons:
        crg = abs(student_cost - teacher_cost) / teacher_cost
        dirsim = 100.0 * cosine
    return ImageRecourse(bool(teacher_valid), bool(student_accepts_teacher), bool(student_valid),
                         float(teacher_cost), float(student_cost), crg, dirsim, "; ".join(reasons))
