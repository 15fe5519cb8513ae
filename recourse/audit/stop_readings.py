"""One stop of the full-precision classifier's edits, read on a split's faces: what the visible
stop is chosen from (:mod:`recourse.audit.visible_stop`) and what the quality page reports at it
(``scripts/measurements/visible_stop.py``, ``quality_visible.py``). The split's faces come with
everything read from them before any edit, so every stop of an edit is read the same way.

A stop is the first point of an edit's straight path where the full-precision classifier is past
its margin (``recourse.audit.paired.stop_on_paths``), as the app draws it; at a stop: the flip rate,
dlib's FVA, the oracle's MNAC and the independent judges' verdicts
(``recourse.instruments.set_verdicts``).

A stop is read in two steps: face by face (:func:`stop_faces`: logits, the oracle's decisions
and features, dlib's descriptors, the judges' scores; no picture, so a long run can keep them
where the edits, pictures of real faces, may not be kept), then pooled (:func:`reading_from_faces`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from recourse.audit.paired import stop_on_paths
from recourse.checkpoints import load_classifier
from recourse.data import attribute_index, load_split, to_float_images
from recourse.evaluation import predict_logits
from recourse.generation.quality import oracle_features
from recourse.generation.regions import face_landmarks
from recourse.generation.spaces.artifacts import check_attribute_edit
from recourse.instruments.identity import Descriptors, face_descriptor, identity_result
from recourse.instruments.readings import calibrations
from recourse.instruments.set_verdicts import OriginalScores, after_scores, verdicts_from_scores
from recourse.locations import oracle_dir, teacher_dir
from recourse.metrics import decisions, flip_rate, mean_number_of_attributes_changed


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
class StopFaces:
    """One stop of one attribute's edits, read face by face: everything a reading pools."""

    logits: torch.Tensor  # (n,) the classifier's logit of the attribute at the stop
    oracle_after: torch.Tensor  # (n, 40) the oracle's decisions at the stop
    described: Descriptors  # dlib's descriptors at the stop
    judges: dict[str, np.ndarray]  # each independent judge's score of the attribute, (n,)
    features: torch.Tensor | None = None  # (n, D) the oracle's embedding, for FD, where asked
    artifact_passed: np.ndarray | None = None  # (n,) bool: the edit at the stop passed the artifact check

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """Flat named arrays (for ``safetensors.numpy``), each name starting ``prefix/``."""
        arrays = {f"{prefix}/logits": self.logits.numpy(), f"{prefix}/oracle_after": self.oracle_after.numpy(),
                  f"{prefix}/descriptors": np.asarray(self.described.vectors),
                  f"{prefix}/detected": np.asarray(self.described.detected, np.uint8),
                  **{f"{prefix}/judge/{name}": np.asarray(scores, np.float64) for name, scores in self.judges.items()}}
        if self.features is not None:
            arrays[f"{prefix}/features"] = self.features.numpy()
        if self.artifact_passed is not None:
            arrays[f"{prefix}/artifact_passed"] = np.asarray(self.artifact_passed, np.uint8)
        return {name: np.ascontiguousarray(array) for name, array in arrays.items()}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str) -> StopFaces:
        judged = f"{prefix}/judge/"
        features = arrays.get(f"{prefix}/features")
        passed = arrays.get(f"{prefix}/artifact_passed")
        return cls(logits=torch.from_numpy(arrays[f"{prefix}/logits"]),
                   oracle_after=torch.from_numpy(arrays[f"{prefix}/oracle_after"]),
                   described=Descriptors(arrays[f"{prefix}/descriptors"], arrays[f"{prefix}/detected"].astype(bool)),
                   judges={name[len(judged):]: array for name, array in arrays.items() if name.startswith(judged)},
                   features=None if features is None else torch.from_numpy(features),
                   artifact_passed=None if passed is None else passed.astype(bool))

    @classmethod
    def joined(cls, parts: list[StopFaces]) -> StopFaces:
        """The parts' faces in order, as one."""
        if any(part.judges.keys() != parts[0].judges.keys() for part in parts):
            raise ValueError("the parts were read by different judges")
        with_features = [part.features is not None for part in parts]
        if any(with_features) and not all(with_features):
            raise ValueError("some parts have the oracle's features and some do not")
        return cls(logits=torch.cat([part.logits for part in parts]),
                   oracle_after=torch.cat([part.oracle_after for part in parts]),
                   described=Descriptors(np.concatenate([part.described.vectors for part in parts]),
                                         np.concatenate([part.described.detected for part in parts])),
                   judges={name: np.concatenate([part.judges[name] for part in parts]) for name in parts[0].judges},
                   features=torch.cat([part.features for part in parts]) if all(with_features) else None,
                   artifact_passed=(np.concatenate([part.artifact_passed for part in parts])
                                    if all(part.artifact_passed is not None for part in parts) else None))


