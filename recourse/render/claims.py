"""The statistics of a benchmark run drawn as markdown: the direction metric with zero-length
recourses apart beside its floor rows, the shares' Wilson intervals, TOST against the floor
rows, and the family of claims after Holm and Benjamini–Hochberg (under
:data:`~recourse.benchmark.settings.ANALYSIS`: per correction family, differences and TOST together,
each family by its own correction). A record without one of these says so in one line where its
table would be."""

from __future__ import annotations

from collections import Counter

from recourse.benchmark.claims import CORRECTIONS, Claim
from recourse.benchmark.rows import FamilyRow, is_floor
from recourse.benchmark.run import BenchmarkResult

_NAMES = {"vd": "VD", "fa_50": "FA½", "fa_75": "FA¾", "logit_gap": "|Δlogit|", "logit_lean": "lean", "crg": "CRG",
          "dirsim": "DirSim", "dirsim_moved": "DirSim (moved)", "zero_edits": "zero-length %",
          "semantic_validity": "semantic validity %"}
# a correction's name and the error it controls
_CORRECTION_NAMES = {"holm": ("Holm", "family-wise error"), "bh": ("Benjamini–Hochberg", "false discovery rate")}


def _cell_name(metric: str) -> str:
    """A metric's name inside a Markdown table cell: |Δlogit|'s bars escaped, so they do not split it."""
    return _NAMES.get(metric, metric).replace("|", "\\|")


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
                lines.append(f"| {family.family} − {floor} | {_cell_name(metric)} "
                             f"| {_number(test['estimate'], 3)} {_interval(test['interval_90'], 3)} "
                             f"| ±{margins.get(metric, test['margin']):g} | {_number(test['p'], 4)} "
                             f"| {'yes' if test['equivalent'] else 'not shown'} |")
    return "\n".join(lines) if len(lines) > 2 else "(this run has no equivalence tests)"


def claims_table(result: BenchmarkResult, group: str | None = "all", alpha: float = 0.05) -> str:
    """The claims whose raw p is below ``alpha`` (in ``group``; None: every group), with their
    adjusted p and whether each holds. A run of LEGACY_ANALYSIS has one family, all tested
    claims (every group) after Holm and Benjamini–Hochberg; under ANALYSIS the claims are drawn
    per correction family (:func:`correction_families`), each read by its own correction."""
    tested = [c for c in result.claims if c.p == c.p]
    if not tested:
        return "(this run has no corrected claims)"
    families = correction_families(tested)
    if not families:
        return _one_family_table(tested, group, alpha)
    kinds = Counter(c.kind for c in tested)
    lines = [f"{len(tested)} claims, {_kinds(kinds)}, in {len(families)} correction "
             f"{'family' if len(families) == 1 else 'families'}, each read by its own correction: a difference is "
             "one family against a reference (95% interval), an equivalence a TOST against a floor row, shown "
             "where its 90% interval lies within ±margin."]
    for name, members in families.items():
        lines += ["", *_family_table(name, members, group, alpha)]
    missing = [c for c in result.claims if c.correction_family == "registered" and c.p != c.p]
    if missing:  # registered before the run: a row it lacks is reported, never dropped
        lines += ["", f"**Registered claims this run could not test** ({len(missing)}, each counted in Holm's m as "
                      "p = 1): " + ", ".join(f"{c.family} − {c.reference} {_cell_name(c.metric)} ({c.kind})"
                                             for c in missing) + "."]
    return "\n".join(lines)


def _one_family_table(tested: list[Claim], group: str | None, alpha: float) -> str:
    """The one family of claims of LEGACY_ANALYSIS: every paired difference, Holm and BH over all of them."""
    shown = [c for c in tested if c.p < alpha and (group is None or c.group == group)]
    lines = [f"{len(tested)} paired differences tested; {sum(c.p < alpha for c in tested)} with p < {alpha:g} before "
             f"correction, {sum(c.holds(alpha, 'holm') for c in tested)} after Holm, "
             f"{sum(c.holds(alpha, 'bh') for c in tested)} after Benjamini–Hochberg. The family-wise interval is "
             f"Bonferroni's (each claim at {alpha:g} / {len(tested)}): it excludes zero only where Holm also rejects.", "",
             "| family − reference | group | metric | difference [95%] | [family-wise 95%] | p | Holm p | BH p |",
             "|---|---|---|---|---|---|---|---|"]
    for c in sorted(shown, key=lambda c: c.p):
        lines.append(f"| {c.family} − {c.reference} | {c.group} | {_cell_name(c.metric)} "
                     f"| {c.difference:+.3g} [{c.low:.3g}, {c.high:.3g}] "
                     f"| {_interval([c.corrected_low, c.corrected_high], 3)} | {c.p:.2g} "
                     f"| {'**' if c.p_holm < alpha else ''}{c.p_holm:.2g}{'**' if c.p_holm < alpha else ''} "
                     f"| {'**' if c.p_bh < alpha else ''}{c.p_bh:.2g}{'**' if c.p_bh < alpha else ''} |")
    return "\n".join(lines)


