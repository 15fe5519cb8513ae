"""The benchmark's table: one row per model and one per family of seeds, with bootstrap
intervals, the seen/held-out attribute groups and paired differences on shared tasks.

The metrics of a set of tasks are in :mod:`recourse.benchmark.terms`, their bootstrap and
paired tests in :mod:`recourse.benchmark.bootstrap`, the shares' score intervals in
:mod:`recourse.benchmark.proportions`, and the corrected family of claims in
:mod:`recourse.benchmark.claims`.
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass, field

import torch
from torch import nn

import recourse.benchmark.statistics as stats
from recourse.audit.paired import RecourseColumns, Student
from recourse.benchmark.bootstrap import PairedTest, bootstrap_intervals, paired_tests, seed_bootstrap
from recourse.benchmark.comparison import compare_families
from recourse.benchmark.proportions import proportion_counts, proportion_intervals, score_intervals
from recourse.benchmark.semantic import (
    EQUIVALENCE_MARGIN, SemanticColumns, family_semantic, row_semantic, semantic_columns, teacher_semantic,
)
from recourse.benchmark.settings import FP32, LEGACY_ANALYSIS, BenchmarkSettings
from recourse.benchmark.tasks import record_columns
from recourse.benchmark.terms import (
    PROPORTIONS, RECOURSE_METRICS, direction_values, mean_of, paired_difference, sd_of, summary_dict, summary_values,
)
from recourse.data import to_float_images
from recourse.metrics import agreement, decisions, mean_accuracy, overhead

NOISE_CONTROL = "fp32-noise"  # the noise draws' family: fp32-noise, fp32-noise-s1, ...
# A noise floor matched to one variant's own agreement (BenchmarkSettings.matched_noise): draws
# fp32-noise@<variant>, fp32-noise-s1@<variant>, ..., the family fp32-noise@<variant>. The draw's
# index comes before the "@" so that a variant whose own name ends in -sN (a fine-tuning seed,
# cfq-qat-s2) is never read as a draw; no variant id has an "@" (compared_models.VARIANT_ID).
MATCHED_NOISE_MARK = "@"
_MATCHED_NOISE_ROW = re.compile(rf"^{re.escape(NOISE_CONTROL)}(?:-s\d+)?{MATCHED_NOISE_MARK}(?P<variant>.+)$")
REFERENCE_PREFIX = "fp32-ref-"  # a second full-precision classifier's row: fp32-ref-<its folder>
# Every reference classifier's row in one family, its folders read as seeds (the bottom floor,
# recourse.benchmark.floors); a record without this family holds each row as its own family.
REFERENCE_FAMILY = "fp32-ref"
GROUPS = ("all", "seen", "held_out")
# Paired comparisons, family against family: the 4-bit post-training baselines, and
# cfq-qat's no-recourse twin (same calibration and bits), which isolates the recourse term.
PAIRED_REFERENCES = ("ptq-int4", "ptq-int4-ends8", "cfq-qat-norecourse")


def family_of(variant: str) -> str:
    """A variant's family: its id without a fine-tuning-seed suffix (``cfq-qat-s2`` → ``cfq-qat``);
    every reference classifier's row (``fp32-ref-<folder>``) is of :data:`REFERENCE_FAMILY`; a
    matched noise floor's draw (``fp32-noise-s1@ptq-int8``) is of its floor's family
    (``fp32-noise@ptq-int8``), never of the noise control's (:data:`NOISE_CONTROL`)."""
    if variant.startswith(REFERENCE_PREFIX):
        return REFERENCE_FAMILY
    matched = matched_to(variant)
    if matched is not None:
        return matched_noise_family(matched)
    return re.sub(r"-s\d+$", "", variant)


def matched_noise_draw(variant: str, draw: int) -> str:
    """The row of draw ``draw`` of the noise floor matched to ``variant``'s agreement:
    ``fp32-noise@<variant>``, then ``fp32-noise-s1@<variant>``, ..."""
    return f"{NOISE_CONTROL}{f'-s{draw}' if draw else ''}{MATCHED_NOISE_MARK}{variant}"