@dataclass
class StopReading:
    """One stop of one attribute's edits, read on every face."""

    at_stop: torch.Tensor | None  # the pictures at the stop (None where pooled from kept faces)
    reached_rate: float  # % of faces whose edit reaches the stop's margin (elsewhere the stop is the whole edit)
    flip_rate: float
    fva: float
    mnac: float
    verdicts: list[dict]  # the independent judges' only
    artifact_pass_rate: float | None = None  # % of the edits at the stop that passed the artifact check


def stop_faces(originals: Originals, attribute: str, edits: torch.Tensor, margin: float,
               rows: slice = slice(None), features: bool = False, spaces=None) -> tuple[torch.Tensor, StopFaces]:
    """The first point of each edit's path past ``margin`` (``edits``: the whole edits of the
    faces ``originals.x[rows]``), and what is read there face by face; with ``spaces`` (the
    generator's edit spaces, or ``True`` for the colour readings alone) each edit's artifact check."""
    index = attribute_index(attribute)
    x, targets = originals.x[rows], originals.targets[rows, index]
    at_stop = stop_on_paths(x, edits, originals.classifier, attribute, targets, margin)
    with torch.no_grad():
        logits = originals.classifier(at_stop)[:, index]
        oracle_after = decisions(originals.oracle(at_stop))
    passed = None
    if spaces is not None:
        points, _ = face_landmarks(x)
        passed = np.array([check_attribute_edit(x[i], at_stop[i], attribute, points[i],
                                                None if spaces is True else spaces).passed for i in range(len(x))])
    return at_stop, StopFaces(logits=logits, oracle_after=oracle_after, described=originals.describe(at_stop),
                              judges=after_scores(attribute, at_stop, originals.calibrated, independent_only=True),
                              features=oracle_features(originals.oracle, at_stop) if features else None,
                              artifact_passed=passed)


def reading_from_faces(originals: Originals, attribute: str, faces: StopFaces, margin: float,
                       at_stop: torch.Tensor | None = None) -> StopReading:
    """The stop's reading pooled over every face of ``originals`` (``faces`` in their order)."""
    index = attribute_index(attribute)
    targets = originals.targets[:, index]
    if len(faces.logits) != len(targets):
        raise ValueError(f"{len(faces.logits)} faces read for {len(targets)} originals")
    verdicts = [v for v in verdicts_from_scores(attribute, originals.judged, faces.judges, targets, originals.calibrated)
                if v["independent"]]
    toward_target = torch.where(targets == 1, faces.logits, -faces.logits)
    reached = float((toward_target >= margin - 1e-4).float().mean()) * 100  # the bisection stops just past it
    return StopReading(at_stop=at_stop, reached_rate=round(reached, 2),
                       flip_rate=round(flip_rate(decisions(faces.logits), targets), 2),
                       fva=identity_result(originals.descriptors, faces.described).fva,
                       mnac=round(mean_number_of_attributes_changed(originals.oracle_before, faces.oracle_after, index), 3),
                       verdicts=verdicts,
                       artifact_pass_rate=None if faces.artifact_passed is None
                       else round(float(faces.artifact_passed.mean()) * 100, 2))


def read_stop(originals: Originals, attribute: str, edits: torch.Tensor, margin: float) -> StopReading:
    """The first point of each edit's path past ``margin``, and what is read there."""
    at_stop, faces = stop_faces(originals, attribute, edits, margin)
    return reading_from_faces(originals, attribute, faces, margin, at_stop)
