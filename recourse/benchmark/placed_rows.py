"""Every compressed row of a run, and every retrained seed put through the same procedure, placed
in its matched-noise family and among the retrained seeds on three statistics: semantic validity
that can move (:mod:`recourse.benchmark.newly_seen`), DirSim and CRG (``docs/metrics.md``), with the
discordant counts; and the registered claims read off those placements (Holm over exactly them).

Read from a run's saved per-task columns alone, so that the run and ``recourse recompute-claims``
give the same numbers. :mod:`recourse.benchmark.placement` holds the test.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import recourse.benchmark.statistics as stats
from recourse.benchmark.floors import RERUN_FLOOR
from recourse.benchmark.newly_seen import NewlySeen, newly_seen
from recourse.benchmark.placement import Placement, place
from recourse.benchmark.placement_claims import PLACED_METRICS, RegisteredPlacements
from recourse.benchmark.rows import NOISE_CONTROL, REFERENCE_PREFIX, family_of, is_floor, matched_noise_draw, matched_to



def noise_draws_of(row: str, names: list[str], noise_control: str | None, draws: int) -> list[str]:
    """The run's draws of ``row``'s matched-noise family (those ``names`` holds): the noise control's
    (``fp32-noise``, ``fp32-noise-s1``, …) where ``row`` is the variant it is matched to, else
    ``fp32-noise@<row>``, ``fp32-noise-s1@<row>``, …. A retrained seed without a family of its own
    reads the family matched to another seed's agreement (the seeds agree with the teacher alike)."""
    if row == noise_control:
        wanted = [NOISE_CONTROL if k == 0 else f"{NOISE_CONTROL}-s{k}" for k in range(draws)]
    else:
        wanted = [matched_noise_draw(row, k) for k in range(draws)]
    found = [name for name in wanted if name in names]
    if not found and row.startswith(REFERENCE_PREFIX):
        for seed in retrained_seeds(names):
            found = [matched_noise_draw(seed, k) for k in range(draws) if matched_noise_draw(seed, k) in names]
            if found:
                break
    return found


def retrained_seeds(names: list[str]) -> list[str]:
    """The independently retrained full-precision classifiers among ``names`` (family ``fp32-ref``)."""
    return [name for name in names if name.startswith(REFERENCE_PREFIX)]


def placed_rows(names: list[str]) -> list[str]:
    """The rows placed: every row that is not a floor (noise draws, the re-run), then the seeds."""
    rows = [n for n in names if n != RERUN_FLOOR and not is_floor(family_of(n)) and matched_to(n) is None]
    return rows + retrained_seeds(names)


@dataclass(frozen=True)
class RowPlacement:
    """One row's statistics and where each lies (None where the run has no such family, or the
    statistic is undefined for the row or for fewer than two members)."""

    values: dict[str, float]  # {metric: the row's value}
    noise: dict[str, Placement | None]  # {metric: in its matched-noise family}
    seeds: dict[str, Placement | None]  # {metric: among the retrained seeds (the others, for a seed)}
    newly_seen: NewlySeen | None  # discordant counts and per attribute; None: the run did not record it
    # per attribute: row − teacher in newly-seen points, and whether it lies within the seeds' own
    # spread (the largest |seed − teacher| of that attribute), the attribute's margin
    within_seed_spread: dict[str, bool] = field(default_factory=dict)

    def to_dict(self) -> dict:
        def placed(found: dict[str, Placement | None]) -> dict:
            return {m: None if p is None else p.to_dict() for m, p in found.items()}

        return {"values": dict(self.values), "noise": placed(self.noise), "seeds": placed(self.seeds),
                "newly_seen": None if self.newly_seen is None else self.newly_seen.to_dict(),
                "within_seed_spread": dict(self.within_seed_spread)}


@dataclass(frozen=True)
class Placements:
    """A run's placements: which draws make each row's family, which rows are the seeds, the
    per-attribute margins the seeds' spread sets, and every placed row."""

    noise_families: dict[str, list[str]]
    retrained_seeds: list[str]
    seed_margins: dict[str, float]  # {attribute: the largest |seed − teacher| newly-seen difference, points}
    rows: dict[str, RowPlacement]

    def to_dict(self) -> dict:
        return {"noise_families": {k: list(v) for k, v in self.noise_families.items()},
                "retrained_seeds": list(self.retrained_seeds), "seed_margins": dict(self.seed_margins),
                "rows": {name: row.to_dict() for name, row in self.rows.items()}}