def matched_noise_family(variant: str) -> str:
    """The family of the noise floor matched to ``variant``'s agreement: ``fp32-noise@<variant>``."""
    return matched_noise_draw(variant, 0)


def matched_to(name: str) -> str | None:
    """The variant a matched noise floor's row or family (``fp32-noise-s1@ptq-int8``) is matched
    to (``ptq-int8``); None for any other name, the noise control's draws included."""
    found = _MATCHED_NOISE_ROW.match(name)
    return found.group("variant") if found else None


@dataclass(frozen=True)
class VariantFacts:
    """What the table reports about a variant besides its recourse."""

    integer_kernels: bool
    bits_per_weight: float
    make_seconds: float
    size_bytes: int
    details: dict = field(default_factory=dict)  # budget, sparsity, bits per layer
    method: str = ""  # the compression method that made it


@dataclass(frozen=True)
class BenchmarkRow:
    method: str  # the row's model: a variant id (a folder of checkpoints/variants), fp32 or a control
    acc: float
    vd: float | None
    crg: float | None
    dirsim: float | None
    success_rate: float | None
    overhead: float | None
    agreement: float
    twin_integer_agreement: float | None  # the twin's decisions vs the integer model's
    bits_per_weight: float
    size_mb: float
    latency_batch1_ms: float
    latency_batch32_ms: float
    integer_kernels: bool
    n: int
    s: int
    b: int
    per_attribute: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    intervals: dict = field(default_factory=dict)  # 95% bootstrap intervals of the recourse metrics
    paired: dict = field(default_factory=dict)  # {reference: {metric: [difference, low, high]}}
    fa_50: float | None = None  # false acceptance at α = 0.5, %
    fa_75: float | None = None
    logit_gap: float | None = None  # mean |Δlogit| at x'_f
    logit_lean: float | None = None  # signed: positive leans towards the target
    compression: str = ""  # the method that made the variant
    family: str = ""
    groups: dict = field(default_factory=dict)  # {"seen" | "held_out": summary}
    # Written only when set, so that a record without them reads back as written:
    zero_edits: float | None = None  # % of B where the student's own edit is zero (it decides t at x)
    dirsim_moved: float | None = None  # DirSim over B without those
    proportions: dict = field(default_factory=dict)  # {metric: {"count", "n", "wilson": [low, high] in %}}
    paired_score: dict = field(default_factory=dict)  # {reference: {metric: [low, high]}}, Newcombe, in points
    # From recourse.benchmark.semantic; absent where no task was judged:
    semantic_validity: float | None = None  # % of the judged tasks whose own recourse is valid and seen
    semantic: dict = field(default_factory=dict)  # {"judged", "teacher", "fp32": the row − teacher test}


@dataclass(frozen=True)
class FamilyRow:
    """A method's result over its fine-tuning seeds: mean and sd across seeds, and 95%
    intervals from a bootstrap over seeds and tasks, for all tasks and each group."""

    family: str
    variants: tuple[str, ...]
    compression: str
    bits_per_weight: float
    acc: tuple[float, float]  # mean, sd over seeds
    agreement: tuple[float, float]
    metrics: dict  # {group: {metric: {"mean", "sd", "low", "high"}}}
    paired: dict = field(default_factory=dict)  # {reference: {group: {metric: [difference, low, high]}}}
    # Written only when set, so that a record without them reads back as written:
    wilson: dict = field(default_factory=dict)  # {group: {metric: [low, high]}}, at the seeds' mean count, %
    tests: dict = field(default_factory=dict)  # {reference: {group: {metric: {"p", "se", "score_interval"?}}}}
    equivalence: dict = field(default_factory=dict)  # {floor: {group: {metric: Equivalence.to_dict()}}}
    # Semantic validity over the judged tasks, the family against the teacher
    semantic: dict = field(default_factory=dict)  # {"judged", "mean", "sd", "teacher", "fp32": test}


NEW_ROW_FIELDS = ("zero_edits", "dirsim_moved", "proportions", "paired_score", "semantic_validity", "semantic")
NEW_FAMILY_FIELDS = ("wilson", "tests", "equivalence", "semantic")


