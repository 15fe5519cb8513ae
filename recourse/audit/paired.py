"""Paired recourse: the teacher's and the student's counterfactuals for the same tasks and
seeds, and the per-task columns every recourse metric is computed from.

The one core under the per-image audit, the failure scan and the benchmark
(definitions in ``docs/metrics.md``). A task is an image, an attribute, a target and a
seed. For each task:

* ``x'_f`` — guided by the full-precision teacher; ``V_f(x'_f)`` is the teacher's decision;
* ``x'_g`` — guided by the student's differentiable twin, with the same seed;
* ``V_g(x'_f)`` and ``V_g(x'_g)`` — decided by the student's *decider*, the model that is
  deployed (integer kernels where they exist);
* both costs and ``cos(x'_f − x, x'_g − x)``;
* two-sided fidelity: both models' logits of ``a`` at ``x'_f`` and at the partial edits
  ``x + α(x'_f − x)``, α in :data:`PARTIAL_FRACTIONS` (false acceptance, |Δlogit|).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from typing import Literal

import torch
from torch import nn

from recourse.data import attribute_index
from recourse.generation import CounterfactualConfig, CounterfactualResult, FaceGenerator, generate
from recourse.generation.denoised import smallest_step
from recourse.metrics import (
    ImageRecourse, both_valid, decisions, direction_cosines, directional_similarity, false_acceptance,
    image_recourse, logit_gap, recourse_cost, recourse_gap, success_rate, validity, validity_drop,
)
from recourse.progress import StageCheck, no_check

PARTIAL_FRACTIONS = (0.5, 0.75)  # α of the partial edits x + α(x'_f − x) of false acceptance


@dataclass(frozen=True)
class Student:
    """A compressed variant as a recourse comparison sees it."""

    name: str
    twin: nn.Module  # fake-quantized, differentiable: guides x'_g
    decider: nn.Module  # makes the student's decisions: integer kernels where they exist
    # Added to every seed of the student's own recourse x'_g (:func:`own_seeds`). 0: the task's
    # seed, shared with the teacher's x'_f. The benchmark's top floor (``fp32-rerun``) is the
    # teacher with another offset: its own recourse again, with fresh noise.
    seed_offset: int = 0

    @property
    def kind(self) -> Literal["integer", "twin"]:
        return "twin" if self.decider is self.twin else "integer"

    @classmethod
    def from_variant(cls, name: str, variant) -> "Student":
        """From a :class:`recourse.compression.QuantizedModel`."""
        return cls(name, variant.twin, variant.decider)


@torch.no_grad()
def flip_targets(model: nn.Module, images: torch.Tensor, attribute: str) -> torch.Tensor:
    """The target that flips ``model``'s decision on ``attribute``, per image ``(N,)`` long."""
    return 1 - decisions(model(images)[:, attribute_index(attribute)])


