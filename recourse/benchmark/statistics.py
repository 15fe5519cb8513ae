"""Statistics of the benchmark's claims: intervals that do not collapse on zero counts, a
seed level that is not limited to a handful of resamples, p-values with Holm and
Benjamini–Hochberg corrections for a family of claims, an equivalence test (TOST) for "on
the noise floor", and the power calculation that says how many tasks a claim needs.

Pure functions on numbers and tensors, no model or file in sight (definitions in
``docs/metrics.md``, "Statistics of the claims"). Only the standard library and torch:
the package does not depend on scipy, so the Student t distribution is computed here
(regularised incomplete beta by its continued fraction) and checked against table values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

import torch

_NORMAL = NormalDist()


@dataclass(frozen=True)
class Interval:
    """A two-sided interval ``[low, high]``; NaN bounds where it is undefined (no trials)."""

    low: float
    high: float

    def as_list(self, scale: float = 1.0) -> list[float]:
        return [self.low * scale, self.high * scale]


def normal_quantile(p: float) -> float:
    return _NORMAL.inv_cdf(p)


# --- Student's t, without scipy ----------------------------------------------------------

def _beta_continued_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, fpmin = 3e-16, 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > fpmin else fpmin)
    result = d
    for m in range(1, 500):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > fpmin else fpmin)
            c = 1.0 + numerator / c
            c = c if abs(c) > fpmin else fpmin
            result *= d * c
        if abs(d * c - 1.0) < tiny:
            break
    return result


def regularized_beta(x: float, a: float, b: float) -> float:
    """``I_x(a, b)``, the regularised incomplete beta function, for ``0 <= x <= 1``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    # the fraction converges fast on the side of the mean; the other side by symmetry
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(1.0 - x, b, a) / b


def student_t_cdf(t: float, df: float) -> float:
    """``P(T <= t)`` for Student's t with ``df`` degrees of freedom (``inf``: the normal)."""
    if math.isinf(df):
        return _NORMAL.cdf(t)
    tail = 0.5 * regularized_beta(df / (df + t * t), df / 2.0, 0.5)  # P(T > |t|)
    return 1.0 - tail if t > 0 else tail


def student_t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t, by bisection on :func:`student_t_cdf`."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if math.isinf(df):
        return _NORMAL.inv_cdf(p)
    low, high = -1.0, 1.0
    while student_t_cdf(low, df) > p:
        low *= 2.0
    while student_t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if student_t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, abs(middle)):
            break
    return (low + high) / 2.0


# --- intervals of proportions ------------------------------------------------------------

def wilson_interval(successes: float, trials: float, level: float = 0.95) -> Interval:
    """Wilson's score interval of a proportion (in [0, 1]). Unlike the percentile bootstrap
    it does not collapse to [0, 0] on zero successes: 0 of 20 gives an upper bound of
    ``z² / (n + z²)`` (0.161 at 95%). ``successes`` may be a mean count over seeds."""
    if trials <= 0:
        return Interval(float("nan"), float("nan"))
    z = normal_quantile(0.5 + level / 2)
    p = successes / trials
    denominator = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(max(p * (1 - p) / trials + z * z / (4 * trials * trials), 0.0))
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


def newcombe_paired_interval(both: float, only_first: float, only_second: float, neither: float,
                             level: float = 0.95) -> Interval:
    """Interval of ``p1 − p2`` for two proportions on the same trials (Newcombe 1998, method
    10: Wilson intervals of each side combined with the phi correlation of the pairs).
    ``p1 = (both + only_first) / n``, ``p2 = (both + only_second) / n``. Where the two never
    differ it still has a width set by ``n`` (0 of 20 and 0 of 20: ±0.161), where a paired
    bootstrap gives [0, 0]."""
    a, b, c, d = both, only_first, only_second, neither
    # every sum and product in an order that swapping b and c leaves as it is (cells averaged
    # over seed pairs need not be whole): the interval of p2 − p1 mirrors this one to the bit
    n = (a + d) + (b + c)
    if n <= 0:
        return Interval(float("nan"), float("nan"))
    p1, p2 = (a + b) / n, (a + c) / n
    first, second = wilson_interval(a + b, n, level), wilson_interval(a + c, n, level)
    product = ((a + b) * (c + d)) * ((a + c) * (b + d))
    phi = (a * d - b * c) / math.sqrt(product) if product > 0 else 0.0
    below = _combined(p1 - first.low, second.high - p2, phi)
    above = _combined(first.high - p1, p2 - second.low, phi)
    return Interval(max(-1.0, p1 - p2 - below), min(1.0, p1 - p2 + above))