@torch.no_grad()
def all_decisions(model: nn.Module, images: torch.Tensor, batch_size: int = 250) -> torch.Tensor:
    return torch.cat([decisions(model(to_float_images(images[i:i + batch_size]))) for i in range(0, len(images), batch_size)])


@dataclass(frozen=True)
class Decisions:
    """A model's 40 decisions on every image: what it decides with (the integer model
    where there is one) and its float twin."""

    decider: torch.Tensor
    twin: torch.Tensor


def model_decisions(students: dict[str, Student], images: torch.Tensor) -> dict[str, Decisions]:
    """Decisions of each student on ``images`` (the table's Acc, agreement and twin/integer
    agreement); separate from the table so that processes can share the work."""
    decided = {}
    for name, student in students.items():
        decider = all_decisions(student.decider, images)
        twin = decider if student.twin is student.decider else all_decisions(student.twin, images)
        decided[name] = Decisions(decider, twin)
    return decided


@torch.no_grad()
def median_latency_ms(model: nn.Module, batch: torch.Tensor, repeats: int) -> float:
    model(batch)  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        model(batch)
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def group_masks(records: list[dict], settings: BenchmarkSettings) -> dict[str, torch.Tensor]:
    """Task masks of the groups: all tasks, the seen attributes, the held-out ones."""
    return attribute_masks([r["attribute"] for r in records], settings)


def attribute_masks(attributes: list[str], settings: BenchmarkSettings) -> dict[str, torch.Tensor]:
    """:func:`group_masks` from each task's attribute."""
    seen = torch.tensor([a in settings.seen_attributes for a in attributes], dtype=torch.bool)
    return {"all": torch.ones(len(attributes), dtype=torch.bool), "seen": seen, "held_out": ~seen}


def benchmark_rows(records: list[dict], teacher: nn.Module, students: dict[str, Student],
                   facts: dict[str, VariantFacts], images: torch.Tensor, labels: torch.Tensor, train_seconds: float,
                   teacher_size_bytes: int, settings: BenchmarkSettings,
                   decided: dict[str, Decisions] | None = None) -> list[BenchmarkRow]:
    """One row for the teacher and one per student; accuracy on all of ``images``, from
    ``decided`` (:func:`model_decisions`) where given."""
    records = sorted(records, key=lambda r: r["task"])
    labels = labels.long()
    decided = decided if decided is not None else model_decisions(students, images)
    teacher_decisions = all_decisions(teacher, images)
    batch1, batch32 = to_float_images(images[:1]), to_float_images(images[:32])
    teacher_valid = sum(r["teacher_valid"] for r in records)
    teacher_semantic_validity, judged = teacher_semantic(records)
    rows = [BenchmarkRow(
        method=FP32, acc=mean_accuracy(teacher_decisions, labels), vd=None, crg=None, dirsim=None,
        success_rate=100.0 * teacher_valid / len(records), overhead=None,
        agreement=100.0, twin_integer_agreement=None, bits_per_weight=32.0, size_mb=teacher_size_bytes / 1e6,
        latency_batch1_ms=median_latency_ms(teacher, batch1, settings.latency_repeats),
        latency_batch32_ms=median_latency_ms(teacher, batch32, settings.latency_repeats),
        integer_kernels=False, n=len(records), s=teacher_valid, b=0, compression=FP32, family=FP32,
        semantic_validity=teacher_semantic_validity, semantic={"judged": judged} if judged else {},
    )]
    columns = {name: record_columns(records, name) for name in students}
    semantic = {name: semantic_columns(records, name) for name in students}
    attributes = [r["attribute"] for r in records]
    int8 = next((f.make_seconds for f in facts.values() if f.method == "ptq-int8"), None)
    for name, student in students.items():
        student_decisions, twin_decisions = decided[name].decider, decided[name].twin
        fact = facts[name]
        rows.append(BenchmarkRow(
            method=name, acc=mean_accuracy(student_decisions, labels),
            # a foreign model's making time is not known here: no overhead
            overhead=overhead(train_seconds, fact.make_seconds, int8) if int8 is not None and fact.method != "foreign"
            else None,
            agreement=agreement(teacher_decisions, student_decisions),
            twin_integer_agreement=agreement(twin_decisions, student_decisions),
            bits_per_weight=fact.bits_per_weight, size_mb=fact.size_bytes / 1e6,
            latency_batch1_ms=median_latency_ms(student.decider, batch1, settings.latency_repeats),
            latency_batch32_ms=median_latency_ms(student.decider, batch32, settings.latency_repeats),
            integer_kernels=fact.integer_kernels, details=fact.details, compression=fact.method,
            family=family_of(name), **row_recourse(name, columns, attributes, settings, semantic),
        ))
    return rows


