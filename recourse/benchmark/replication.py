"""Does a second benchmark run on other tasks reproduce the first? Each family's value and
each paired difference of the first run (a family against a reference), per attribute
group and metric, is checked against the second run's: is each run's value inside the
other's 95% interval, and does a difference whose interval excludes zero in the first run
exclude it, with the same sign, in the second? Those differences are the first run's claims.
The margin sweep's values (each model's VD and false acceptance at each margin, group
``"margin m"``) are compared too; they are values, not claims.

Two independent runs with 95% intervals put each other's value inside their interval about
83% of the time when all is well (not 95%: both values vary), so a single miss is not yet a
failure; a claim whose sign flips or whose interval covers zero in the second run is.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from recourse.benchmark.run import BenchmarkResult


@dataclass(frozen=True)
class Replicated:
    """One value in two runs: ``[value, low, high]`` each."""

    family: str
    reference: str  # the family it is paired with; "" for the family's own value
    group: str
    metric: str
    first: tuple[float, float, float]
    second: tuple[float, float, float]

    @property
    def claim(self) -> bool:
        """The first run's interval excludes zero."""
        return _excludes_zero(self.first)

    @property
    def second_inside_first(self) -> bool:
        return self.first[1] <= self.second[0] <= self.first[2]

    @property
    def first_inside_second(self) -> bool:
        return self.second[1] <= self.first[0] <= self.second[2]

    @property
    def held(self) -> bool:
        """A claim that the second run makes too: its interval excludes zero on the same side."""
        return self.claim and _excludes_zero(self.second) and (self.first[0] > 0) == (self.second[0] > 0)

    def to_dict(self) -> dict:
        return {**asdict(self), "claim": self.claim, "second_inside_first": self.second_inside_first,
                "first_inside_second": self.first_inside_second, "held": self.held}


def _excludes_zero(value: tuple[float, float, float]) -> bool:
    return value[1] > 0 or value[2] < 0


def _triple(value: dict) -> list:
    """A family's ``{"mean", "sd", "low", "high"}`` as ``[value, low, high]``."""
    return [value.get(k) for k in ("mean", "low", "high")]


def _complete(value) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 3 and all(v is not None for v in value)


def replications(first: BenchmarkResult, second: BenchmarkResult) -> list[Replicated]:
    """Every family value and paired difference both runs have, with its values in each."""
    own = {f.family: f.metrics for f in second.families}
    theirs = {f.family: f.paired for f in second.families}
    found = []
    for family in first.families:
        for group, metrics in family.metrics.items():
            for metric, value in metrics.items():
                mine, other = _triple(value), _triple(own.get(family.family, {}).get(group, {}).get(metric, {}))
                if _complete(mine) and _complete(other):
                    found.append(Replicated(family.family, "", group, metric, tuple(map(float, mine)),
                                            tuple(map(float, other))))
        for reference, groups in family.paired.items():
            for group, metrics in groups.items():
                for metric, value in metrics.items():
                    other = theirs.get(family.family, {}).get(reference, {}).get(group, {}).get(metric)
                    if _complete(value) and _complete(other):
                        found.append(Replicated(family.family, reference, group, metric,
                                                tuple(map(float, value)), tuple(map(float, other))))
    return found + _sweep_replications(first, second)


def _sweep_replications(first: BenchmarkResult, second: BenchmarkResult) -> list[Replicated]:
    """Each model's sweep values at each margin both runs swept, where both have intervals."""
    theirs = {point.margin: point for point in second.sweep}
    found = []
    for point in first.sweep:
        other = theirs.get(point.margin)
        if other is None:
            continue
        for name, values in point.students.items():
            for metric, value in values.items():
                mine = [value, *point.intervals.get(name, {}).get(metric, (None, None))]
                their = [other.students.get(name, {}).get(metric),
                         *other.intervals.get(name, {}).get(metric, (None, None))]
                if _complete(mine) and _complete(their):
                    found.append(Replicated(name, "", f"margin {point.margin:g}", metric, tuple(map(float, mine)),
                                            tuple(map(float, their))))
    return found


@dataclass(frozen=True)
class ReplicationSummary:
    compared: int
    second_inside_first: int
    first_inside_second: int
    claims: int
    claims_held: int
    claims_second_inside_first: int

    def to_dict(self) -> dict:
        return asdict(self)


def summarise(differences: list[Replicated]) -> ReplicationSummary:
    """Counts; the claims are paired differences only (a family's own value is not a claim)."""
    claims = [d for d in differences if d.reference and d.claim]
    return ReplicationSummary(
        compared=len(differences), second_inside_first=sum(d.second_inside_first for d in differences),
        first_inside_second=sum(d.first_inside_second for d in differences), claims=len(claims),
        claims_held=sum(d.held for d in claims), claims_second_inside_first=sum(d.second_inside_first for d in claims))
