"""Judging the generator: FR, oracle FR, MNAC, proximity, oracle-feature FD and time.

Follows the CelebA protocol of DiME / ACE as fixed in ``docs/metrics.md``: the
counterfactuals are guided by the full-precision classifier and judged by the oracle and
by the adversarially robust judge, which no counterfactual was optimised against. Oracle
and judge FR count real flips only: tasks where that model agreed with the classifier
before the edit.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn

from recourse.data import DEFAULT_ATTRIBUTES, attribute_index, to_float_images
from recourse.evaluation import predict_logits
from recourse.instruments.identity import Descriptors, FaceDescriptor, identity_result
from recourse.instruments.realism import realism_with_floor
from recourse.instruments.set_verdicts import Calibrated, OriginalScores, set_verdicts
from recourse.generation.batch_store import BatchStore
from recourse.generation.generators import FaceGenerator
from recourse.generation.guidance import CounterfactualConfig
from recourse.generation.methods import generate
from recourse.metrics import (
    decisions, flip_rate, frechet_distance, mean_number_of_attributes_changed, recourse_cost,
)

@dataclass(frozen=True)
class AttributeQuality:
    """Quality of the counterfactuals for one attribute (percentages in %, costs in [0, 1] units)."""

    attribute: str
    n: int
    flip_rate: float
    oracle_flip_rate: float | None  # over the tasks where the oracle agreed with the classifier before
    judge_flip_rate: float | None  # … the judge; None without a judge
    judge_agreed: int  # tasks the judge FR is counted on
    mnac: float
    proximity: float
    oracle_fd: float
    median_seconds: float  # per counterfactual, batch size 1
    to_target_1: int  # how many tasks asked to switch the attribute on
    oracle_flip_rate_to_1: float | None  # oracle FR of the tasks switching the attribute on (None: none counted)
    oracle_flip_rate_to_0: float | None  # … and of those switching it off
    # Optional instruments (recourse.instruments, docs/metrics.md); None when not asked for.
    fva: float | None = None  # % of counterfactuals dlib verifies as their original's person
    fs: float | None = None  # mean dlib descriptor distance to the original
    realism_n: int | None = None  # faces in each set of the target-matched comparison below
    realism_fd: float | None = None  # oracle-feature FD against real faces with the target attribute
    realism_kid: float | None = None  # … and KID
    floor_fd: float | None = None  # FD of a disjoint real set of the same size and targets against them
    floor_kid: float | None = None  # … and KID
    strong_judge_flip_rate: float | None = None  # real flips seen by the stronger (radius-3) judge
    strong_judge_agreed: int | None = None  # tasks that FR is counted on
    # The FR each judge would give if every counted counterfactual were a real face of its target
    # class (its rate of deciding real faces of that class as such): judge FR cannot be read
    # beyond what the judge sees on real faces, e.g. a judge that misses most real glasses.
    judge_ceiling: float | None = None
    strong_judge_ceiling: float | None = None
    # What the calibrated judges (recourse.instruments.set_verdicts) say: per judge of this
    # attribute and target class, the seen rate, seen over ceiling and shift with their 95%
    # intervals; judges trained on other faces first. Empty when no calibration was given.
    judge_verdicts: tuple[dict, ...] = ()


@dataclass(frozen=True)
class QualityReport:
    results: tuple[AttributeQuality, ...]
    settings: CounterfactualConfig
    n_reference: int  # real images the FD compares against

    def to_dict(self) -> dict:
        return {"settings": asdict(self.settings), "n_reference_images": self.n_reference,
                "attributes": [asdict(r) for r in self.results]}


@torch.no_grad()
def oracle_features(oracle: nn.Module, images: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    return torch.cat([oracle.embed(images[i:i + batch_size]) for i in range(0, len(images), batch_size)])


def median_seconds_per_counterfactual(
    images: torch.Tensor, classifier: nn.Module, attribute: str, targets: torch.Tensor,
    generator: FaceGenerator, config: CounterfactualConfig,
) -> float:
    """Median wall-clock of ``generate`` at batch size 1."""
    seconds = []
    for i in range(len(images)):
        started = time.perf_counter()
        generate(images[i:i + 1], classifier, attribute, targets[i:i + 1], config, generator, seeds=(config.seed + i,))
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def real_flip_rate(before: torch.Tensor, after: torch.Tensor, targets: torch.Tensor,
                    group: torch.Tensor | None = None) -> float | None:
    """FR over the tasks (of ``group``) whose decision was not yet the target before the edit;
    ``None`` (JSON null, not NaN) when there are none."""
    counted = before != targets
    if group is not None:
        counted &= group
    return round(flip_rate(after[counted], targets[counted]), 2) if bool(counted.any()) else None


def real_face_ceiling(real_decisions: torch.Tensor, real_labels: torch.Tensor, targets: torch.Tensor) -> float | None:
    """The FR (%) a judge would give counterfactuals indistinguishable from real faces of their
    target class: for each task its target class's rate of being decided as that class among real
    faces (``real_decisions`` against ``real_labels``), averaged over ``targets`` (the counted tasks).
    ``None`` when there are no tasks or no real face of a target class."""
    if len(targets) == 0:
        return None
    rates = {}
    for value in (0, 1):
        of_class = real_labels == value
        if bool((targets == value).any()):
            if not bool(of_class.any()):
                return None
            rates[value] = float((real_decisions[of_class] == value).float().mean())
    return round(100 * sum(rates[int(t)] for t in targets.tolist()) / len(targets), 2)


def evaluate_counterfactual_quality(
    images: np.ndarray,
    reference_images: np.ndarray,
    classifier: nn.Module,
    oracle: nn.Module,
    generator: FaceGenerator,
    attributes: tuple[str, ...] = DEFAULT_ATTRIBUTES,
    config: CounterfactualConfig = CounterfactualConfig(),
    batch_size: int = 32,
    timing_samples: int = 10,
    progress: Callable[[str, int, int], None] | None = None,
    judge: nn.Module | None = None,
    identity: FaceDescriptor | None = None,
    reference_labels: np.ndarray | None = None,
    strong_judge: nn.Module | None = None,
    keep: Callable[[str, torch.Tensor], None] | None = None,
    store: BatchStore | None = None,
    calibrated: Calibrated = (),
) -> QualityReport:
    """Counterfactuals of ``uint8 (N, 3, H, W)`` images flipping each attribute's decision.

    Optional instruments: ``identity`` (``recourse.instruments.identity.face_descriptor()``) adds
    FVA and FS; ``reference_labels`` (``uint8 (M, 40)``, of ``reference_images``) adds FD and KID
    against real faces with the target attribute beside the real-versus-real floor. Reference
    images identical to one of ``images`` are left out of that comparison. ``keep(attribute,
    counterfactuals)`` receives each attribute's counterfactuals, so that an instrument trained
    later can score the same pictures without making them again. ``store`` holds the batches
    already made (a resumed run makes only the missing ones; same seeds, same pictures).
    ``calibrated`` (``recourse.instruments.readings.calibrations()``) adds each calibrated
    judge's verdict on each attribute's counterfactuals.
    """
    classifier.eval()
    oracle.eval()
    originals = _judge_originals(images, reference_images, reference_labels, classifier, oracle, judge, strong_judge,
                                 identity)
    results = []
    for attribute in attributes:
        targets = 1 - originals.classifier[:, attribute_index(attribute)]
        counterfactuals = _make_counterfactuals(originals.x, classifier, attribute, targets, config, generator,
                                                batch_size, store, progress)
        if keep is not None:
            keep(attribute, counterfactuals)
        results.append(_attribute_quality(attribute, targets, counterfactuals, originals, classifier, oracle, judge,
                                          strong_judge, generator, config, timing_samples, identity, reference_labels,
                                          calibrated))
    return QualityReport(tuple(results), config, len(reference_images))


@dataclass(frozen=True)
class _Originals:
    """What the models decide, and the instruments measure, on the originals and the reference
    images, once before any attribute's edits."""

    x: torch.Tensor  # the originals in [0, 1]
    reference_features: torch.Tensor  # the oracle's features of the reference images
    # each model's decisions on the originals (None: no such model)
    classifier: torch.Tensor
    oracle: torch.Tensor
    judge: torch.Tensor | None
    strong_judge: torch.Tensor | None
    real_decisions: dict[str, torch.Tensor]  # each judge's decisions on the reference images (with their labels)
    descriptors: Descriptors | None  # the identity instrument's descriptors of the originals
    judged: OriginalScores  # the calibrated judges' scores of the originals
    real_pool: np.ndarray | None  # which reference images the realism comparison may use


