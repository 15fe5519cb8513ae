"""What the two stop-reading scripts share (``visible_stop``, ``quality_visible``): the split's
faces with everything read from them before any edit, and one stop of an edit read the same way.

A stop is the first point of an edit's straight path where the full-precision classifier is past
its margin (``recourse.paired.stop_on_paths``), as the app draws it; at a stop: the flip rate,
dlib's FVA, the oracle's MNAC and the independent judges' verdicts
(``recourse.instruments.set_verdicts``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from recourse.checkpoints import load_classifier
from recourse.data import attribute_index, load_split, to_float_images
from recourse.evaluation import predict_logits
from recourse.instruments.identity import face_descriptor, identity_result
from recourse.instruments.readings import calibrations
from recourse.instruments.set_verdicts import OriginalScores, set_verdicts
from recourse.metrics import decisions, flip_rate, mean_number_of_attributes_changed
from recourse.paired import stop_on_paths
from recourse.paths import oracle_dir, teacher_dir


@dataclass
class Originals:
    """The first ``n`` faces of a split and what is read from them before any edit."""

    classifier: torch.nn.Module
    oracle: torch.nn.Module
    faces: torch.Tensor  # uint8, as the split holds them (the judges read these)
    x: torch.Tensor  # float in [0, 1]
    rest: object  # the split, for what a script needs beyond the first n (the FD pool)
    targets: torch.Tensor  # (n, 40): the class each face's edit aims at, per attribute
    oracle_before: torch.Tensor
    judged: OriginalScores
    describe: object  # dlib's face descriptor
    descriptors: torch.Tensor
    calibrated: dict

    @classmethod
    def load(cls, data: str, split_name: str, n: int) -> Originals:
        classifier, oracle = load_classifier(teacher_dir()).eval(), load_classifier(oracle_dir()).eval()
        split = load_split(data, split_name, classifier.config.resolution, cache_dir=".cache")
        faces = split.images[:n]
        x = to_float_images(faces)
        describe = face_descriptor()
        return cls(classifier=classifier, oracle=oracle, faces=faces, x=x, rest=split,
                   targets=1 - decisions(predict_logits(classifier, faces)),
                   oracle_before=decisions(predict_logits(oracle, faces)), judged=OriginalScores(faces),
                   describe=describe, descriptors=describe(x), calibrated=calibrations())


@dataclass
class StopReading:
    """One stop of one attribute's edits, read on every face."""

    at_stop: torch.Tensor
    reached_rate: float  # % of faces whose edit reaches the stop's margin (elsewhere the stop is the whole edit)
    flip_rate: float
    fva: float
    mnac: float
    verdicts: list[dict]  # the independent judges' only


def read_stop(originals: Originals, attribute: str, edits: torch.Tensor, margin: float) -> StopReading:
    """The first point of each edit's path past ``margin``, and what is read there."""
    index = attribute_index(attribute)
    targets = originals.targets[:, index]
    at_stop = stop_on_paths(originals.x, edits, originals.classifier, attribute, targets, margin)
    with torch.no_grad():
        logits = originals.classifier(at_stop)[:, index]
        after = decisions(logits)
        oracle_after = decisions(originals.oracle(at_stop))
    verdicts = [v for v in set_verdicts(attribute, originals.judged, at_stop, targets, originals.calibrated)
                if v["independent"]]
    toward_target = torch.where(targets == 1, logits, -logits)
    reached = float((toward_target >= margin - 1e-4).float().mean()) * 100  # the bisection stops just past it
    return StopReading(at_stop=at_stop, reached_rate=round(reached, 2), flip_rate=round(flip_rate(after, targets), 2),
                       fva=identity_result(originals.descriptors, originals.describe(at_stop)).fva,
                       mnac=round(mean_number_of_attributes_changed(originals.oracle_before, oracle_after, index), 3),
                       verdicts=verdicts)
