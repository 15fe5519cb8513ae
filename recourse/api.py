"""The library as a notebook meets it (``import recourse``; ``docs/api.md``): a pair of models,
an :class:`Auditor` that audits one face at a time exactly as the app and ``recourse audit`` do,
a folder scan and compression. Each is a thin composition of the modules that do the work:
:mod:`recourse.audit.pipeline`, :mod:`recourse.audit.scan_run` and :mod:`recourse.compression`. The settings
are the product's, from the one place that holds them (:func:`recourse.audit.result.product_settings`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from torch import nn

from recourse.audit.instruments import shared_instruments
from recourse.audit.paired import Student, share_cores_between_paired_edits
from recourse.audit.pipeline import AuditStep, ImageSource, audit_image, predicted_attributes
from recourse.audit.result import AuditResult, AuditSettings, product_settings
from recourse.audit.scan_run import ScanPlan, ScanResult, run_scan
from recourse.compression import CompressionConfig, QuantizedModel, make_config
from recourse.compression import quantize as compress
from recourse.data import attribute_index
from recourse.generation import FaceGenerator
from recourse.progress import Progress, silent

OWN_MODEL = "own-model"  # an own student's name in the records where none is given


@dataclass(frozen=True)
class Pair:
    """The full-precision classifier (the teacher) and the compressed model audited against it
    (the student: a differentiable twin that guides its recourse, a decider that decides).
    ``name`` is the student's name in every record: a committed variant's id, or yours."""

    teacher: nn.Module
    student: Student
    name: str


def load_pair(variant: str | os.PathLike | None = None, *, teacher: nn.Module | None = None,
              student: nn.Module | Student | QuantizedModel | None = None, name: str | None = None) -> Pair:
    """A pair to audit: a committed variant by its id (``load_pair("ptq-int4")``), a model card
    of your own compressed model (``docs/foreign-models.md``), or your models themselves
    (``load_pair(teacher=model, student=quantized)``). ``student``: an ``nn.Module`` (its own
    twin and decider), a :class:`recourse.audit.paired.Student` or what :func:`quantize` returns.
    ``teacher`` defaults to the committed classifier; ``name`` to the variant's, the card's
    title, or ``"own-<method>"`` / ``"own-model"`` for your own student."""
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if teacher is not None:
        _require_module("teacher", teacher)
    if student is not None:
        if variant is not None:
            raise ValueError(f"give a variant's name ({variant!r}) or student=, not both")
        return Pair(_teacher_or_committed(teacher), _as_student(student, name), _named(student, name))
    if variant is None:
        raise ValueError("load_pair needs a committed variant's name, e.g. load_pair('ptq-int4'), a model card, "
                         "or your own model as student=")
    if isinstance(variant, (str, os.PathLike)) and _is_card(variant):
        from recourse.foreign.pairs import load_pair as load_card_pair

        foreign = load_card_pair(None, variant, teacher)
        own_name = name or foreign.name
        return Pair(foreign.teacher, replace(foreign.student, name=own_name), own_name)
    from recourse import models

    committed = models.load_student(variant)  # an unknown name: a ValueError listing the variants
    return Pair(_teacher_or_committed(teacher), replace(committed, name=name or variant), name or variant)


def _is_card(value: str | os.PathLike) -> bool:
    """Whether ``value`` names a model card rather than a committed variant's id (an id has no
    "/" and no card's suffix: it never reads the disk, and a folder of that name is no card)."""
    text = os.fspath(value)
    if "/" not in text and not text.endswith((".json", ".toml")):
        return False
    from recourse.foreign.pairs import is_card

    return is_card(text)


def _require_module(role: str, model: object) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{role} must be a torch nn.Module, got {type(model).__name__}")
    if model.training:  # dropout and batch statistics would change every audit's numbers
        raise ValueError(f"{role} ({type(model).__name__}) is in training mode: call .eval() on it first")


def _teacher_or_committed(teacher: nn.Module | None) -> nn.Module:
    if teacher is not None:
        return teacher
    from recourse import models

    return models.load_teacher()


def _as_student(student: nn.Module | Student | QuantizedModel, name: str | None) -> Student:
    """``student`` as the audit sees it: a twin that guides, a decider that decides."""
    if isinstance(student, QuantizedModel):
        return Student.from_variant(_named(student, name), student)
    if isinstance(student, Student):
        _require_module("student.twin", student.twin)
        _require_module("student.decider", student.decider)
        return replace(student, name=_named(student, name))
    if not isinstance(student, nn.Module):
        raise TypeError(f"student must be a torch nn.Module, a recourse.Student or what recourse.quantize returns, "
                        f"got {type(student).__name__}")
    _require_module("student", student)
    return Student(_named(student, name), twin=student, decider=student)


def _named(student: object, name: str | None) -> str:
    if name is not None:
        return name
    if isinstance(student, QuantizedModel):
        return f"own-{student.config.method}"
    return student.name if isinstance(student, Student) else OWN_MODEL


