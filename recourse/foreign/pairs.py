"""A foreign model pair as the audit sees it: the full-precision model (the teacher, guiding
edits with its gradients) and the compressed variant (a :class:`recourse.audit.paired.Student`: a
differentiable twin that guides its own recourse and a decider that makes its decisions).

* a differentiable variant (a torch.export program, pt2e-quantized or not; safetensors) is
  its own twin and decider: its straight-through gradients guide, its values decide;
* a black box (ONNX Runtime, float or int8) decides with its own runtime, and its twin is the
  same runtime behind :class:`recourse.foreign.blackbox.ZerothOrderClassifier`: gradients
  estimated from forward passes in the leading components of the generator's PCA face basis
  (the space the edits are made in; ``scripts/measurements/foreign_gradient_check.py`` validates it), counted.

Either side may be the committed classifier (``None``). The attribute must be predicted by
both models: the audit refuses others with the adapter's message.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from recourse.foreign.adapter import ForeignClassifier, load_classifier
import torch

from recourse.foreign.blackbox import DEFAULT_SIGMA, ZerothOrderClassifier, face_basis, lowres_basis
from recourse.foreign.cards import CARD_NAMES

# The black box's gradient subspace: all 512 components of the committed face basis, 1,024
# forward passes per gradient. The walk projects every step on these components, so a gradient
# estimated in all of them is the one the walk follows (on the float classifier: cosine 0.97 to
# it, and the same recourse); the leading 32 or 128 hold under half of it (cosine 0.1 / 0.45) and
# make a recourse about twice as costly. Measured by scripts/measurements/foreign_gradient_check.py
# (assets/results/foreign-gradient-check.json, docs/foreign-models.md).
BLACK_BOX_COMPONENTS = 512
BLACK_BOX_GRID = 8  # the fallback subspace where the generator has no face basis


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
    student: object  # recourse.audit.paired.Student
    name: str  # the variant's name in the audit's records
    black_box: ZerothOrderClassifier | None  # its forward_passes, when the variant is one
    attributes: tuple[str, ...] = ()  # what both models predict, in CelebA's order


def edit_basis(generator=None, k: int = BLACK_BOX_COMPONENTS) -> torch.Tensor:
    """The black box's gradient subspace ``(k, 3, R, R)``: the ``k`` leading components of
    ``generator``'s PCA face basis (default: the committed generator; ``R`` its resolution,
    that of the images it edits), or smooth 8×8 changes of a 64×64 image for a generator
    without one (a diffusers pixel pipeline)."""
    if generator is None:
        from recourse import models

        generator = models.load_generator()
    autoencoder = getattr(generator, "autoencoder", None)
    if autoencoder is None or getattr(autoencoder, "components", None) is None:
        return lowres_basis((3, 64, 64), BLACK_BOX_GRID)
    return face_basis(autoencoder.components, min(k, autoencoder.components.shape[0]), autoencoder.config.resolution)


def differentiable(model: ForeignClassifier, basis: torch.Tensor | None = None, seed: int = 0) -> nn.Module:
    """The model itself when gradients flow through it, else its zeroth-order wrapper in
    ``basis`` (default :func:`edit_basis` of the committed generator)."""
    if model.differentiable:
        return model
    return ZerothOrderClassifier(model, basis=basis if basis is not None else edit_basis(), sigma=DEFAULT_SIGMA,
                                 seed=seed)


def load_pair(model: str | os.PathLike | None, variant: str | os.PathLike, teacher: nn.Module | None = None,
              basis: torch.Tensor | None = None) -> ForeignPair:
    """Load the pair named by two cards (``model=None``: ``teacher``, by default the committed
    classifier); its ``attributes`` are those both models predict. A black box's gradients are
    estimated in ``basis`` (default :func:`edit_basis`)."""
    from recourse.audit.paired import Student
    from recourse.names import ATTRIBUTES

    decider = load_classifier(str(variant))
    attributes = set(decider.supported_attributes)
    if model is not None:
        foreign_teacher = load_classifier(str(model))
        attributes &= set(foreign_teacher.supported_attributes)
        if not attributes:
            raise ValueError(f"{foreign_teacher.card.title} and {decider.card.title} predict no attribute in common "
                             f"({', '.join(foreign_teacher.supported_attributes)} against "
                             f"{', '.join(decider.supported_attributes)})")
        teacher = differentiable(foreign_teacher, basis)
    elif teacher is None:
        from recourse import models

        teacher = models.load_teacher()
    twin = differentiable(decider, basis, seed=1)
    name = decider.card.title
    student = Student(name, twin, decider if twin is not decider else twin)
    return ForeignPair(teacher, student, name, twin if isinstance(twin, ZerothOrderClassifier) else None,
                       tuple(a for a in ATTRIBUTES if a in attributes))


def require(pair: ForeignPair, attribute: str) -> None:
    """Refuse an attribute either model of the pair does not predict, naming theirs."""
    for model in (pair.student.decider, pair.teacher):
        if hasattr(model, "require"):
            model.require(attribute)


def foreign_pair(model: str | os.PathLike | None, variant: str | os.PathLike, attribute: str,
                 teacher: nn.Module | None = None, basis: torch.Tensor | None = None) -> ForeignPair:
    """:func:`load_pair`, checking both models predict ``attribute``."""
    from recourse.foreign.adapter import UnsupportedAttributeError
    from recourse.names import ATTRIBUTES

    if attribute not in ATTRIBUTES:
        raise UnsupportedAttributeError(f"unknown attribute {attribute!r}; expected a CelebA name, e.g. 'Smiling'")
    pair = load_pair(model, variant, teacher, basis)
    require(pair, attribute)
    return pair


def card_key(path: str | os.PathLike) -> tuple[str, float]:
    """A card's identity for a cache: its resolved path and when it (or its folder) last changed."""
    resolved = Path(path).expanduser().resolve()
    return str(resolved), resolved.stat().st_mtime if resolved.exists() else 0.0


@functools.lru_cache(maxsize=4)
def _cached_pair(model_key: tuple[str, float] | None, variant_key: tuple[str, float]) -> ForeignPair:
    return load_pair(model_key[0] if model_key else None, variant_key[0])


def cached_pair(model: str | os.PathLike | None, variant: str | os.PathLike) -> ForeignPair:
    """:func:`load_pair`, loaded once per pair of cards while neither changes (the app's
    "Your models": loading a program or an ONNX model takes seconds, an audit should not)."""
    return _cached_pair(card_key(model) if model else None, card_key(variant))
