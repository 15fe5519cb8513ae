"""What an audit takes and gives: its settings (:class:`AuditSettings`), the predictions it
shows first (:class:`Predictions`) and the whole result (:class:`AuditResult`) with its JSON
values and files. Run by :mod:`recourse.audit.pipeline`, drawn by :mod:`recourse.render`.
:func:`product_settings` is the one place that says how the product audits.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from recourse.attribution import AttributionComparison, AttributionConfig
from recourse.audit.edit_path import RecoursePath
from recourse.audit.image_noise_floor import BOUNDARY_LOGIT, NOISE_FLOOR_COST, compared, on_boundary
from recourse.audit.instruments import IdentityView, JudgeView, gated_ticks
from recourse.audit.stops import AuditStops, stops_for
from recourse.audit.verdict import Checks, identity_verdict, verdict
from recourse.data import ATTRIBUTES, attribute_index
from recourse.generation import CounterfactualConfig
from recourse.instruments.readings import JudgeReading
from recourse.metrics import ImageRecourse


def minimal_recourse() -> CounterfactualConfig:
    """The minimal recourse (bare ``AuditSettings()``'s): stop as soon as the guiding model's
    decision flips (margin 0), the smallest change of ``docs/metrics.md``; a margin past the
    boundary hides disagreements."""
    return CounterfactualConfig(margin=0.0)


@dataclass(frozen=True)
class AuditSettings:
    """Everything that changes an audit's numbers; saved with every result. Bare, the minimal
    recourse without stops; the product's audit is :func:`product_settings`."""

    counterfactual: CounterfactualConfig = field(default_factory=minimal_recourse)
    attribution: AttributionConfig = field(default_factory=AttributionConfig)
    # Where the picture and the numbers are read on each model's edit (recourse.audit.stops); None:
    # both at the counterfactual's own margin, the stop of its edit.
    stops: AuditStops | None = None

    @property
    def edit_config(self) -> CounterfactualConfig:
        """The settings of each model's whole edit: aimed past every stop."""
        if self.stops is None:
            return self.counterfactual
        return replace(self.counterfactual, margin=max(self.counterfactual.margin, self.stops.edit))

    def path_margins(self) -> dict[str, float]:
        """The stops drawn on each recourse path, by name."""
        return self.stops.margins() if self.stops is not None else {"stop": self.counterfactual.margin}

    def to_dict(self) -> dict:
        # lists where the config holds tuples (attribute names): the dict a JSON file gives back
        counterfactual = {key: list(value) if isinstance(value, tuple) else value
                          for key, value in asdict(self.counterfactual).items()}
        return {"counterfactual": counterfactual, "attribution": asdict(self.attribution),
                "stops": None if self.stops is None else self.stops.to_dict()}


def product_settings(picture_margin: float | None = None, numbers_at: str = "benchmark",
                     counterfactual: CounterfactualConfig | None = None) -> AuditSettings:
    """The product's audit: what the app, the command line, the Python API (``recourse.Auditor``)
    and ``audit_image`` without settings run. Pictures at the visible stop (or at
    ``picture_margin``), numbers at the benchmark's validated margin (or the boundary), the
    generator's own settings (or ``counterfactual``)."""
    return AuditSettings(counterfactual=counterfactual or CounterfactualConfig(),
                         stops=stops_for(picture_margin, numbers_at))


@dataclass(frozen=True)
class Predictions:
    """Step 2, shown before the slower steps finish. Tensors: ``aligned (3, H, W)`` in [0, 1],
    probabilities ``(40,)``. Only ``attributes`` may be read: an auditor's own model may predict
    a subset of CelebA's 40, and its other places hold p = 0.5 that is no prediction."""

    aligned: torch.Tensor
    alignment: str  # what the alignment did, for the user
    display: torch.Tensor | None  # the same framing at display size (3, D, D) when the photo is larger
    variant: str
    attribute: str
    target: int
    teacher_probabilities: torch.Tensor
    student_probabilities: torch.Tensor
    diverging: tuple[str, ...]  # attributes whose decisions differ (among ``attributes``)
    attributes: tuple[str, ...] = ATTRIBUTES  # what both models predict, in CelebA's order

    def to_dict(self) -> dict:
        return {
            "variant": self.variant, "attribute": self.attribute, "target": self.target, "alignment": self.alignment,
            "predicted_attributes": list(self.attributes),
            "teacher_probabilities": _named(self.teacher_probabilities, self.attributes),
            "student_probabilities": _named(self.student_probabilities, self.attributes),
            "diverging_attributes": list(self.diverging),
        }


# each instrument's exported ticks on x'_f and x'_g, which an edit's failed artifact check strikes
SEES = ("sees_teacher_change", "sees_student_change")
KEPT = ("teacher_kept", "student_kept")
SEEN = ("on_teacher_counterfactual_seen", "on_student_counterfactual_seen")


@dataclass(frozen=True)
class AuditResult:
    """A whole audit. Images are ``(3, H, W)`` in [0, 1]; difference maps are ``x' − x``."""

    predictions: Predictions
    teacher_counterfactual: torch.Tensor  # x'_f
    student_counterfactual: torch.Tensor  # x'_g
    teacher_difference: torch.Tensor
    student_difference: torch.Tensor
    probabilities_after: dict[str, float]  # p_a of each model on each counterfactual
    student_logits: dict[str, float]  # the student's logit of a on x, x'_f and x'_g
    recourse: ImageRecourse  # V_f(x'_f), V_g(x'_f), V_g(x'_g), costs, CRG_i, DirSim_i
    attributions: tuple[AttributionComparison, ...]
    judge: JudgeView | None  # None where no judge applies (not committed, or another input size)
    settings: AuditSettings
    seed: int
    student_model: str  # "integer" or "twin": which form of the student made the decisions
    versions: dict[str, str]
    seconds: dict[str, float]
    strong_judge: JudgeView | None = None  # the stronger (radius-3) judge; why it is absent: ``missing``
    identity: IdentityView | None = None
    # instrument -> why it is not in this audit ("not trained", ...), so that a card says so
    missing: dict[str, str] = field(default_factory=dict)
    # the calibrated judges' readings of x, x'_f and x'_g, independent ones first
    judge_readings: tuple[JudgeReading, ...] = ()
    # each model's whole edit x̃ (3, H, W) and its path: both models' logits along it, the stops
    teacher_edit: torch.Tensor | None = None
    student_edit: torch.Tensor | None = None
    paths: tuple[RecoursePath, ...] = ()
    # each model's ArtifactCheck of the pictures shown (x'_f's, x'_g's): a failed one strikes the
    # judges' and dlib's ticks on that edit (None: not checked, an audit made before the check)
    artifacts: Checks = (None, None)
    edit_kind: str = ""  # recourse.generation.methods.edit_kind: "region-space", "denoised", a walk's name

    @property
    def face_logit(self) -> float:
        """The full-precision logit of the audited attribute on the face."""
        p = self.predictions
        return float(torch.logit(p.teacher_probabilities[attribute_index(p.attribute)].double()))

    @property
    def compared(self) -> bool:
        """Whether CRG_i and DirSim_i are above the noise floor (see :func:`compared`)."""
        return compared(self.recourse, self.face_logit)

    @property
    def verdict(self) -> str:
        return (verdict(self.recourse, self.judge, self.predictions.attribute, self.face_logit, self.artifacts)
                + identity_verdict(self.identity, self.recourse, self.artifacts))

    def to_dict(self) -> dict:
        """Every value of the audit (the pictures are added by :func:`recourse.render.audit_record`)."""
        r = self.recourse
        return {
            **self.predictions.to_dict(),
            "verdict": self.verdict,
            "recourse": {
                "teacher_valid": r.teacher_valid, "student_accepts_teacher": r.student_accepts_teacher,
                "student_valid": r.student_valid, "teacher_cost": round(r.teacher_cost, 6),
                "student_cost": round(r.student_cost, 6), "crg": _round(r.crg), "dirsim": _round(r.dirsim),
                "reason": r.reason,
                "noise_floor": {"cost": NOISE_FLOOR_COST, "boundary_logit": BOUNDARY_LOGIT,
                                "face_logit": round(self.face_logit, 6),
                                "on_boundary": on_boundary(r, self.face_logit), "compared": self.compared},
            },
            "probabilities_after": {k: round(v, 6) for k, v in self.probabilities_after.items()},
            "student_logits": {k: round(v, 6) for k, v in self.student_logits.items()},
            "attributions": [a.to_dict() for a in self.attributions],
            # the instruments' ticks as they count; their readings (p, distances) as read
            "judge": gated_ticks(None if self.judge is None else self.judge.to_dict(), SEES, self.artifacts),
            "strong_judge": gated_ticks(None if self.strong_judge is None else self.strong_judge.to_dict(), SEES,
                                        self.artifacts),
            "identity": gated_ticks(None if self.identity is None else self.identity.to_dict(), KEPT,
                                    self.artifacts),
            "judge_readings": [gated_ticks(reading.to_dict(), SEEN, self.artifacts) for reading in self.judge_readings],
            "artifacts": {model: None if check is None else check.to_dict()
                          for model, check in zip(("teacher", "student"), self.artifacts)},
            "edit_kind": self.edit_kind,
            "missing": dict(self.missing),
            "paths": [path.to_dict() for path in self.paths],
            "student_model": self.student_model,
            "settings": self.settings.to_dict(), "seed": self.seed, "versions": self.versions,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }

    def save_json(self, path: str | os.PathLike, source: str = "") -> Path:
        """Write every value and picture as the app's JSON export and ``recourse audit --json``
        do (:func:`recourse.render.audit_html.audit_record`); ``source``, where given, is kept
        as ``"image"``: the photo's name or where the face came from."""
        from recourse.render.audit_html import audit_record

        record = {"image": source, **audit_record(self)} if source else audit_record(self)
        return _written(path, json.dumps(record, indent=2, allow_nan=False) + "\n")

    def save_html(self, path: str | os.PathLike, source: str = "") -> Path:
        """Write the one-page report the app offers for download, ``source`` said in it."""
        from recourse.render.audit_html import report_html

        return _written(path, report_html(self, source))


def _written(path: str | os.PathLike, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _named(probabilities: torch.Tensor, attributes: tuple[str, ...] = ATTRIBUTES) -> dict[str, float]:
    """``attributes``' probabilities by name; the others (not predicted) are left out, not numbers."""
    return {name: round(float(p), 6) for name, p in zip(ATTRIBUTES, probabilities) if name in attributes}