def row_recourse(name: str, columns: dict[str, RecourseColumns], attributes: list[str],
                 settings: BenchmarkSettings, semantic: dict[str, SemanticColumns] | None = None) -> dict:
    """A student row's fields that its per-task columns alone give (the summary, per attribute
    and group, intervals, the shares' counts, and paired differences against the references'
    seed-0 rows), so that a run's saved columns recompute them (``columns``: every student's,
    in the table's order; ``attributes``: each task's), and its semantic validity against the
    teacher's from its judge readings (``semantic``; none: a run without them)."""
    mine = columns[name]
    summary, directions = mine.summary(), direction_values(mine)
    masks = attribute_masks(attributes, settings)
    references = [other for other in columns if other in PAIRED_REFERENCES and family_of(name) != other]
    per_attribute = {}
    for attribute in settings.attributes:
        index = torch.tensor([a == attribute for a in attributes])
        if bool(index.any()):
            per_attribute[attribute] = summary_dict(mine.select(index))
    return dict(
        vd=summary.vd, crg=summary.crg, dirsim=summary.dirsim, success_rate=summary.success_rate,
        n=summary.n, s=summary.s, b=summary.b, per_attribute=per_attribute,
        intervals=bootstrap_intervals(mine, samples=settings.bootstrap_samples, task_weights=settings.task_weights),
        paired={reference: _versus(mine, columns[reference], settings.bootstrap_samples, settings.task_weights)
                for reference in references},
        fa_50=summary.fa_50, fa_75=summary.fa_75, logit_gap=summary.logit_gap, logit_lean=summary.logit_lean,
        groups={group: summary_dict(mine.select(mask)) for group, mask in masks.items()
                if group != "all" and bool(mask.any())},
        zero_edits=directions["zero_edits"], dirsim_moved=directions["dirsim_moved"],
        proportions=proportion_intervals(mine),
        paired_score={reference: score_intervals([mine], [columns[reference]]) for reference in references},
        **row_semantic((mine.student_valid, mine.teacher_valid), (semantic or {}).get(name),
                       settings.bootstrap_samples, settings.task_weights, semantic_margin(settings)),
    )


def semantic_margin(settings: BenchmarkSettings) -> float:
    """The TOST margin of semantic validity against the teacher: the registered family's, else
    the one it registered (:data:`recourse.benchmark.semantic.EQUIVALENCE_MARGIN`)."""
    return settings.primary_family.equivalence_margin if settings.primary_family is not None else EQUIVALENCE_MARGIN


def is_floor(family: str) -> bool:
    """The rows that measure what any slightly different model gives: the noise control's
    draws, a noise floor matched to one variant's agreement and a second full-precision classifier."""
    return family in (NOISE_CONTROL, REFERENCE_FAMILY) or family.startswith(REFERENCE_PREFIX) or \
        matched_to(family) is not None


