"""Semantic validity on the page: the registered family's claims, each row's own
recourse against the teacher's with its corrected interval and reading, and what each
attribute's judge saw of every model's own recourse."""

from __future__ import annotations

from collections.abc import Mapping

from recourse.benchmark.claims import Claim
from recourse.benchmark.judged_shares import JudgedShare
from recourse.benchmark.rows import FamilyRow
from recourse.benchmark.run import BenchmarkResult
from recourse.benchmark.semantic import METRIC, REFERENCE
from recourse.benchmark.settings import FP32


def _number(value: float | None, digits: int = 1, signed: bool = False) -> str:
    if value is None or value != value:
        return "—"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def reading(difference: Claim | None, equivalence: Claim | None, alpha: float = 0.05) -> str:
    """What the registered rule reads of a row's two claims: less or more seen than the
    teacher's, equivalent within the margin, or no claim."""
    if difference is not None and difference.holds(alpha):  # an untested claim's p is NaN and never holds
        return "**less seen**" if difference.difference < 0 else "**more seen**"
    if equivalence is not None and equivalence.holds(alpha):
        return f"**within ±{equivalence.margin:g}**"
    if (difference is None or difference.p != difference.p) and (equivalence is None or equivalence.p != equivalence.p):
        return "not tested"
    return "no claim"


def _registered(result: BenchmarkResult) -> dict[tuple[str, str], Claim]:
    return {(c.family, c.kind): c for c in result.claims
            if c.correction_family == "registered" and c.metric == METRIC and c.reference == REFERENCE}


def registered_table(result: BenchmarkResult, alpha: float = 0.05) -> str:
    """One line per registered row: its own recourse's semantic validity (mean ± sd over its
    seeds), the teacher's on the same judged tasks, the difference with its 95% interval and its
    family-wise (Bonferroni) interval, Holm's p of the difference and of the TOST, and the reading."""
    claims = _registered(result)
    families = {f.family: f for f in result.families}
    rows = list(dict.fromkeys(name for name, _ in claims))
    if not rows:
        return "(this run registered no family)"
    lines = ["| row | seeds | judged tasks | own recourse seen % | teacher's % | row − teacher, points [95%] "
             "| [family-wise 95%] | Holm p | TOST Holm p | reading |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name in rows:
        difference, equivalence = claims.get((name, "difference")), claims.get((name, "equivalence"))
        family: FamilyRow | None = families.get(name)
        semantic = family.semantic if family is not None else {}
        seeds = len(family.variants) if family is not None else 0
        own = _number(semantic.get("mean"))
        if seeds > 1 and semantic.get("sd") is not None:
            own += f" ± {semantic['sd']:.1f}"
        tested = difference is not None and difference.p == difference.p
        lines.append(
            f"| {name} | {seeds or '—'} | {semantic.get('judged', '—')} | {own} | {_number(semantic.get('teacher'))} "
            + (f"| {difference.difference:+.1f} [{difference.low:.1f}, {difference.high:.1f}] "
               f"| [{difference.corrected_low:.1f}, {difference.corrected_high:.1f}] | {difference.p_holm:.2g} "
               if tested else "| — | — | — ")
            + f"| {_number(equivalence.p_holm, 2) if equivalence is not None else '—'} "
            f"| {reading(difference, equivalence, alpha)} |")
    return "\n".join(lines)


def registered_summary(result: BenchmarkResult, alpha: float = 0.05) -> str:
    """How many registered rows each reading has."""
    claims = _registered(result)
    rows = list(dict.fromkeys(name for name, _ in claims))
    readings = [reading(claims.get((r, "difference")), claims.get((r, "equivalence")), alpha).strip("*")
                for r in rows]
    counts = {text: readings.count(text) for text in dict.fromkeys(readings)}
    return ", ".join(f"{count} {text}" for text, count in counts.items())


def judges_table(shares: Mapping[str, Mapping[str, JudgedShare]]) -> str:
    """Per model (the teacher first) and attribute: semantic validity % of its own recourse and the
    judge's mean shift toward the target, with the judged tasks' count in the header."""
    if not shares:
        return "(this run read no judge)"
    attributes = list(next(iter(shares.values())))
    teacher = shares.get(FP32, {})
    header = " | ".join(f"{a} (n = {teacher[a].judged if a in teacher else '?'}): seen % / shift" for a in attributes)
    lines = [f"| model | {header} |", "|---|" + "---:|" * len(attributes)]
    for name, by_attribute in shares.items():
        cells = [f"{_number(s.semantic_validity)} / {_number(s.shift, 2, signed=True)}"
                 for s in (by_attribute[a] for a in attributes)]
        label = f"{name} (teacher)" if name == FP32 else name
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