class Auditor:
    """Audits faces for one :class:`Pair` exactly as the app and ``recourse audit`` do: the
    product's settings (:func:`recourse.audit.result.product_settings`) unless ``settings`` are
    given, the committed generator, robust judges and dlib's face descriptor. Like a diffusers
    pipeline it holds its parts: the models from the start, the generator and the instruments
    loaded on the first call and kept for the next.

    As the app and the command line do, a call lowers torch's threads to half the cores: the two
    models' edits run at the same time, one on each half (``recourse.audit.paired``)."""

    def __init__(self, pair: Pair | str, settings: AuditSettings | None = None, *,
                 generator: FaceGenerator | None = None) -> None:
        self.pair = load_pair(pair) if isinstance(pair, str) else pair
        if not isinstance(self.pair, Pair):
            raise TypeError(f"pair must be a recourse.Pair (recourse.load_pair) or a variant's name, "
                            f"got {type(pair).__name__}")
        if settings is not None and not isinstance(settings, AuditSettings):
            raise TypeError(f"settings must be recourse.AuditSettings, got {type(settings).__name__}")
        self.settings = settings if settings is not None else product_settings()
        self._generator = generator
        self._instruments: dict | None = None

    def __repr__(self) -> str:
        return f"Auditor({self.pair.name!r}, method={self.settings.counterfactual.method!r})"

    @property
    def generator(self) -> FaceGenerator:
        """The generator that makes both recourses: the committed one unless one was given."""
        if self._generator is None:
            from recourse import models

            self._generator = models.load_generator()
        return self._generator

    def __call__(self, image: ImageSource, *, attribute: str, target: int | None = None,
                 progress: Callable[[AuditStep], None] | None = None) -> AuditResult:
        """Audit one face.

        Args:
            image: a photo (a path, bytes or a PIL image: the face is found and aligned) or a
                framed ``(3, H, W)`` float tensor in [0, 1] at the teacher's resolution.
            attribute: the CelebA attribute whose decision is changed, e.g. ``"Smiling"``.
            target: the decision the recourse aims at, 0 or 1; None: flip the teacher's.
            progress: called with each :class:`recourse.audit.pipeline.AuditStep` (predictions first).

        Returns:
            The :class:`recourse.audit.result.AuditResult`: its ``verdict`` in plain words, its
            numbers (``recourse``, ``to_dict()``), ``save_json(path)`` and ``save_html(path)``.
        """
        self._require_attribute(attribute)
        share_cores_between_paired_edits()
        if self._instruments is None:
            self._instruments = shared_instruments(self.pair.teacher)
        return audit_image(image, variant=self.pair.name, attribute=attribute, target=target,
                           settings=self.settings, teacher=self.pair.teacher, student=self.pair.student,
                           generator=self.generator, progress=progress, **self._instruments)

    def _require_attribute(self, attribute: str) -> None:
        """Refuse an unknown attribute, or one that either model of the pair does not predict."""
        attribute_index(attribute)
        student = self.pair.student
        predicted = predicted_attributes(self.pair.teacher, student.twin, student.decider)
        if attribute not in predicted:
            raise ValueError(f"{attribute!r} is not predicted by both models of {self.pair.name}; "
                             f"they predict {', '.join(predicted) or 'no attribute in common'}")


def scan_folder(folder: str | os.PathLike, *, variant: str | Pair, attribute: str, top: int = 20,
                count: int | None = None, split: str = "test", settings: AuditSettings | None = None,
                out: str | os.PathLike | None = None, progress: Progress = silent) -> ScanResult | None:
    """Screen every photo of ``folder`` (a CelebA layout's ``split``, or any folder of photos),
    give the ``top`` most suspicious a full audit and rank them, worst first, as ``recourse scan``
    does. ``variant``: a committed variant's id or a :class:`Pair`; ``count``: at most this many
    photos, in name order; ``out``: where each step is kept, so that a stopped scan goes on.
    ``progress(stage, done, total)``. None only on the other processes of a ``torchrun``."""
    if top < 1 or (count is not None and count < 1):
        raise ValueError(f"top and count must be at least 1, got top={top!r}, count={count!r}")
    if not Path(folder).is_dir():
        raise ValueError(f"{folder}: not a folder")
    pair = load_pair(variant) if isinstance(variant, str) else variant
    if not isinstance(pair, Pair):
        raise TypeError(f"variant must be a variant's name or a recourse.Pair, got {type(variant).__name__}")
    attribute_index(attribute)
    share_cores_between_paired_edits()
    plan = ScanPlan(Path(folder), pair.name, attribute, settings if settings is not None else product_settings(),
                    top=top, count=count, split=split, out=None if out is None else Path(out))
    return run_scan(plan, progress, teacher=pair.teacher, student=pair.student)


def quantize(model: nn.Module, config: CompressionConfig | str, images: torch.Tensor, *,
             labels: torch.Tensor | None = None, progress: Progress | None = None) -> QuantizedModel:
    """Compress ``model`` (a full-precision ``recourse.classifier.AttributeClassifier``) with one
    of :mod:`recourse.compression`'s methods: a config (``PTQInt4Config(ends_bits=8)``) or a
    method's id with its defaults (``"ptq-int8"``). ``images``: ``(N, 3, H, W)`` training images,
    uint8 or float in [0, 1] (calibration reads the first ``config.calibration_images``);
    ``labels`` ``(N, 40)`` for the methods that fine-tune. Give the result to :func:`load_pair`
    as ``student=``. The methods that need the teacher's recourse points are
    ``recourse.compression.quantize``'s."""
    _require_module("model", model)
    if isinstance(config, str):
        config = make_config(config)
    elif not isinstance(config, CompressionConfig):
        raise TypeError(f"config must be a compression config or a method's id, got {type(config).__name__}")
    return compress(model, config, images, labels=labels, progress=progress)