def _judge_originals(images: np.ndarray, reference_images: np.ndarray, reference_labels: np.ndarray | None,
                     classifier: nn.Module, oracle: nn.Module, judge: nn.Module | None,
                     strong_judge: nn.Module | None, identity: FaceDescriptor | None) -> _Originals:
    """The originals as each model and instrument sees them (``reference_labels`` checked last)."""
    x = to_float_images(images)
    reference_features = oracle_features(oracle, to_float_images(reference_images))
    classifier_before = decisions(predict_logits(classifier, images))
    oracle_before = decisions(predict_logits(oracle, images))
    judge_before = strong_before = None
    if judge is not None:
        judge.eval()
        judge_before = decisions(predict_logits(judge, images))
    if strong_judge is not None:
        strong_before = decisions(predict_logits(strong_judge.eval(), images))
    judges = {"judge": judge, "strong_judge": strong_judge}
    real_decisions = ({name: decisions(predict_logits(model, reference_images)) for name, model in judges.items()
                       if model is not None} if reference_labels is not None else {})
    original_descriptors = identity(x) if identity is not None else None
    judged_originals = OriginalScores(x)
    return _Originals(x, reference_features, classifier_before, oracle_before, judge_before, strong_before,
                      real_decisions, original_descriptors, judged_originals,
                      _real_pool(images, reference_images, reference_labels))


