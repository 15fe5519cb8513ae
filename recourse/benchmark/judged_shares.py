"""What each attribute's judge saw of each model's own recourse, attribute by attribute, from a
run's saved per-task columns: the share of the judged tasks whose own
recourse is valid and seen (semantic validity), and the judge's mean shift toward the target.

The record holds these pooled over the attributes; a judge reads one attribute, so its seen rate
and shift are read per attribute here. Pure arithmetic on the columns: nothing is loaded."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from recourse.audit.paired import RecourseColumns
from recourse.benchmark.semantic import SemanticColumns, semantic_valid
from recourse.benchmark.settings import FP32


@dataclass(frozen=True)
class JudgedShare:
    """One model's own recourse on one attribute's judged tasks."""

    judged: int  # tasks the attribute's judge read
    semantic_validity: float  # %, own recourse valid and seen; NaN where none was judged
    seen: float  # %, own recourse seen, valid or not
    shift: float  # the judge's mean shift toward the target over the faces it found; NaN where none


def judged_share(valid: torch.Tensor, seen: torch.Tensor, shift: torch.Tensor, judged: torch.Tensor) -> JudgedShare:
    """The share of one model's recourse on the tasks ``judged`` (bool masks and the shift, ``(N,)``)."""
    count = int(judged.sum())
    if count == 0:
        return JudgedShare(0, math.nan, math.nan, math.nan)
    moved = shift[judged].double()
    moved = moved[torch.isfinite(moved)]
    return JudgedShare(count, 100.0 * float(semantic_valid(valid[judged], seen[judged]).double().mean()),
                       100.0 * float(seen[judged].double().mean()),
                       float(moved.mean()) if len(moved) else math.nan)


def shares_by_attribute(attributes: Sequence[str], rows: Mapping[str, RecourseColumns],
                        semantic: Mapping[str, SemanticColumns]) -> dict[str, dict[str, JudgedShare]]:
    """``{model: {attribute: JudgedShare}}`` for the teacher (:data:`FP32`, first) and every row
    with readings, over the attributes some task of which was judged, in the run's order. The
    teacher's readings are the same in every row's columns; the first row's are used."""
    if not semantic:
        return {}
    names = [name for name in rows if name in semantic]
    judged_any = torch.zeros(len(attributes), dtype=torch.bool)
    for name in names:
        judged_any |= semantic[name].judged.bool()
    masks = {a: torch.tensor([b == a for b in attributes], dtype=torch.bool) for a in dict.fromkeys(attributes)}
    masks = {a: mask for a, mask in masks.items() if bool((mask & judged_any).any())}
    first = names[0]
    shares = {FP32: {a: judged_share(rows[first].teacher_valid, semantic[first].teacher_seen,
                                     semantic[first].teacher_shift, semantic[first].judged & mask)
                     for a, mask in masks.items()}}
    for name in names:
        shares[name] = {a: judged_share(rows[name].student_valid, semantic[name].student_seen,
                                        semantic[name].student_shift, semantic[name].judged & mask)
                        for a, mask in masks.items()}
    return shares
