"""Semantic validity that can move: the share of a model's own recourses that the attribute's
independent judge *newly* sees.

The registered semantic validity (:mod:`recourse.benchmark.semantic`) counts a task where the
judge sees the model's counterfactual on the target's side. Where the judge already saw the face
itself there (17 of the registered run's 120 tasks), every model's recourse counted as seen before
any edit, so those tasks could never tell two models apart. Here a task counts only where the judge
does not already see the face on the target's side (``face_seen`` 0): among those, the share whose
own recourse is valid for the model *and* seen by the judge, per attribute and pooled, with the
tasks where the row and the teacher disagree (the discordant counts every reading prints).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from recourse.audit.paired import RecourseColumns
from recourse.benchmark.semantic import SemanticColumns, semantic_valid


@dataclass(frozen=True)
class NewlySeenShare:
    """A model's newly-seen share against the teacher's on the same movable tasks."""

    share: float  # %, NaN where no task can move
    teacher: float  # the teacher's own recourse on the same tasks, %
    tasks: int  # tasks the judge reads and does not already see on the target's side
    row_only: int  # discordant: newly seen for the row, not for the teacher
    teacher_only: int  # discordant: newly seen for the teacher, not for the row

    @property
    def difference(self) -> float:
        """Row − teacher, in points."""
        return self.share - self.teacher

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class NewlySeen:
    """Pooled over the judged attributes (``all``) and per attribute."""

    all: NewlySeenShare
    per_attribute: dict[str, NewlySeenShare] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"all": self.all.to_dict(), "per_attribute": {a: s.to_dict() for a, s in self.per_attribute.items()}}


def movable(semantic: SemanticColumns) -> torch.Tensor:
    """Per task: judged, a face found in x, and x not already on the target's side by the judge.
    ValueError where the columns do not say whether the judge saw the face (a run before them)."""
    if semantic.face_seen is None:
        raise ValueError("these columns do not say whether the judge already saw each face on the target's side "
                         "(a run made before teacher_judge_face_seen was recorded)")
    return semantic.judged.bool() & (semantic.face_seen == 0)


def _share(mine: torch.Tensor, teacher: torch.Tensor) -> NewlySeenShare:
    tasks = len(mine)
    nan = float("nan")
    return NewlySeenShare(100.0 * float(mine.double().mean()) if tasks else nan,
                          100.0 * float(teacher.double().mean()) if tasks else nan, tasks,
                          int((mine & ~teacher).sum()), int((teacher & ~mine).sum()))


def newly_seen(columns: RecourseColumns, semantic: SemanticColumns, attributes: tuple[str, ...]) -> NewlySeen:
    """A row's newly-seen share and the teacher's, on the tasks that can move (``attributes``:
    each task's attribute, as the columns file holds them)."""
    can_move = movable(semantic)
    mine = semantic_valid(columns.student_valid, semantic.student_seen)
    teacher = semantic_valid(columns.teacher_valid, semantic.teacher_seen)
    per_attribute = {}
    for attribute in dict.fromkeys(attributes):
        chosen = can_move & torch.tensor([a == attribute for a in attributes])
        if bool(chosen.any()):
            per_attribute[attribute] = _share(mine[chosen], teacher[chosen])
    return NewlySeen(_share(mine[can_move], teacher[can_move]), per_attribute)