def _real_pool(images: np.ndarray, reference_images: np.ndarray,
               reference_labels: np.ndarray | None) -> np.ndarray | None:
    """The reference images none of ``images`` is identical to (None without ``reference_labels``)."""
    if reference_labels is None:
        return None
    # An edit that changed little must not be compared with its own original.
    if np.shape(reference_labels) != (len(reference_images), 40):
        raise ValueError(f"reference_labels must be (M, 40) for the {len(reference_images)} reference images, "
                         f"got {np.shape(reference_labels)}")
    task_pixels = {image.tobytes() for image in np.asarray(images)}
    return np.array([image.tobytes() not in task_pixels for image in np.asarray(reference_images)])


def _make_counterfactuals(x: torch.Tensor, classifier: nn.Module, attribute: str, targets: torch.Tensor,
                          config: CounterfactualConfig, generator: FaceGenerator, batch_size: int,
                          store: BatchStore | None, progress: Callable[[str, int, int], None] | None) -> torch.Tensor:
    """``attribute``'s counterfactuals of ``x``, batch by batch; a batch ``store`` holds is not made again."""
    counterfactuals = []
    for start in range(0, len(x), batch_size):
        stop = min(start + batch_size, len(x))
        made = store.get(attribute, start, stop) if store is not None else None
        if made is None:
            made = generate(x[start:stop], classifier, attribute, targets[start:stop], config, generator,
                            seeds=tuple(range(config.seed + start, config.seed + stop))).images
            if store is not None:
                store.put(attribute, start, stop, made)
        counterfactuals.append(made)
        if progress is not None:
            progress(attribute, stop, len(x))
    return torch.cat(counterfactuals)


