"""The issue-26 statistics of a benchmark run drawn as markdown: the direction metric with
zero-length recourses apart beside its floor rows, the shares' Wilson intervals, TOST
against the floor rows, and the family of claims after Holm and Benjamini–Hochberg.
Runs made before these existed have none of them: each table then says so in one line."""

from __future__ import annotations

from recourse.benchmark.rows import FamilyRow, is_floor
from recourse.benchmark.run import BenchmarkResult

_NAMES = {"vd": "VD", "fa_50": "FA½", "fa_75": "FA¾", "logit_gap": "|Δlogit|", "logit_lean": "lean", "crg": "CRG",
          "dirsim": "DirSim", "dirsim_moved": "DirSim (moved)", "zero_edits": "zero-length %"}


def _number(value, digits: int) -> str:
    if value is None or value != value:
        return "n/a"
    return f"{value:.{digits}f}"


def _interval(values, digits: int) -> str:
    return f"[{_number(values[0], digits)}, {_number(values[1], digits)}]" if values else "n/a"


def direction_table(result: BenchmarkResult, group: str = "all") -> str:
    """Per family: DirSim over moved tasks with its interval, the zero-length share with its
    Wilson interval, and the committed DirSim (cos = 0 for zero-length) for comparison;
    floor rows (noise draws, reference classifiers) first."""
    families = sorted(result.families, key=lambda f: not is_floor(f.family))
    if not any("dirsim_moved" in f.metrics.get(group, {}) for f in families):
        return "(this run has no direction metric with zero-length recourses apart)"
    lines = ["| family | seeds | DirSim moved % [95%] | zero-length % [Wilson 95%] | DirSim (cos 0) % |",
             "|---|---|---|---|---|"]
    for family in families:
        cell = family.metrics.get(group, {})
        if "dirsim_moved" not in cell:
            continue
        moved, zero = cell["dirsim_moved"], cell["zero_edits"]
        lines.append(f"| {family.family}{' (floor)' if is_floor(family.family) else ''} | {len(family.variants)} "
                     f"| {_number(moved['mean'], 2)} {_interval([moved['low'], moved['high']], 2)} "
                     f"| {_number(zero['mean'], 1)} {_interval(family.wilson.get(group, {}).get('zero_edits'), 1)} "
                     f"| {_number(cell['dirsim']['mean'], 2)} |")
    return "\n".join(lines)


def wilson_table(families: list[FamilyRow], group: str = "all") -> str:
    """Each family's shares with the bootstrap interval and Wilson's (which never collapses)."""
    metrics = ("vd", "fa_50", "fa_75")
    lines = ["| family | " + " | ".join(f"{_NAMES[m]} % [bootstrap] [Wilson]" for m in metrics) + " |",
             "|---|" + "---|" * len(metrics)]
    for family in families:
        if group not in family.wilson:
            continue
        cells = []
        for m in metrics:
            cell = family.metrics[group][m]
            cells.append(f"{_number(cell['mean'], 1)} {_interval([cell['low'], cell['high']], 1)} "
                         f"{_interval(family.wilson[group][m], 1)}")
        lines.append(f"| {family.family} | " + " | ".join(cells) + " |")
    return "\n".join(lines) if len(lines) > 2 else "(this run has no Wilson intervals)"


def equivalence_table(result: BenchmarkResult, group: str = "all") -> str:
    """TOST of each family against each floor row: the difference, its 90% interval, the
    margin, p and the verdict."""
    margins = dict(tuple(pair) for pair in result.settings.get("equivalence_margins", ()))
    lines = ["| family − floor | metric | difference [90%] | margin | TOST p | within the margin |",
             "|---|---|---|---|---|---|"]
    for family in result.families:
        for floor, groups in family.equivalence.items():
            for metric, test in groups.get(group, {}).items():
                lines.append(f"| {family.family} − {floor} | {_NAMES.get(metric, metric)} "
                             f"| {_number(test['estimate'], 3)} {_interval(test['interval_90'], 3)} "
                             f"| ±{margins.get(metric, test['margin']):g} | {_number(test['p'], 4)} "
                             f"| {'yes' if test['equivalent'] else 'not shown'} |")
    return "\n".join(lines) if len(lines) > 2 else "(this run has no equivalence tests)"


def claims_table(result: BenchmarkResult, group: str | None = "all", alpha: float = 0.05) -> str:
    """The claims whose raw p is below ``alpha``, with their Holm and BH adjusted p and
    whether each survives; the family size is all tested claims (every group)."""
    tested = [c for c in result.claims if c.p == c.p]
    if not tested:
        return "(this run has no corrected claims)"
    shown = [c for c in tested if c.p < alpha and (group is None or c.group == group)]
    lines = [f"{len(tested)} paired differences tested; {sum(c.p < alpha for c in tested)} with p < {alpha:g} before "
             f"correction, {sum(c.holds(alpha, 'holm') for c in tested)} after Holm, "
             f"{sum(c.holds(alpha, 'bh') for c in tested)} after Benjamini–Hochberg. The family-wise interval is "
             f"Bonferroni's (each claim at {alpha:g} / {len(tested)}): it excludes zero only where Holm also rejects.", "",
             "| family − reference | group | metric | difference [95%] | [family-wise 95%] | p | Holm p | BH p |",
             "|---|---|---|---|---|---|---|---|"]
    for c in sorted(shown, key=lambda c: c.p):
        lines.append(f"| {c.family} − {c.reference} | {c.group} | {_NAMES.get(c.metric, c.metric)} "
                     f"| {c.difference:+.3g} [{c.low:.3g}, {c.high:.3g}] "
                     f"| {_interval([c.corrected_low, c.corrected_high], 3)} | {c.p:.2g} "
                     f"| {'**' if c.p_holm < alpha else ''}{c.p_holm:.2g}{'**' if c.p_holm < alpha else ''} "
                     f"| {'**' if c.p_bh < alpha else ''}{c.p_bh:.2g}{'**' if c.p_bh < alpha else ''} |")
    return "\n".join(lines)


def statistics_report(result: BenchmarkResult) -> str:
    """All four, under headings."""
    return "\n\n".join([
        "### Direction, zero-length recourses apart", direction_table(result),
        "### Shares with Wilson intervals", wilson_table(list(result.families)),
        "### On the floor? (TOST)", equivalence_table(result),
        "### The family of claims, corrected", claims_table(result)]) + "\n"