def _combined(first: float, second: float, phi: float) -> float:
    """``√(a² − 2φab + b²)``, written so that swapping ``a`` and ``b`` changes no bit (the
    paired interval of ``p2 − p1`` is then exactly the mirror of that of ``p1 − p2``)."""
    return math.sqrt(max((first * first + second * second) - 2 * phi * (first * second), 0.0))


# --- the bootstrap's weights and the seed level ------------------------------------------

def multinomial_counts(tasks: int, draws: int, generator: torch.Generator) -> torch.Tensor:
    """The ordinary bootstrap: how often each task is drawn in each resample ``(draws, tasks)``."""
    index = torch.randint(tasks, (draws, tasks), generator=generator)
    return torch.zeros(draws, tasks, dtype=torch.float64).scatter_add_(
        1, index, torch.ones(draws, tasks, dtype=torch.float64))


def dirichlet_weights(tasks: int, draws: int, generator: torch.Generator) -> torch.Tensor:
    """The Bayesian bootstrap (Rubin 1981): flat Dirichlet weights, scaled to sum to
    ``tasks`` so that they stand where the multinomial counts stand ``(draws, tasks)``.
    Every task keeps a positive weight, so a ratio is never undefined for lack of a drawn
    denominator (a zero numerator still gives 0: counts of zero need Wilson)."""
    exponential = -torch.log1p(-torch.rand(draws, tasks, generator=generator, dtype=torch.float64))
    return tasks * exponential / exponential.sum(1, keepdim=True)


def seed_level_draws(values: Sequence[float], draws: int, generator: torch.Generator) -> torch.Tensor:
    """A parametric seed level: draws of ``mean over seeds − true mean`` when the seed
    effects are normal with an unknown spread, i.e. ``s / √k · t_{k−1}`` (``s``: the sd of
    the ``k`` per-seed values). Continuous, so three seeds give as many distinct draws as
    asked (resampling three seeds gives 10), and with its t tail it is wider, not
    narrower, than a normal with the observed spread. Zeros for fewer than two finite values."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return torch.zeros(draws, dtype=torch.float64)
    k = len(finite)
    spread = torch.tensor(finite, dtype=torch.float64).std().item()
    df = k - 1
    normal = torch.randn(draws, generator=generator, dtype=torch.float64)
    chi2 = torch.randn(draws, df, generator=generator, dtype=torch.float64).pow(2).sum(1)
    return spread / math.sqrt(k) * normal / torch.sqrt(chi2 / df)


# --- tests and corrections -----------------------------------------------------------------

def normal_p_value(estimate: float, standard_error: float) -> float:
    """Two-sided p of ``estimate = 0`` with a normal sampling distribution of this standard
    error (the bootstrap's sd). NaN where undefined; 1 where both are 0 (nothing differs)."""
    if not (math.isfinite(estimate) and math.isfinite(standard_error)):
        return float("nan")
    if standard_error <= 0:
        return 1.0 if estimate == 0 else 0.0
    return 2.0 * (1.0 - _NORMAL.cdf(abs(estimate) / standard_error))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error), in the input order. NaN
    p-values (untestable claims) stay NaN and do not count in the family."""
    order = sorted((i for i, p in enumerate(p_values) if math.isfinite(p)), key=lambda i: p_values[i])
    m, adjusted, running = len(order), [float("nan")] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (false discovery rate), in the input order;
    NaN p-values stay NaN and do not count in the family."""
    order = sorted((i for i, p in enumerate(p_values) if math.isfinite(p)), key=lambda i: p_values[i])
    m, adjusted, running = len(order), [float("nan")] * len(p_values), 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, m * p_values[i] / (rank + 1))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class Equivalence:
    """Two one-sided tests (TOST) of ``|θ| < margin``: ``p`` is the larger of the two
    one-sided p-values; equivalence is shown at level α when ``p < α``, which is the same
    as the ``1 − 2α`` interval lying inside ``(−margin, margin)``."""

    estimate: float
    standard_error: float
    margin: float
    df: float  # inf: normal
    p_lower: float  # H0: θ <= −margin
    p_upper: float  # H0: θ >= +margin

    @property
    def p(self) -> float:
        return max(self.p_lower, self.p_upper)

    def equivalent(self, alpha: float = 0.05) -> bool:
        return self.p < alpha

    def interval(self, alpha: float = 0.05) -> Interval:
        """The ``1 − 2α`` interval whose inclusion in ``(−margin, margin)`` TOST tests."""
        t = student_t_quantile(1 - alpha, self.df)
        return Interval(self.estimate - t * self.standard_error, self.estimate + t * self.standard_error)

    def to_dict(self, alpha: float = 0.05) -> dict:
        return {"estimate": self.estimate, "standard_error": self.standard_error, "margin": self.margin,
                "p": self.p, "equivalent": self.equivalent(alpha), "interval_90": self.interval(alpha).as_list()}