def _attribute_quality(attribute: str, targets: torch.Tensor, counterfactuals: torch.Tensor, originals: _Originals,
                       classifier: nn.Module, oracle: nn.Module, judge: nn.Module | None,
                       strong_judge: nn.Module | None, generator: FaceGenerator, config: CounterfactualConfig,
                       timing_samples: int, identity: FaceDescriptor | None, reference_labels: np.ndarray | None,
                       calibrated: Calibrated) -> AttributeQuality:
    """The models' and instruments' verdicts on ``attribute``'s counterfactuals, and their timing."""
    index = attribute_index(attribute)
    x, oracle_before, judge_before = originals.x, originals.oracle, originals.judge
    with torch.no_grad():
        classifier_after = decisions(classifier(counterfactuals))
        oracle_after = decisions(oracle(counterfactuals))
        judge_after = decisions(judge(counterfactuals)) if judge is not None else None
    judged = judge_before[:, index] != targets if judge is not None else torch.zeros(0)
    counterfactual_features = oracle_features(oracle, counterfactuals)
    extras = _instrument_fields(attribute, index, targets, counterfactuals, counterfactual_features, originals,
                                strong_judge, identity, reference_labels, calibrated)
    return AttributeQuality(
        attribute=attribute, n=len(x),
        flip_rate=round(flip_rate(classifier_after[:, index], targets), 2),
        oracle_flip_rate=real_flip_rate(oracle_before[:, index], oracle_after[:, index], targets),
        judge_flip_rate=real_flip_rate(judge_before[:, index], judge_after[:, index], targets)
        if judge is not None else None,
        judge_agreed=int(judged.sum()),
        mnac=round(mean_number_of_attributes_changed(oracle_before, oracle_after, index), 3),
        proximity=round(float(recourse_cost(x, counterfactuals).mean()), 5),
        oracle_fd=round(frechet_distance(counterfactual_features, originals.reference_features), 3),
        median_seconds=round(median_seconds_per_counterfactual(
            x[:timing_samples], classifier, attribute, targets[:timing_samples], generator, config), 3),
        to_target_1=int(targets.sum()),
        oracle_flip_rate_to_1=real_flip_rate(oracle_before[:, index], oracle_after[:, index], targets, targets == 1),
        oracle_flip_rate_to_0=real_flip_rate(oracle_before[:, index], oracle_after[:, index], targets, targets == 0),
        **extras,
    )


def _instrument_fields(attribute: str, index: int, targets: torch.Tensor, counterfactuals: torch.Tensor,
                       counterfactual_features: torch.Tensor, originals: _Originals, strong_judge: nn.Module | None,
                       identity: FaceDescriptor | None, reference_labels: np.ndarray | None,
                       calibrated: Calibrated) -> dict:
    """The optional instruments' fields of an :class:`AttributeQuality` (those not asked for are left out)."""
    extras = {}
    if strong_judge is not None:
        with torch.no_grad():
            strong_after = decisions(strong_judge(counterfactuals))
        strong_before = originals.strong_judge
        extras.update(strong_judge_flip_rate=real_flip_rate(strong_before[:, index], strong_after[:, index], targets),
                      strong_judge_agreed=int((strong_before[:, index] != targets).sum()))
    for name, real in originals.real_decisions.items():
        before = originals.judge if name == "judge" else originals.strong_judge
        extras[f"{name}_ceiling"] = real_face_ceiling(
            real[:, index], torch.as_tensor(np.asarray(reference_labels)[:, index]).long(),
            targets[before[:, index] != targets])
    if calibrated:
        extras["judge_verdicts"] = tuple(set_verdicts(attribute, originals.judged, counterfactuals, targets,
                                                      calibrated))
    if identity is not None:
        kept = identity_result(originals.descriptors, identity(counterfactuals))
        extras.update(fva=kept.fva, fs=kept.fs)
    if reference_labels is not None:
        try:
            realism = realism_with_floor(counterfactual_features, targets.numpy(),
                                         originals.reference_features[torch.as_tensor(originals.real_pool)],
                                         np.asarray(reference_labels)[originals.real_pool, index])
            extras.update(realism_n=realism.n, realism_fd=realism.fd, realism_kid=realism.kid,
                          floor_fd=realism.floor_fd, floor_kid=realism.floor_kid)
        except ValueError:
            pass  # too few real faces with the target attribute to compare: the fields stay None
    return extras
