"""The family of claims: every paired difference the benchmark's table reports and every TOST
against a floor row, each once, with its p-value corrected within its correction family and
its Bonferroni interval.

Which tests are claims (:data:`~recourse.benchmark.settings.ANALYSIS`, the default):

- a test that repeats another is left out: the same numbers on the same tasks, as DirSim over
  moved tasks is DirSim where every shared task moved (the record's ``same_as``);
- a difference of 0 against 0 is left out: both sides 0 on every task, nothing to test (the
  record's ``degenerate``). A TOST of 0 against 0 stays: Newcombe's interval still bounds
  the difference by what N tasks can show, so "within the margin" is a claim;
- a pair of families that are each other's reference (ptq-int4 and cfq-qat-norecourse, the
  noise draws and a second full-precision classifier) is counted once, with the family earlier
  in the table as the reference: the comparison is the same in either order;
- a family with a noise floor matched to its own agreement (``settings.matched_noise``,
  family ``fp32-noise@<variant>``) has its TOST against that floor instead of against the noise
  control (the claim's ``reference`` names it), and the matched floor has no test of its own
  (:func:`recourse.benchmark.rows.family_floors`): each claim still counted once;
- the primary family (Holm, family-wise error) is every claim on all tasks, differences and
  TOST together; the attribute groups (seen, held out) are the secondary family
  (Benjamini–Hochberg, false discovery rate). Both adjusted p-values are given within each
  family; a claim holds by its family's correction.

With a registered primary family (the run's ``settings.primary_family``, read from
``assets/results/benchmark-primary.json``), the claims that file names (a row's semantic validity
against the teacher's, difference and TOST) are the family ``registered``, read by Holm over
exactly themselves (a registered row the run lacks is listed with an undefined p and counted in
Holm's ``m``, so that a missing row cannot make the others easier to hold), and every other
claim, the all-tasks ones included, is ``secondary`` (Benjamini–Hochberg), as the file says. The
semantic tests of the rows the file does not name are secondary claims too.

Under :data:`~recourse.benchmark.settings.LEGACY_ANALYSIS` every test is a claim, both orders
of a pair, TOST apart, corrected over all of them at once (:func:`legacy_claims`), so that the
records made with it read back as written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import recourse.benchmark.statistics as stats
from recourse.benchmark.rows import FamilyRow, is_tested
from recourse.benchmark.semantic import METRIC as SEMANTIC_METRIC
from recourse.benchmark.semantic import REFERENCE as TEACHER
from recourse.benchmark.semantic import RegisteredFamily
from recourse.benchmark.settings import ANALYSIS, LEGACY_ANALYSIS, analysis_version

PRIMARY_GROUP = "all"
# a claim's correction family and the correction it is read by; "registered" only where the
# run's settings carry a registered primary family
CORRECTIONS = {"registered": "holm", "primary": "holm", "secondary": "bh"}


@dataclass(frozen=True)
class Claim:
    """One paired difference (or equivalence) of the family of claims, with its p-value
    corrected within its correction family (Holm: family-wise error; Benjamini–Hochberg: false
    discovery rate)."""

    family: str
    reference: str
    group: str
    metric: str
    difference: float
    low: float
    high: float
    p: float
    p_holm: float
    p_bh: float
    # Bonferroni's simultaneous interval (family-wise 95% over the tested claims of its correction
    # family): the corrected interval to quote beside Holm's p, which rejects wherever it excludes
    # zero (for a TOST: the 1 − 2α/m interval, inside the margins wherever Holm's p is below α).
    corrected_low: float = float("nan")
    corrected_high: float = float("nan")
    kind: str = "difference"  # or "equivalence": TOST of |difference| < margin against a floor row
    margin: float = float("nan")  # an equivalence claim's margin
    # "primary" (Holm) or "secondary" (BH), "registered" (Holm) where the run registered its primary
    # family; "": the one family of LEGACY_ANALYSIS
    correction_family: str = ""

    def holds(self, alpha: float = 0.05, correction: str | None = None) -> bool:
        """Whether the adjusted p is below ``alpha``: by ``correction`` where given, else by the
        claim's own family's (Holm for LEGACY_ANALYSIS's single family)."""
        correction = correction or CORRECTIONS.get(self.correction_family, "holm")
        return (self.p_holm if correction == "holm" else self.p_bh) < alpha


@dataclass(frozen=True)
class Candidate:
    """A test of the record before the rules that make claims of tests."""

    family: str
    reference: str
    group: str
    metric: str
    kind: str
    difference: float
    low: float
    high: float
    p: float
    standard_error: float
    df: float
    margin: float = float("nan")
    same_as: str = ""
    degenerate: bool = False

    def key(self, metric: str | None = None) -> tuple:
        return (self.kind, self.family, self.reference, self.group, metric or self.metric)


@dataclass(frozen=True)
class Dropped:
    """A test that is not a claim, and why."""

    family: str
    reference: str
    group: str
    metric: str
    kind: str
    rule: str  # "pair" (counted once), "same" (the same numbers as another), "degenerate" (0 against 0)
    reason: str


def candidates(families: list[FamilyRow]) -> list[Candidate]:
    """Every test a record's families carry: per family, its paired differences (reference,
    group, metric), then its TOST against each floor row."""
    found = []
    for family in families:
        for reference, groups in family.tests.items():
            for group, metrics in groups.items():
                for metric, test in metrics.items():
                    low, high = test["interval"]
                    found.append(Candidate(
                        family.family, reference, group, metric, "difference",
                        _number(family.paired[reference][group][metric][0]), _number(low), _number(high),
                        _number(test["p"]), _number(test.get("se")), _df(test.get("df")),
                        same_as=test.get("same_as") or "", degenerate=bool(test.get("degenerate"))))
        for floor, groups in family.equivalence.items():
            for group, metrics in groups.items():
                for metric, test in metrics.items():
                    low, high = test["interval_90"]
                    found.append(Candidate(
                        family.family, floor, group, metric, "equivalence", _number(test["estimate"]),
                        _number(low), _number(high), _number(test["p"]), _number(test["standard_error"]),
                        _df(test.get("df")), _number(test["margin"]), same_as=test.get("same_as") or "",
                        degenerate=bool(test.get("degenerate"))))
    return found


def selected(found: list[Candidate], order: list[str]) -> tuple[list[Candidate], list[Dropped]]:
    """The candidates that are claims and those left out, by the rules of the module's
    docstring (``order``: the families in the table's order, which picks a pair's reference)."""
    keys = {c.key(): c for c in found}
    kept, dropped = [], []
    for c in found:
        rule, reason = _reason(c, keys, order)
        if rule:
            dropped.append(Dropped(c.family, c.reference, c.group, c.metric, c.kind, rule, reason))
        else:
            kept.append(c)
    return kept, dropped


def _reason(c: Candidate, keys: dict[tuple, Candidate], order: list[str]) -> tuple[str, str]:
    """The rule that leaves ``c`` out and why, or ``("", "")`` where it is a claim."""
    mirror = (c.kind, c.reference, c.family, c.group, c.metric)
    if mirror in keys and _position(c.family, order) < _position(c.reference, order):
        return "pair", f"counted once, as {c.reference} − {c.family}"
    twin = keys.get(c.key(c.same_as)) if c.same_as else None
    if twin is not None and (c.kind == "difference" or twin.margin == c.margin):
        return "same", f"the same numbers on the same tasks as {c.same_as}"
    if c.degenerate and c.kind == "difference":
        return "degenerate", "0 against 0 on every task"
    return "", ""


def _position(family: str, order: list[str]) -> int:
    return order.index(family) if family in order else len(order)


def semantic_candidates(families: list[FamilyRow]) -> list[Candidate]:
    """Each family's semantic validity against the teacher (:mod:`recourse.benchmark.semantic`):
    the difference and its TOST, on all the judged tasks; none for a family without judged tasks,
    nor for a noise floor matched to one variant (the instrument of that variant's TOST only,
    :func:`recourse.benchmark.rows.family_floors`)."""
    found = []
    for family in families:
        test = family.semantic.get(TEACHER) if family.semantic else None
        if not test or not is_tested(family.family):
            continue
        low, high = test["interval"]
        found.append(Candidate(family.family, TEACHER, PRIMARY_GROUP, SEMANTIC_METRIC, "difference",
                               _number(test["difference"]), _number(low), _number(high), _number(test["p"]),
                               _number(test.get("se")), _df(test.get("df")), degenerate=bool(test.get("degenerate"))))
        tost = test["equivalence"]
        low, high = tost["interval_90"]
        found.append(Candidate(family.family, TEACHER, PRIMARY_GROUP, SEMANTIC_METRIC, "equivalence",
                               _number(tost["estimate"]), _number(low), _number(high), _number(tost["p"]),
                               _number(tost["standard_error"]), _df(tost.get("df")), _number(tost["margin"])))
    return found


def registered_candidates(families: list[FamilyRow], registered: RegisteredFamily) -> list[Candidate]:
    """The registered family's claims in the file's order, each from its row's semantic test; a
    row the run lacks (or one without judged tasks) gives a claim whose numbers are undefined."""
    tested = {c.key(): c for c in semantic_candidates(families)}
    found = []
    for claim in registered.claims:
        margin = registered.equivalence_margin if claim.kind == "equivalence" else math.nan
        nan = math.nan
        found.append(tested.get((claim.kind, claim.row, claim.reference, PRIMARY_GROUP, claim.metric))
                     or Candidate(claim.row, claim.reference, PRIMARY_GROUP, claim.metric, claim.kind, nan, nan, nan,
                                  nan, nan, math.inf, margin))
    return found


def missing_claims(found: list[Claim], registered: RegisteredFamily | None) -> list[Claim]:
    """The registered claims a run could not test (its row is absent or was judged on no task)."""
    if registered is None:
        return []
    return [c for c in found if c.correction_family == "registered" and c.p != c.p]


def dropped_claims(families: list[FamilyRow]) -> list[Dropped]:
    """The tests of a record that are not claims, each with why."""
    return selected(candidates(families), [f.family for f in families])[1]


def claims(families: list[FamilyRow], alpha: float = 0.05, analysis: str = ANALYSIS,
           registered: RegisteredFamily | None = None) -> list[Claim]:
    """The family of claims of ``families`` under ``analysis``: under ANALYSIS, the tests that
    are claims (module docstring), corrected within their correction family, each with its
    Bonferroni interval at family-wise level ``1 − alpha``; with ``registered``, its claims first
    (the family ``registered``), then every other claim as ``secondary``; under LEGACY_ANALYSIS,
    :func:`legacy_claims`."""
    if analysis_version(analysis) == LEGACY_ANALYSIS:
        return legacy_claims(families, alpha)
    kept, _ = selected(candidates(families), [f.family for f in families])
    entries = [(c, _correction_family(c, registered)) for c in kept]
    if registered is not None:
        ours = registered_candidates(families, registered)
        taken = {c.key() for c in ours}
        # the file's claims are the registered family, whatever the rules above would say of them;
        # the other rows' semantic tests are secondary claims like every other number of the run
        others, _ = selected([c for c in semantic_candidates(families) if c.key() not in taken], [])
        entries = [(c, "registered") for c in ours] + entries + [(c, "secondary") for c in others]
    result: list[Claim | None] = [None] * len(entries)
    for name in CORRECTIONS:
        members = [i for i, (_, family) in enumerate(entries) if family == name]
        p_values = [entries[i][0].p for i in members]
        if name == "registered" and registered is not None:
            # Holm over exactly the registered claims: one the run could not test counts as p = 1
            # in m (and keeps its undefined p), so that a missing row makes no other claim easier
            holm = [h if p == p else math.nan for p, h in zip(p_values, stats.holm([p if p == p else 1.0
                                                                                   for p in p_values]))]
            bh = [q if p == p else math.nan for p, q in zip(p_values, stats.benjamini_hochberg(
                [p if p == p else 1.0 for p in p_values]))]
            tested, level = max(len(p_values), 1), registered.alpha
        else:
            holm, bh = stats.holm(p_values), stats.benjamini_hochberg(p_values)
            tested, level = max(sum(1 for p in p_values if p == p), 1), alpha
        for i, h, q in zip(members, holm, bh):
            c = entries[i][0]
            low, high = _corrected(c, level / tested)
            result[i] = Claim(c.family, c.reference, c.group, c.metric, c.difference, c.low, c.high, c.p, h, q,
                              low, high, c.kind, c.margin, name)
    return [claim for claim in result if claim is not None]


def _correction_family(c: Candidate, registered: RegisteredFamily | None = None) -> str:
    if registered is not None:  # the registered family is the primary one: every other claim is secondary
        return "secondary"
    return "primary" if c.group == PRIMARY_GROUP else "secondary"


def _corrected(c: Candidate, alpha: float) -> tuple[float, float]:
    """The Bonferroni interval of one claim at ``alpha``: two-sided for a difference, the
    ``1 − 2·alpha`` interval of a TOST."""
    if c.kind == "equivalence":
        if not (math.isfinite(c.difference) and math.isfinite(c.standard_error)):
            return float("nan"), float("nan")
        half = stats.student_t_quantile(1 - alpha, c.df) * c.standard_error
        return c.difference - half, c.difference + half
    return _centred(c.low, c.high, c.standard_error, c.df, alpha)


def legacy_claims(families: list[FamilyRow], alpha: float = 0.05) -> list[Claim]:
    """The family of claims of LEGACY_ANALYSIS: every paired difference the table
    reports (each family against each paired reference, in every group, on every metric), with
    Holm and Benjamini–Hochberg corrections over all of them together, and each one's Bonferroni
    interval at family-wise level ``1 − alpha``."""
    found, errors = [], []
    for family in families:
        for reference, groups in family.tests.items():
            for group, metrics in groups.items():
                for metric, test in metrics.items():
                    # the interval the test inverts, so a claim's interval and its p agree
                    difference = family.paired[reference][group][metric][0]
                    low, high = test["interval"]
                    found.append((family.family, reference, group, metric, _number(difference), _number(low),
                                  _number(high), _number(test["p"])))
                    errors.append((_number(test.get("se")), _number(test.get("df"))))
    p_values = [entry[-1] for entry in found]
    tested = sum(1 for p in p_values if p == p)
    corrected = [_centred(entry[5], entry[6], se, df, alpha / max(tested, 1)) for entry, (se, df) in zip(found, errors)]
    return [Claim(*entry, p_holm=h, p_bh=q, corrected_low=c[0], corrected_high=c[1])
            for entry, h, q, c in zip(found, stats.holm(p_values), stats.benjamini_hochberg(p_values), corrected)]


def _centred(low: float, high: float, standard_error: float, df: float, alpha: float) -> tuple[float, float]:
    """The two-sided ``1 − alpha`` interval around the centre of the test's 95% interval. A
    missing ``df`` with a finite error is the normal's (JSON writes infinity as null)."""
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(standard_error)):
        return float("nan"), float("nan")
    df = math.inf if df != df else df
    half = stats.student_t_quantile(1 - alpha / 2, df) * standard_error
    centre = (low + high) / 2
    return centre - half, centre + half


def _number(value: float | None) -> float:
    return float("nan") if value is None else value


def _df(value: float | None) -> float:
    """Degrees of freedom as read back: JSON writes infinity (the normal) as null."""
    return math.inf if value is None or value != value else value
