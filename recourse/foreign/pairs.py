"""A foreign model pair as the audit sees it: the full-precision model (the teacher, guiding
edits with its gradients) and the compressed variant (a :class:`recourse.paired.Student`: a
differentiable twin that guides its own recourse and a decider that makes its decisions).

* a differentiable variant (a torch.export program, pt2e-quantized or not; safetensors) is
  its own twin and decider: its straight-through gradients guide, its values decide;
* a black box (ONNX Runtime, float or int8) decides with its own runtime, and its twin is the
  same runtime behind :class:`recourse.foreign.blackbox.ZerothOrderClassifier`: gradients
  estimated from forward passes in a smooth low-resolution subspace, counted.

Either side may be the committed classifier (``None``). The attribute must be predicted by
both models: the audit refuses others with the adapter's message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from recourse.foreign.adapter import ForeignClassifier, load_classifier
from recourse.foreign.blackbox import DEFAULT_SIGMA, ZerothOrderClassifier, lowres_basis
from recourse.foreign.cards import CARD_NAMES

# The black box's gradient subspace: 8×8 smooth changes per channel, 192 dimensions, 384
# forward passes per gradient.
BLACK_BOX_GRID = 8


def is_card(value: str | os.PathLike | None) -> bool:
    """Whether a command-line value names a model card (a card file or a folder holding one)."""
    if value is None:
        return False
    path = Path(value)
    return (path.is_file() and path.suffix.lower() in (".json", ".toml")) or \
        (path.is_dir() and any((path / name).is_file() for name in CARD_NAMES))


@dataclass
class ForeignPair:
    teacher: nn.Module
    student: object  # recourse.paired.Student
    name: str  # the variant's name in the audit's records
    black_box: ZerothOrderClassifier | None  # its forward_passes, when the variant is one


def differentiable(model: ForeignClassifier, grid: int = BLACK_BOX_GRID, seed: int = 0) -> nn.Module:
    """The model itself when gradients flow through it, else its zeroth-order wrapper."""
    if model.differentiable:
        return model
    return ZerothOrderClassifier(model, basis=lowres_basis((3, 64, 64), grid), sigma=DEFAULT_SIGMA, seed=seed)


def foreign_pair(model: str | os.PathLike | None, variant: str | os.PathLike, attribute: str,
                 teacher: nn.Module | None = None) -> ForeignPair:
    """Load the pair named by two cards (``model=None``: ``teacher``, by default the committed
    classifier) and check both predict ``attribute``."""
    from recourse.paired import Student

    decider = load_classifier(str(variant))  # first: its attributes decide whether to go on
    decider.require(attribute)
    if model is not None:
        foreign_teacher = load_classifier(str(model))
        foreign_teacher.require(attribute)
        teacher = differentiable(foreign_teacher)
    elif teacher is None:
        from recourse import models

        teacher = models.load_teacher()
    twin = differentiable(decider, seed=1)
    name = decider.card.title
    student = Student(name, twin, decider if twin is not decider else twin)
    return ForeignPair(teacher, student, name, twin if isinstance(twin, ZerothOrderClassifier) else None)