def _statistics(saved, name: str) -> tuple[dict[str, float], NewlySeen | None]:
    summary = saved.rows[name].summary()
    semantic = saved.semantic.get(name)
    seen = None
    if semantic is not None and semantic.face_seen is not None:
        seen = newly_seen(saved.rows[name], semantic, saved.attributes)
    values = {"newly_seen": seen.all.share if seen is not None else math.nan,
              "dirsim": _number(summary.dirsim), "crg": _number(summary.crg)}
    return values, seen


def _number(value) -> float:
    return math.nan if value is None else float(value)


def _placed(value: float, members: list[float]) -> Placement | None:
    finite = [m for m in members if math.isfinite(m)]
    if not math.isfinite(value) or len(finite) < 2 or len(finite) != len(members):
        return None
    return place(value, finite)


def placements(saved, noise_control: str | None, draws: int) -> Placements:
    """Every placed row of the columns ``saved`` (:class:`recourse.benchmark.saved_columns.SavedColumns`)."""
    names = list(saved.rows)
    computed = {name: _statistics(saved, name) for name in names}
    seeds = retrained_seeds(names)
    margins: dict[str, float] = {}
    for seed in seeds:
        seen = computed[seed][1]
        for attribute, share in ({} if seen is None else seen.per_attribute).items():
            if math.isfinite(share.difference):
                margins[attribute] = max(margins.get(attribute, 0.0), abs(share.difference))
    families, rows = {}, {}
    for row in placed_rows(names):
        family = noise_draws_of(row, names, noise_control, draws)
        if family:
            families[row] = family
        if len(family) != draws:  # a row is placed in its whole family or not at all
            family = []
        others = [s for s in seeds if s != row]
        values, seen = computed[row]
        noise = {m: _placed(values[m], [computed[d][0][m] for d in family]) for m in PLACED_METRICS}
        among = {m: _placed(values[m], [computed[s][0][m] for s in others]) for m in PLACED_METRICS}
        within = {}
        if seen is not None:
            within = {a: abs(share.difference) <= margins[a] for a, share in seen.per_attribute.items()
                      if a in margins and math.isfinite(share.difference)}
        rows[row] = RowPlacement(values, noise, among, seen, within)
    return Placements(families, seeds, margins, rows)


# --- the registered claims ------------------------------------------------------------------------


def placement_claims(found: Placements, registered: RegisteredPlacements) -> list[dict]:
    """Each registered claim with its placement, p, Holm's p over exactly the registered claims (a
    claim the run cannot read keeps an undefined p and still counts in Holm's ``m``) and its
    reading: ``outside`` (above or below the family) where Holm's p is below α, else ``inside``."""
    read = []
    for claim in registered.claims:
        row = found.rows.get(claim.row)
        placed = None if row is None else getattr(row, claim.against).get(claim.metric)
        read.append((claim, placed))
    p_values = [placed.p if placed is not None else math.nan for _, placed in read]
    adjusted = _holm_with_missing(p_values)
    out = []
    for (claim, placed), p, p_holm in zip(read, p_values, adjusted):
        reading = "no reading"
        if placed is not None:
            reading = ("above" if placed.value > placed.mean else "below") + " its family" \
                if p_holm < registered.alpha else "inside its family"
        out.append({**asdict(claim), "value": None if placed is None else placed.value,
                    "family_mean": None if placed is None else placed.mean,
                    "family_sd": None if placed is None else placed.sd, "members": 0 if placed is None else len(placed.members),
                    "t": None if placed is None else placed.t, "p": p, "p_holm": p_holm,
                    "empirical_p": None if placed is None else placed.empirical_p, "reading": reading})
    return out


def _holm_with_missing(p_values: list[float]) -> list[float]:
    """Holm's adjustment counting every claim in ``m``: an undefined p stays undefined and makes
    no other claim easier to hold (it is treated as 1 in the ordering)."""
    filled = [p if math.isfinite(p) else 1.0 for p in p_values]
    adjusted = stats.holm(filled)
    return [a if math.isfinite(p) else math.nan for p, a in zip(p_values, adjusted)]