def tost(estimate: float, standard_error: float, margin: float, df: float = math.inf) -> Equivalence:
    """TOST for ``|θ| < margin`` from an estimate and its standard error (``df``: Student's
    t, ``inf``: normal, as for a bootstrap standard error)."""
    if margin <= 0:
        raise ValueError(f"the equivalence margin must be positive, got {margin}")
    if not (math.isfinite(estimate) and math.isfinite(standard_error)):
        return Equivalence(estimate, standard_error, margin, df, float("nan"), float("nan"))
    if standard_error <= 0:  # no sampling variation: the estimate decides
        return Equivalence(estimate, standard_error, margin, df, float(estimate <= -margin), float(estimate >= margin))
    # both tails read off the lower side (no ``1 − cdf`` cancellation), so that ``−estimate``
    # gives the two p-values swapped exactly: the test does not depend on which side is first
    p_lower = student_t_cdf(-(estimate + margin) / standard_error, df)
    p_upper = student_t_cdf((estimate - margin) / standard_error, df)
    return Equivalence(estimate, standard_error, margin, df, p_lower, p_upper)


def tost_paired(differences: Sequence[float], margin: float) -> Equivalence:
    """Paired TOST on per-unit differences: mean, ``sd / √n`` and ``n − 1`` degrees of freedom."""
    values = torch.tensor([float(v) for v in differences], dtype=torch.float64)
    if len(values) < 2:
        raise ValueError("a paired TOST needs at least two differences")
    return tost(float(values.mean()), float(values.std()) / math.sqrt(len(values)), margin, len(values) - 1)


# --- power --------------------------------------------------------------------------------

def independent_discordance(first: float, second: float) -> float:
    """Share of discordant pairs when two proportions' errors are independent:
    ``p1 (1 − p2) + p2 (1 − p1)``. Two models of one teacher agree more than that, so
    this over-states the discordance and the tasks needed: a conservative default."""
    return first * (1 - second) + second * (1 - first)


def _mcnemar_pairs(delta: float, discordance: float, alpha: float, power: float) -> float:
    """Connor (1987): ``n = (z_{1−α/2} √ψ + z_{power} √(ψ − δ²))² / δ²``, not rounded."""
    z_alpha, z_beta = normal_quantile(1 - alpha / 2), normal_quantile(power)
    return (z_alpha * math.sqrt(discordance) + z_beta * math.sqrt(discordance - delta * delta)) ** 2 / delta ** 2


def pairs_for_paired_proportions(difference: float, discordance: float, alpha: float = 0.05,
                                 power: float = 0.8) -> int:
    """Pairs a two-sided McNemar test needs to detect ``p1 − p2 = difference`` (proportions,
    not percent) at ``power`` when a share ``discordance`` of the pairs differ (Connor 1987)."""
    delta, psi = abs(difference), discordance
    if not 0 < delta <= psi <= 1:
        raise ValueError(f"need 0 < |difference| <= discordance <= 1, got {difference} and {discordance}")
    return math.ceil(_mcnemar_pairs(delta, psi, alpha, power))


def detectable_paired_difference(pairs: int, discordance: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest |p1 − p2| a two-sided McNemar test on ``pairs`` pairs detects at ``power``
    when a share ``discordance`` of the pairs differ: :func:`pairs_for_paired_proportions`
    solved for the difference (by bisection); NaN where no difference that discordance allows is."""
    low, high = 1e-6, discordance
    if _mcnemar_pairs(high, discordance, alpha, power) > pairs:
        return math.nan
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if _mcnemar_pairs(middle, discordance, alpha, power) > pairs else (low, middle)
    return high


def pairs_for_mean_difference(difference: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Pairs a two-sided paired t test needs to detect a mean difference ``difference`` when
    the per-pair differences have standard deviation ``sd``: the smallest n with
    ``n >= ((t_{1−α/2, n−1} + t_{power, n−1}) sd / δ)²`` (G*Power's dz = 0.5 gives 34)."""
    if difference == 0 or sd <= 0:
        raise ValueError(f"need a non-zero difference and a positive sd, got {difference} and {sd}")
    effect = abs(difference) / sd
    n = max(2, math.ceil(((normal_quantile(1 - alpha / 2) + normal_quantile(power)) / effect) ** 2))
    for _ in range(1000):  # the t quantiles shrink as n grows: step until the inequality holds
        df = n - 1
        needed = ((student_t_quantile(1 - alpha / 2, df) + student_t_quantile(power, df)) / effect) ** 2
        if n >= needed:
            return n
        n += 1
    return n