def family_floors(family: str, families: list[str]) -> list[str]:
    """The floor families ``family``'s TOST ("on the noise floor") is read against, in the order
    of ``families`` (the table's). A family with a noise floor matched to its own agreement
    (``fp32-noise@<its variant>``) is read against that floor instead of the noise control's,
    which is matched to another variant's agreement; every other floor (the noise control, the
    reference classifiers) stays. A matched floor is the instrument of its variant's TOST
    only: it is tested against nothing (no TOST, no paired difference: :func:`is_tested`), and
    no other family is read against it."""
    if matched_to(family) is not None:
        return []
    own = [f for f in families if (variant := matched_to(f)) is not None and family_of(variant) == family]

    def reads(floor: str) -> bool:
        if matched_to(floor) is not None:
            return floor in own  # another variant's matched floor is not this family's
        return not (own and floor == NOISE_CONTROL)  # its own matched floor replaces the noise control

    return [f for f in families if f != family and is_floor(f) and reads(f)]


def is_tested(family: str) -> bool:
    """Whether a family carries tests of its own (paired differences, TOST): every family but a
    matched noise floor (:func:`family_floors`), whose tests against the paired references would
    only add claims nobody asked to each correction family."""
    return matched_to(family) is None


def family_rows(rows: list[BenchmarkRow], records: list[dict], settings: BenchmarkSettings) -> list[FamilyRow]:
    """One row per family of seeds (a family of one seed too), in the order of ``rows``:
    mean and sd over seeds, intervals (the seed level and task weights of ``settings``),
    Wilson intervals of the shares, and paired differences against the references with
    their p-values and Newcombe intervals, and TOST against each floor row."""
    records = sorted(records, key=lambda r: r["task"])
    columns = {row.method: record_columns(records, row.method) for row in rows if row.method != FP32}
    semantic = {row.method: semantic_columns(records, row.method) for row in rows if row.method != FP32}
    return columns_family_rows(rows, columns, [r["attribute"] for r in records], settings, semantic)


def columns_family_rows(rows: list[BenchmarkRow], columns: dict[str, RecourseColumns], attributes: list[str],
                        settings: BenchmarkSettings,
                        semantic: dict[str, SemanticColumns] | None = None) -> list[FamilyRow]:
    """:func:`family_rows` from each student row's per-task columns and each task's attribute
    (what a run saves beside its record, so that its statistics can be recomputed), and the
    family's semantic validity against the teacher's from the rows' judge readings
    (``semantic``; none: a run without them)."""
    masks = attribute_masks(attributes, settings)
    members: dict[str, list[BenchmarkRow]] = {}
    for row in rows:
        if row.method != FP32:
            members.setdefault(row.family, []).append(row)
    margins = dict(settings.equivalence_margins)
    result = []
    for family, family_members in members.items():
        metrics, paired, wilson, tests, equivalence = {}, {}, {}, {}, {}
        for group, mask in masks.items():
            if not bool(mask.any()):
                continue
            seeds = [columns[row.method].select(mask) for row in family_members]
            metrics[group], wilson[group] = _family_summary(seeds, settings)
            floors = family_floors(family, list(members)) if margins else []
            references = [r for r in PAIRED_REFERENCES if r in members] if is_tested(family) else []
            for reference in dict.fromkeys(references + floors):
                if reference == family:
                    continue
                theirs = [columns[row.method].select(mask) for row in members[reference]]
                versus, tested, equivalent = _compared(seeds, theirs, settings)
                if reference in PAIRED_REFERENCES:
                    paired.setdefault(reference, {})[group] = versus
                    tests.setdefault(reference, {})[group] = tested
                if reference in floors:
                    equivalence.setdefault(reference, {})[group] = equivalent
        result.append(FamilyRow(
            family=family, variants=tuple(r.method for r in family_members), compression=family_members[0].compression,
            bits_per_weight=mean_of([r.bits_per_weight for r in family_members]),
            acc=(mean_of([r.acc for r in family_members]), sd_of([r.acc for r in family_members])),
            agreement=(mean_of([r.agreement for r in family_members]), sd_of([r.agreement for r in family_members])),
            metrics=metrics, paired=paired, wilson=wilson, tests=tests, equivalence=equivalence,
            semantic=_family_semantic(family_members, columns, semantic, settings)))
    return result


