"""The committed models, loaded once and shared read-only by every audit and scan."""

from __future__ import annotations

import functools

from torch import nn

from recourse.checkpoints import CONFIG_FILE, CheckpointError, load_classifier
from recourse.compression import METHODS, QuantizedModel, load_variant
from recourse.paired import Student
from recourse.paths import shown, teacher_dir, variants_dir

VARIANTS: tuple[str, ...] = METHODS  # one committed variant per method, in the registry's order


class VariantNotFoundError(CheckpointError):
    """A known variant whose checkpoint folder has not been made (or committed) yet."""


@functools.lru_cache(maxsize=1)
def load_teacher() -> nn.Module:
    """The full-precision classifier under audit."""
    return load_classifier(teacher_dir())


def variant_is_built(variant: str) -> bool:
    return (variants_dir() / variant / CONFIG_FILE).is_file()


@functools.lru_cache(maxsize=len(VARIANTS))
def load_committed_variant(variant: str) -> QuantizedModel:
    """``checkpoints/variants/<variant>/`` as a :class:`QuantizedModel`."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    directory = variants_dir() / variant
    if not variant_is_built(variant):
        raise VariantNotFoundError(
            f"variant {variant!r} is not available: {shown(directory)}/ is missing. Make it with "
            f"python -m recourse quantize --method {variant} --data PATH")
    return load_variant(directory)


def load_student(variant: str) -> Student:
    """The committed variant as the recourse comparison sees it (twin and decider)."""
    return Student.from_variant(variant, load_committed_variant(variant))
