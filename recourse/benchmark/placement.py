"""A row's statistic placed among models that differ from the teacher without compression.

The question a compression author asks: does this method damage recourse more than weight noise
that costs the same agreement, and more than retraining the model? Each compressed row is placed
in two families, both made under the same shared generation noise as the row (seed ``i`` for
every model's edit of task ``i``):

- its own **matched-noise family**: ``D`` draws of the teacher with Gaussian weight noise, each
  matched to that row's decision agreement with the teacher (rows ``fp32-noise@<row>``,
  ``fp32-noise-s1@<row>``, …; :mod:`recourse.benchmark.weight_noise_floor`);
- the **retrained seeds**: independently trained full-precision classifiers (family ``fp32-ref``).

*Placed* means the two-sided p of the prediction statistic ``t = (v − m) / (s · √(1 + 1/D))`` on
``D − 1`` degrees of freedom, ``m`` and ``s`` the family's mean and sd over its ``D`` members: how
likely a further member of the family lies at least as far from the family's mean as ``v`` does
(normal members). The empirical p, ``(1 + #members at least as far from m) / (D + 1)``, assumes
nothing of the family's shape but cannot go below ``1 / (D + 1)``; both are given. Pure functions:
the benchmark's run and ``recourse recompute-claims`` read them alike.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
import torch

from recourse.benchmark.statistics import student_t_cdf, student_t_quantile


@dataclass(frozen=True)
class Placement:
    """Where ``value`` lies in a family of ``members`` (at least two, finite)."""

    value: float
    members: tuple[float, ...]
    mean: float
    sd: float
    t: float  # (value − mean) / (sd · √(1 + 1/D)); ±inf where the members do not vary and value differs
    p: float  # two-sided, Student's t on D − 1 degrees of freedom
    empirical_p: float

    def outside(self, alpha: float = 0.05) -> bool:
        return self.p < alpha

    def to_dict(self) -> dict:
        return {**asdict(self), "members": list(self.members)}


def _checked(members: Sequence[float]) -> np.ndarray:
    values = np.asarray([float(m) for m in members], np.float64)
    if len(values) < 2 or not np.isfinite(values).all():
        raise ValueError(f"a family needs at least two finite members, got {list(members)}")
    return values


def prediction_t(value: float, members: Sequence[float]) -> float:
    """``(value − mean) / (sd · √(1 + 1/D))`` of the family ``members``."""
    values = _checked(members)
    gap = float(value) - float(values.mean())
    if np.ptp(values) == 0:  # members all equal: their sd is 0 but for the mean's rounding
        return 0.0 if float(value) == float(values[0]) else math.copysign(math.inf, float(value) - float(values[0]))
    return gap / (float(values.std(ddof=1)) * math.sqrt(1.0 + 1.0 / len(values)))


def prediction_p(value: float, members: Sequence[float]) -> float:
    """Two-sided: the chance that a further member of the family lies as far from its mean."""
    t = prediction_t(value, members)
    if math.isinf(t):
        return 0.0
    return 2.0 * (1.0 - student_t_cdf(abs(t), len(members) - 1))


def empirical_p(value: float, members: Sequence[float]) -> float:
    """``(1 + #members at least as far from their mean as value) / (D + 1)``."""
    values = _checked(members)
    centre = values.mean()
    far = int((np.abs(values - centre) >= abs(float(value) - centre) - 1e-12).sum())
    return (1 + far) / (len(values) + 1)


def place(value: float, members: Sequence[float]) -> Placement:
    """``value`` placed in the family ``members``."""
    values = _checked(members)
    return Placement(float(value), tuple(float(v) for v in values), float(values.mean()), float(values.std(ddof=1)),
                     prediction_t(value, values), prediction_p(value, values), empirical_p(value, values))


def placement_power(effect: float, sd: float, members: int, alpha: float) -> float:
    """The power of the two-sided prediction test at level ``alpha`` to find a value ``effect``
    away from the mean of a family of ``members`` normal members of sd ``sd``: ``P(|T| > c)`` for
    ``T = (Z + δ) / W``, ``δ = effect / (sd · √(1 + 1/D))``, ``W = √(χ²_ν / ν)``, ``ν = D − 1``,
    ``c`` the ``1 − α/2`` quantile of Student's t on ``ν``: exact but for the quadrature over ``W``
    (the noncentral t's distribution function)."""
    if members < 2 or sd <= 0 or not 0 < alpha < 1:
        raise ValueError(f"power needs at least two members, a positive sd and α in (0, 1); got {members}, {sd}, {alpha}")
    nu = members - 1
    delta = abs(effect) / (sd * math.sqrt(1.0 + 1.0 / members))
    critical = student_t_quantile(1.0 - alpha / 2.0, nu)
    # over the chi variable u = √χ²_ν, whose density ∝ u^(ν−1)·exp(−u²/2) is bounded at 0 for every ν
    # (χ²'s own is not at ν = 1), on a midpoint grid over where its mass lies
    upper = math.sqrt(nu + 40.0 * math.sqrt(2.0 * nu) + 40.0)
    steps = 20_000
    u = (np.arange(steps) + 0.5) * upper / steps
    weights = np.exp((nu - 1) * np.log(u) - u * u / 2.0)
    weights /= weights.sum()
    w = torch.from_numpy(u / math.sqrt(nu))
    # P(Z + δ > c·W) + P(Z + δ < −c·W)
    tails = (torch.special.ndtr(delta - critical * w) + torch.special.ndtr(-critical * w - delta)).numpy()
    return float(np.clip((weights * tails).sum(), 0.0, 1.0))