def _family_semantic(members: list[BenchmarkRow], columns: dict[str, RecourseColumns],
                     semantic: dict[str, SemanticColumns] | None, settings: BenchmarkSettings) -> dict:
    """A family's semantic validity against the teacher's ({} where its rows were not judged)."""
    if not semantic or any(row.method not in semantic for row in members):
        return {}
    return family_semantic([(columns[r.method].student_valid, columns[r.method].teacher_valid) for r in members],
                           [semantic[r.method] for r in members], settings.bootstrap_samples,
                           settings.task_weights, semantic_margin(settings))


def _family_summary(seeds: list[RecourseColumns], settings: BenchmarkSettings) -> tuple[dict, dict]:
    """A family's metrics in one group (mean and sd over seeds, the bootstrap's interval) and
    the Wilson intervals of its shares at the seeds' mean count."""
    values = [summary_values(c) for c in seeds]
    intervals = seed_bootstrap(seeds, samples=settings.bootstrap_samples, seed_level=settings.seed_level,
                               task_weights=settings.task_weights)
    metrics = {m: {"mean": mean_of([v[m] for v in values]), "sd": sd_of([v[m] for v in values]),
                   "low": intervals[m][0], "high": intervals[m][1]} for m in RECOURSE_METRICS}
    counts = [proportion_counts(c) for c in seeds]
    wilson = {m: stats.wilson_interval(mean_of([c[m][0] for c in counts]),
                                       mean_of([c[m][1] for c in counts])).as_list(100.0) for m in PROPORTIONS}
    return metrics, wilson


def _test_record(test: PairedTest, score: list[float] | None, flags: dict) -> dict:
    return {"p": test.p, "se": test.standard_error, "df": test.df, "interval": test.interval(),
            **({"score_interval": score} if score is not None else {}), **flags}


def _compared(seeds: list[RecourseColumns], theirs: list[RecourseColumns],
              settings: BenchmarkSettings) -> tuple[dict, dict, dict]:
    """A family against a reference or floor family, per metric: ``[difference, low, high]``,
    the test's record and TOST at each of the settings' margins. The settings' analysis says
    how (:mod:`recourse.benchmark.comparison`): ANALYSIS tests the family means with the
    interval the test inverts, the same in either order; LEGACY_ANALYSIS pairs seed ``k`` with
    seed ``k mod K`` and quotes the two-level bootstrap's interval."""
    margins = dict(settings.equivalence_margins)
    if settings.analysis == LEGACY_ANALYSIS:
        differences = [paired_difference(mine, theirs[k % len(theirs)]) for k, mine in enumerate(seeds)]
        bounds = seed_bootstrap(seeds, theirs, settings.bootstrap_samples, seed_level=settings.seed_level,
                                task_weights=settings.task_weights)
        tested = paired_tests(seeds, theirs, settings.bootstrap_samples, settings.task_weights)
        scores = score_intervals(seeds, theirs)
        tested = {m: t.at_least(scores[m]) if m in scores else t for m, t in tested.items()}
        versus = {m: [mean_of([d[m] for d in differences]), *bounds[m]] for m in RECOURSE_METRICS}
        return (versus, {m: _test_record(tested[m], scores.get(m), {}) for m in RECOURSE_METRICS},
                {m: tested[m].tost(margin).to_dict() for m, margin in margins.items()})
    comparison = compare_families(seeds, theirs, settings.bootstrap_samples, settings.task_weights)
    tested, scores = comparison.tests, comparison.score_intervals
    return ({m: [tested[m].difference, *tested[m].interval()] for m in RECOURSE_METRICS},
            {m: _test_record(tested[m], scores.get(m), comparison.flags(m)) for m in RECOURSE_METRICS},
            {m: {**tested[m].tost(margin).to_dict(), "df": tested[m].df, **comparison.flags(m)}
             for m, margin in margins.items()})


def _versus(mine: RecourseColumns, theirs: RecourseColumns, samples: int, task_weights: str = "multinomial") -> dict:
    difference = paired_difference(mine, theirs)
    intervals = bootstrap_intervals(mine, theirs, samples, task_weights=task_weights)
    return {m: [difference[m], *intervals[m]] for m in RECOURSE_METRICS}