def correction_families(claims: list[Claim]) -> dict[str, list[Claim]]:
    """The claims of each correction family, primary first; {} for the claims of
    LEGACY_ANALYSIS, which have no family of their own (one family, read by Holm)."""
    if not any(c.correction_family for c in claims):
        return {}
    order = [*CORRECTIONS, *sorted({c.correction_family for c in claims} - set(CORRECTIONS))]
    return {name: [c for c in claims if c.correction_family == name] for name in order
            if any(c.correction_family == name for c in claims)}


def held_claims(claims: list[Claim], alpha: float = 0.05) -> dict[str, tuple[int, int]]:
    """Per correction family, (claims that hold by its own correction, claims tested); the
    one family of LEGACY_ANALYSIS is ``""``, read by Holm."""
    tested = [c for c in claims if c.p == c.p]
    families = correction_families(tested) or {"": tested}
    return {name: (sum(c.holds(alpha) for c in members), len(members)) for name, members in families.items()}


def correction_name(family: str) -> str:
    """The name of the correction a claim of ``family`` is read by."""
    return _CORRECTION_NAMES[CORRECTIONS.get(family, "holm")][0]


def _family_table(name: str, members: list[Claim], group: str | None, alpha: float) -> list[str]:
    """One correction family: its size and kinds, how many hold by its correction, what its
    Bonferroni interval says beside that correction, and its claims with raw p below ``alpha``."""
    correction = CORRECTIONS.get(name, "holm")
    title, error = _CORRECTION_NAMES[correction]
    scope = ("every claim on all attributes" if name == "primary"
             else "registered before the run, over exactly its claims" if name == "registered"
             else "the attribute groups " + ", ".join(dict.fromkeys(c.group for c in members)))
    held = sum(c.holds(alpha) for c in members)
    interval = (f"The family-wise interval is Bonferroni's (each claim at {alpha:g} / {len(members)}): a difference's "
                f"excludes zero, an equivalence's lies within ±margin, only where {title} also holds."
                if correction == "holm" else
                f"The family-wise interval is Bonferroni's (each claim at {alpha:g} / {len(members)}), stricter than "
                f"{title}: a claim can hold with an interval that does not exclude zero (or lie within ±margin).")
    lines = [f"**{name.capitalize()} family** ({scope}), "
             f"read by {title} ({error}): {len(members)} claims tested, {_kinds(Counter(c.kind for c in members))}; "
             f"{sum(c.p < alpha for c in members)} with p < {alpha:g} before correction, {held} hold after {title}. "
             + interval, ""]
    shown = [c for c in members if c.p < alpha and (group is None or c.group == group)]
    if not shown:
        return lines + [f"(none with p < {alpha:g}{f' in group {group}' if group else ''})"]
    lines += [f"| family − reference | claim | group | metric | estimate [95%; TOST 90%] | [family-wise] | p "
              f"| {title} p |", "|---|---|---|---|---|---|---|---|"]
    for c in sorted(shown, key=lambda c: c.p):
        adjusted = c.p_holm if correction == "holm" else c.p_bh
        mark = "**" if c.holds(alpha) else ""
        kind = "difference" if c.kind == "difference" else f"equivalence within ±{c.margin:g}"
        metric = _cell_name(c.metric)
        lines.append(f"| {c.family} − {c.reference} | {kind} | {c.group} | {metric} "
                     f"| {c.difference:+.3g} [{c.low:.3g}, {c.high:.3g}] "
                     f"| {_interval([c.corrected_low, c.corrected_high], 3)} | {c.p:.2g} "
                     f"| {mark}{adjusted:.2g}{mark} |")
    return lines


def _kinds(kinds: Counter) -> str:
    """``3 differences, 2 equivalences`` of a count of claim kinds."""
    names = {"difference": ("difference", "differences"), "equivalence": ("equivalence (TOST)", "equivalences (TOST)")}
    return ", ".join(f"{kinds[kind]} {names.get(kind, (kind, kind))[kinds[kind] != 1]}"
                     for kind in sorted(kinds, key=lambda k: (k != "difference", k)))


def statistics_report(result: BenchmarkResult) -> str:
    """All four, under headings."""
    return "\n\n".join([
        "### Direction, zero-length recourses apart", direction_table(result),
        "### Shares with Wilson intervals", wilson_table(list(result.families)),
        "### On the floor? (TOST)", equivalence_table(result),
        "### The family of claims, corrected",
        # a newer run's secondary family is the attribute groups: all of them are drawn
        claims_table(result, None if correction_families(list(result.claims)) else "all")]) + "\n"