@torch.no_grad()
def boundary_logits(model: nn.Module, images: torch.Tensor, counterfactuals: torch.Tensor,
                    attribute: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``model``'s logit of ``attribute`` at the counterfactuals ``(N,)`` and at the partial
    edits ``x + α(x' − x)`` ``(N, len(PARTIAL_FRACTIONS))``."""
    index = attribute_index(attribute)
    at_counterfactual = model(counterfactuals)[:, index]
    partial = [model(images + fraction * (counterfactuals - images))[:, index] for fraction in PARTIAL_FRACTIONS]
    return at_counterfactual, torch.stack(partial, dim=1)


@dataclass(frozen=True)
class RecourseSummary:
    """VD, CRG, DirSim, two-sided fidelity and the student's success rate over a set of
    tasks, with N, |S|, |B|. ``fa_50`` / ``fa_75``: false acceptance at α = 0.5 / 0.75;
    ``logit_gap``: mean |Δlogit| at ``x'_f``; ``logit_lean``: its signed mean (positive =
    towards the target)."""

    vd: float
    crg: float
    dirsim: float
    success_rate: float
    n: int
    s: int
    b: int
    fa_50: float = float("nan")
    fa_75: float = float("nan")
    logit_gap: float = float("nan")
    logit_lean: float = float("nan")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RecourseColumns:
    """Per-task values of paired recourse; every field is ``(N,)``."""

    target: torch.Tensor  # long, 0/1
    teacher_valid: torch.Tensor  # bool, V_f(x'_f)
    student_accepts_teacher: torch.Tensor  # bool, V_g(x'_f)
    student_valid: torch.Tensor  # bool, V_g(x'_g)
    teacher_cost: torch.Tensor  # float64, c(x, x'_f)
    student_cost: torch.Tensor  # float64, c(x, x'_g)
    cosine: torch.Tensor  # float64, cos(x'_f − x, x'_g − x)
    teacher_logit: torch.Tensor  # float64, logit^f_a(x'_f)
    student_logit: torch.Tensor  # float64, logit^g_a(x'_f), the decider's
    teacher_partial: torch.Tensor  # float64 (N, len(PARTIAL_FRACTIONS)), logit^f_a(x + α(x'_f − x))
    student_partial: torch.Tensor  # float64 (N, len(PARTIAL_FRACTIONS)), the decider's

    def __len__(self) -> int:
        return len(self.target)

    def select(self, index: torch.Tensor) -> "RecourseColumns":
        return RecourseColumns(**{name: value[index] for name, value in self._fields().items()})

    @classmethod
    def concat(cls, parts: list["RecourseColumns"]) -> "RecourseColumns":
        return cls(**{name: torch.cat([getattr(p, name) for p in parts]) for name in cls.__dataclass_fields__})

    def summary(self) -> RecourseSummary:
        vd, s = validity_drop(self.teacher_valid, self.student_accepts_teacher)
        mask = both_valid(self.teacher_valid, self.student_valid)
        fa = [false_acceptance(self.teacher_partial[:, k], self.student_partial[:, k], self.target, self.teacher_valid)[0]
              for k in range(len(PARTIAL_FRACTIONS))]
        gap, lean = logit_gap(self.teacher_logit, self.student_logit, self.target, self.teacher_valid)
        return RecourseSummary(
            vd=vd, crg=recourse_gap(self.teacher_cost, self.student_cost, mask),
            dirsim=directional_similarity(self.cosine, mask), success_rate=success_rate(self.student_valid),
            n=len(mask), s=s, b=int(mask.sum()), fa_50=fa[0], fa_75=fa[1], logit_gap=gap, logit_lean=lean)

    def image(self, i: int) -> ImageRecourse:
        """Task ``i``'s per-image values (``CRG_i``, ``DirSim_i``)."""
        return image_recourse(bool(self.teacher_valid[i]), bool(self.student_accepts_teacher[i]),
                              bool(self.student_valid[i]), float(self.teacher_cost[i]), float(self.student_cost[i]),
                              float(self.cosine[i]))

    def _fields(self) -> dict[str, torch.Tensor]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class DecidedRecourse:
    """What the student's deciding model makes of both recourses of a batch of tasks, each ``(N,)``."""

    accepts_teacher: torch.Tensor  # V_g(x'_f)
    valid: torch.Tensor  # V_g(x'_g)
    cost: torch.Tensor  # c(x, x'_g)
    cosine: torch.Tensor  # cos(x'_f − x, x'_g − x)
    logit_on_teacher: torch.Tensor  # the decider's logit of a at x'_f
    partial_on_teacher: torch.Tensor  # the decider's logits of a at x + α(x'_f − x), (N, len(PARTIAL_FRACTIONS))
    logit_on_own: torch.Tensor  # the decider's logit of a at x'_g


@torch.no_grad()
def decided_recourse(decider: nn.Module, images: torch.Tensor, attribute: str, targets: torch.Tensor,
                     teacher_counterfactuals: torch.Tensor, own_counterfactuals: torch.Tensor,
                     own_cost: torch.Tensor | None = None) -> DecidedRecourse:
    """The student's ``decider`` on the teacher's ``x'_f`` (and its partial edits) and on the
    student's own ``x'_g``, for images ``(N, 3, H, W)`` and targets ``(N,)``; ``own_cost``: the
    cost its edit measured (default: :func:`recourse.metrics.recourse_cost`)."""
    targets = torch.as_tensor(targets).long()
    on_teacher, partial = boundary_logits(decider, images, teacher_counterfactuals, attribute)
    on_own = decider(own_counterfactuals)[:, attribute_index(attribute)]
    return DecidedRecourse(
        accepts_teacher=validity(decisions(on_teacher), targets), valid=validity(decisions(on_own), targets),
        cost=recourse_cost(images, own_counterfactuals) if own_cost is None else own_cost,
        cosine=direction_cosines(teacher_counterfactuals - images, own_counterfactuals - images),
        logit_on_teacher=on_teacher, partial_on_teacher=partial, logit_on_own=on_own)


@dataclass(frozen=True, kw_only=True)
class StudentRecourse(DecidedRecourse):
    """The student's side of a batch of tasks: its own counterfactuals ``(N, 3, H, W)`` and what
    its decider makes of both recourses, each ``(N,)``."""

    counterfactuals: torch.Tensor  # x'_g
    twin_probability_after: torch.Tensor  # the twin's p_a(x'_g)
    edits: torch.Tensor | None = None  # the whole edits x'_g was stopped on (recourse.audit.edit_path)


def own_seeds(student: Student, seeds: tuple[int, ...] | None, config: CounterfactualConfig,
              count: int) -> tuple[int, ...] | None:
    """The seeds of ``student``'s own recourse on ``count`` tasks: the tasks' ``seeds`` (where
    none are given, :func:`recourse.generation.generate`'s default ``config.seed + i``), each
    moved by the student's ``seed_offset``; unchanged where it has none, so that a student and
    the teacher edit with the same noise unless a row asks for fresh noise."""
    if not student.seed_offset:
        return seeds
    tasks = seeds if seeds is not None else tuple(config.seed + i for i in range(count))
    return tuple(int(seed) + student.seed_offset for seed in tasks)


def own_recourse(images: torch.Tensor, attribute: str, targets: int | torch.Tensor, student: Student,
                 config: CounterfactualConfig, generator: FaceGenerator | None, seeds: tuple[int, ...] | None = None,
                 stop_on_decider: bool = True) -> CounterfactualResult:
    """The student's own recourse ``x'_g``: its twin's gradients guide the edit and, with
    ``stop_on_decider``, its integer decider says where the edit stops and whether it is
    valid (the audit's and the command line's counterfactual of a variant). ``seeds``: the
    tasks' seeds, moved by the student's ``seed_offset`` (:func:`own_seeds`)."""
    decider = student.decider if stop_on_decider and student.kind == "integer" else None
    return generate(images, student.twin, attribute, targets, config, generator,
                    own_seeds(student, seeds, config, len(images)), decider=decider)


def student_recourse(images: torch.Tensor, attribute: str, targets: torch.Tensor,
                     teacher_counterfactuals: torch.Tensor, student: Student, config: CounterfactualConfig,
                     generator: FaceGenerator | None, seeds: tuple[int, ...],
                     stop_on_decider: bool = True, own: CounterfactualResult | None = None) -> StudentRecourse:
    """``x'_g`` for images ``(N, 3, H, W)`` and the student's view of the teacher's ``x'_f``.

    The twin's gradients guide ``x'_g``; with ``stop_on_decider`` the integer decider says
    where it stops, so that at margin 0 the student's own recourse is valid for the model
    that decides; the twin's boundary can sit a rounding step from the decider's
    (``docs/guide.md``, compression). ``own``: the student's own recourse, already made."""
    if own is None:
        own = own_recourse(images, attribute, targets, student, config, generator, seeds, stop_on_decider)
    decided = decided_recourse(student.decider, images, attribute, targets, teacher_counterfactuals, own.images,
                               own.cost)
    return StudentRecourse(**{field.name: getattr(decided, field.name) for field in fields(decided)},
                           counterfactuals=own.images, twin_probability_after=own.probability_after, edits=own.edits)


def columns(targets: torch.Tensor, teacher_valid: torch.Tensor, teacher_cost: torch.Tensor,
            teacher_logit: torch.Tensor, teacher_partial: torch.Tensor, student: DecidedRecourse) -> RecourseColumns:
    """The per-task columns of the teacher's side and what the student's decider made of both
    recourses: every recourse metric is computed from these."""
    return RecourseColumns(
        target=targets.long(), teacher_valid=teacher_valid.bool(),
        student_accepts_teacher=student.accepts_teacher.bool(), student_valid=student.valid.bool(),
        teacher_cost=teacher_cost.double(), student_cost=student.cost.double(), cosine=student.cosine.double(),
        teacher_logit=teacher_logit.double(), student_logit=student.logit_on_teacher.double(),
        teacher_partial=teacher_partial.double(), student_partial=student.partial_on_teacher.double())


@dataclass(frozen=True)
class PairedRecourse:
    """Both sides of a batch of tasks and their columns."""

    teacher: CounterfactualResult  # x'_f, V_f(x'_f), c_f
    student: StudentRecourse
    columns: RecourseColumns


def threads_for_paired_edits(cores: int | None = None) -> int:
    """Torch's intra-op threads for a process whose audits edit with both models at once
    (``paired_recourse(concurrent=True)``): half the cores for each edit. With more, the two
    edits' thread pools contend for the same cores: on 2 cores a full audit took 6.1 s with 2
    threads and 5.2 s with 1 (medians, ``scripts/measurements/app_benchmark.py``; the guide's
    "Time on this CPU")."""
    return max(1, (cores if cores is not None else os.cpu_count() or 1) // 2)


def share_cores_between_paired_edits() -> int:
    """Lower torch's threads to :func:`threads_for_paired_edits` (never raise them: a smaller
    setting made on purpose stays); the threads now in use."""
    torch.set_num_threads(min(torch.get_num_threads(), threads_for_paired_edits()))
    return torch.get_num_threads()


def paired_recourse(images: torch.Tensor, attribute: str, targets: torch.Tensor, teacher: nn.Module,
                    student: Student, config: CounterfactualConfig, generator: FaceGenerator | None,
                    seeds: tuple[int, ...], check: StageCheck = no_check, concurrent: bool = False) -> PairedRecourse:
    """Teacher and student recourse for images ``(N, 3, H, W)`` in [0, 1], one attribute,
    targets ``(N,)`` and one seed per task (the same seed for both models). ``check`` is
    called after each model's counterfactuals.

    With ``concurrent`` the two models edit at the same time, the student in a second thread:
    the edits are independent (each model's own gradient, the same seeds), so the numbers are
    those of the sequential run, and one face's edits at batch size 1 use the second core that
    a single edit leaves idle (an audit's wait)."""
    targets = torch.as_tensor(targets).long()
    if not concurrent:
        teacher_result = generate(images, teacher, attribute, targets, config, generator, seeds)
        check("full-precision counterfactual")
        own = None
    else:
        with ThreadPoolExecutor(max_workers=1) as pool:  # left only once the student's edit is done
            student_edit = pool.submit(own_recourse, images, attribute, targets, student, config, generator, seeds)
            teacher_result = generate(images, teacher, attribute, targets, config, generator, seeds)
            check("full-precision counterfactual")
            own = student_edit.result()
    student_result = student_recourse(images, attribute, targets, teacher_result.images, student, config,
                                      generator, seeds, own=own)
    check("compressed counterfactual")
    teacher_logit, teacher_partial = boundary_logits(teacher, images, teacher_result.images, attribute)
    return PairedRecourse(teacher_result, student_result,
                          columns(targets, teacher_result.valid, teacher_result.cost, teacher_logit, teacher_partial,
                                  student_result))


@torch.no_grad()
def stop_on_paths(images: torch.Tensor, edits: torch.Tensor, decider: nn.Module, attribute: str,
                  targets: torch.Tensor, margin: float) -> torch.Tensor:
    """Each task's first point on its straight path ``x → x̃`` (``edits``: the whole edits before
    their stop) where ``decider`` is past ``margin``, or ``x̃`` where it never is: the stop of
    :mod:`recourse.generation.denoised` read at another margin of the same edit."""
    index = attribute_index(attribute)
    signs = 2 * torch.as_tensor(targets).float() - 1
    return torch.cat([smallest_step(images[i:i + 1], edits[i:i + 1], decider, index, signs[i:i + 1], margin)
                      for i in range(len(images))])


@torch.no_grad()
def columns_of(images: torch.Tensor, attribute: str, targets: torch.Tensor, teacher: nn.Module, student: Student,
               teacher_counterfactuals: torch.Tensor, student_counterfactuals: torch.Tensor) -> RecourseColumns:
    """The per-task columns of two given sets of counterfactuals (``x'_f``, ``x'_g``), each
    model's decisions by its deciding kernels: the same definitions as :func:`paired_recourse`."""
    targets = torch.as_tensor(targets).long()
    teacher_logit, teacher_partial = boundary_logits(teacher, images, teacher_counterfactuals, attribute)
    decided = decided_recourse(student.decider, images, attribute, targets, teacher_counterfactuals,
                               student_counterfactuals)
    return columns(targets, validity(decisions(teacher_logit), targets), recourse_cost(images, teacher_counterfactuals),
                   teacher_logit, teacher_partial, decided)


@dataclass(frozen=True)
class StoppedRecourse:
    """A batch's recourse read at its stops: the pictures ``x'_f``, ``x'_g`` ``(N, 3, H, W)`` at
    the visible stop, and the per-task columns of the numbers at the numbers' stop."""

    teacher_pictures: torch.Tensor
    student_pictures: torch.Tensor
    columns: RecourseColumns


def read_stops(images: torch.Tensor, attribute: str, targets: torch.Tensor, teacher: nn.Module, student: Student,
               paired: PairedRecourse, stops) -> StoppedRecourse:
    """Where an audit reads each task's recourse (``stops``: :class:`recourse.audit.stops.AuditStops`,
    or None: both where each edit stopped), for a single audit and a scan alike."""
    if stops is None:
        return StoppedRecourse(paired.teacher.images, paired.student.counterfactuals, paired.columns)
    targets = torch.as_tensor(targets).long()

    def both_at(margin: float) -> tuple[torch.Tensor, torch.Tensor]:
        return (stop_on_paths(images, paired.teacher.edits, teacher, attribute, targets, margin),
                stop_on_paths(images, paired.student.edits, student.decider, attribute, targets, margin))

    pictures = both_at(stops.visible)
    numbers = pictures if stops.numbers == stops.visible else both_at(stops.numbers)
    return StoppedRecourse(*pictures, columns_of(images, attribute, targets, teacher, student, *numbers))
