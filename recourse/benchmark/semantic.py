"""Semantic validity of each model's own recourse: is the edit that flips a model's
decision still a change a person sees?

VD, CRG and DirSim measure how far a compressed model's recourse is from the teacher's. They do
not say whether either edit shows the attribute. Here, each attribute with a judge trained on
other faces (:data:`JUDGED`, one judge per attribute) reads every model's own counterfactual:

- ``score``: the judge's score of ``x'`` (higher: more of the attribute; NaN where it finds no face);
- ``seen``: ``x'`` on the target's side of the judge's threshold, calibrated on real faces
  (:func:`recourse.instruments.calibration.seen`); False where no face is found;
- ``shift``: the score's change from ``x`` to ``x'`` toward the target over the gap between the
  real classes' mean scores (:func:`recourse.instruments.calibration.shifts`); NaN where either
  face is missing.

A task's **semantic validity** under a model is 1 where the model's own recourse is valid for
that model *and* seen, 0 otherwise (a face the judge does not find counts 0). A row's is its
percentage over the judged tasks; against the teacher's on the same tasks it is compared as
every family is under :data:`~recourse.benchmark.settings.ANALYSIS` (:func:`compare_semantic`):
the family's seeds' mean against the teacher, the task bootstrap's variance (at least
Newcombe's, the share's floor) plus the seeds' spread over their count, Welch–Satterthwaite's
degrees of freedom.

The registered primary family (``assets/results/benchmark-primary.json``, written by
``scripts/measurements/register_primary.py`` before the run it governs) names the claims read by
Holm over exactly themselves (:class:`RegisteredFamily`, ``recourse.benchmark.claims``).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

import recourse.benchmark.statistics as stats
from recourse.benchmark.bootstrap import PairedTest, finite_mean, task_weights_drawn
from recourse.benchmark.comparison import family_test
from recourse.benchmark.terms import mean_of, sd_of

if TYPE_CHECKING:
    from recourse.instruments.calibration import Calibration

    Calibrated = tuple[tuple[Calibration, bool], ...]

# The instruments are imported where they are used: recourse.instruments.calibration imports
# recourse.benchmark.statistics, and recourse.audit.instruments imports the instruments, so a
# module-level import here would close a cycle through recourse.benchmark's __init__ (rows).
JUDGED_RESOLUTION = 64  # the faces the judges were calibrated on (recourse.audit.instruments'; a test checks)


def calibrations() -> Calibrated:
    """The judges' calibrations (``recourse.instruments.readings.calibrations``), read when asked."""
    from recourse.instruments.readings import calibrations as read

    return read()


def judge(name: str):
    """The judge ``name`` (``recourse.instruments.independent.judge``), loaded when asked."""
    from recourse.instruments.independent import judge as load

    return load(name)


# the attributes with an independent judge, each read by one judge (the primary one); the others
# (mouth geometry on Smiling) are secondary
JUDGED = {"Smiling": "fer-happy (FER-2013)", "Young": "age-gender (dlib-models)",
          "Male": "age-gender (dlib-models)", "Mouth_Slightly_Open": "mouth-geometry (dlib 68 landmarks)"}
METRIC = "semantic_validity"
REFERENCE = "fp32"  # the teacher's row (recourse.benchmark.settings.FP32), what every row is compared with
EQUIVALENCE_MARGIN = 10.0  # points of semantic validity: the registered TOST margin
CLAIM_KINDS = ("difference", "equivalence")


# --- a judge's readings of one batch ----------------------------------------------------------


@dataclass(frozen=True)
class JudgeReadings:
    """One judge's readings of a batch of counterfactuals of one attribute, ``(N,)`` each."""

    before: np.ndarray  # float64: the judge's score of each face x (NaN: no face found)
    score: np.ndarray  # float64: its score of each counterfactual x'
    seen: np.ndarray  # bool: x' on the target's side of the threshold; False where no face was found
    shift: np.ndarray  # float64: x → x' toward the target over the real classes' gap; NaN where a face is missing


def judge_calibration(attribute: str, calibrated: Calibrated | None = None) -> Calibration | None:
    """The calibration of ``attribute``'s judge (:data:`JUDGED`) among the usable ones trained on
    other faces; None where the attribute has no judge or its judge has no usable calibration."""
    name = JUDGED.get(attribute)
    for calibration, independent in (calibrations() if calibrated is None else calibrated):
        if independent and calibration.judge == name and calibration.attribute == attribute:
            return calibration
    return None


def is_judged(attribute: str, resolution: int, calibrated: Calibrated | None = None) -> bool:
    """Whether a judge reads ``attribute`` on faces of ``resolution`` px: it has a calibrated judge
    and the faces are of the framing the judges were calibrated on (64 px, as the audit's)."""
    return resolution == JUDGED_RESOLUTION and judge_calibration(attribute, calibrated) is not None


def readings_of_scores(before: np.ndarray, after: np.ndarray, targets: np.ndarray,
                       calibration: Calibration) -> JudgeReadings:
    """The readings of counterfactuals scored ``after`` of faces scored ``before``, each toward its
    own target (0 or 1), at ``calibration``'s threshold and class gap."""
    from recourse.instruments.calibration import seen, shifts

    before, after = np.asarray(before, np.float64), np.asarray(after, np.float64)
    targets = np.asarray(targets).astype(int)
    found = np.isfinite(after)
    said, moved = np.zeros(len(after), bool), np.full(len(after), np.nan)
    for target in (0, 1):
        chosen = targets == target
        # NaN >= threshold is False, which target 0 would read as seen: a missing face is never seen
        said[chosen] = seen(after[chosen], calibration.threshold, target) & found[chosen]
        moved[chosen] = shifts(before[chosen], after[chosen], target, calibration)
    return JudgeReadings(before, after, said, moved)


def judge_counterfactuals(faces: torch.Tensor, counterfactuals: torch.Tensor, attribute: str,
                          targets: torch.Tensor, before: np.ndarray | torch.Tensor | None = None,
                          calibrated: Calibrated | None = None) -> JudgeReadings | None:
    """The readings of ``attribute``'s judge of ``counterfactuals`` (``(N, 3, H, W)`` in [0, 1]) of
    ``faces`` toward ``targets``; ``before``: the judge's scores of ``faces`` where already read
    (the teacher's part reads them once for every row). None where the attribute has no judge, or
    the faces are not of the framing the judges were calibrated on (64 px, as the audit's): nothing
    is scored."""
    if not is_judged(attribute, faces.shape[-1], calibrated):
        return None
    from recourse.instruments.set_verdicts import batched_scores

    calibration = judge_calibration(attribute, calibrated)
    instrument = judge(calibration.judge)
    if before is None:
        before = batched_scores(instrument, faces)[attribute]
    after = batched_scores(instrument, counterfactuals)[attribute]
    return readings_of_scores(np.asarray(before, np.float64), after, np.asarray(torch.as_tensor(targets)), calibration)


def semantic_valid(valid: torch.Tensor, seen_by_judge: torch.Tensor) -> torch.Tensor:
    """Per task: the model's own recourse is valid for it and its judge sees it."""
    return valid.bool() & seen_by_judge.bool()


# --- per-task columns ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SemanticColumns:
    """One row's judge readings per task, beside :class:`recourse.audit.paired.RecourseColumns` (whose
    ``teacher_valid`` and ``student_valid`` say whether each own recourse is valid); every field
    ``(N,)`` over all the run's tasks, those without a judge marked by ``judged``."""

    judged: torch.Tensor  # bool: the task's attribute has a judge
    teacher_seen: torch.Tensor  # bool, x'_f seen (False where not judged)
    student_seen: torch.Tensor  # bool, x'_g seen
    teacher_score: torch.Tensor  # float64, NaN where not judged or no face
    student_score: torch.Tensor
    teacher_shift: torch.Tensor
    student_shift: torch.Tensor
    # float64: 1 where the judge already sees the face x itself on the target's side, 0 where it
    # does not, NaN where the task is not judged or the judge finds no face in x; None: a run whose
    # records did not keep it (recourse.benchmark.newly_seen reads it)
    face_seen: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.judged)

    def select(self, index: torch.Tensor) -> "SemanticColumns":
        return SemanticColumns(**{name: None if getattr(self, name) is None else getattr(self, name)[index]
                                  for name in self.__dataclass_fields__})


OPTIONAL_SEMANTIC_FIELDS = ("face_seen",)  # a columns file written before it lacks it
SEMANTIC_FIELDS = tuple(name for name in SemanticColumns.__dataclass_fields__ if name not in OPTIONAL_SEMANTIC_FIELDS)


def _optional(value) -> float:
    return float("nan") if value is None else float(value)


def semantic_columns(records: list[dict], method: str) -> SemanticColumns:
    """The judge readings of row ``method`` from the task records (sorted by task). A task is
    judged where both its teacher and its student record carry a reading (``teacher_judge_seen``,
    ``judge_seen`` not None); records without the readings have none."""
    student = [r["students"][method] for r in records]
    judged = [r.get("teacher_judge_seen") is not None and s.get("judge_seen") is not None
              for r, s in zip(records, student)]
    return SemanticColumns(
        judged=torch.tensor(judged, dtype=torch.bool),
        teacher_seen=torch.tensor([bool(r.get("teacher_judge_seen")) and j for r, j in zip(records, judged)],
                                  dtype=torch.bool),
        student_seen=torch.tensor([bool(s.get("judge_seen")) and j for s, j in zip(student, judged)],
                                  dtype=torch.bool),
        teacher_score=torch.tensor([_optional(r.get("teacher_judge_score")) for r in records], dtype=torch.float64),
        student_score=torch.tensor([_optional(s.get("judge_score")) for s in student], dtype=torch.float64),
        teacher_shift=torch.tensor([_optional(r.get("teacher_judge_shift")) for r in records], dtype=torch.float64),
        student_shift=torch.tensor([_optional(s.get("judge_shift")) for s in student], dtype=torch.float64),
        face_seen=torch.tensor([_optional(r.get("teacher_judge_face_seen")) for r in records], dtype=torch.float64)
        if records and all("teacher_judge_face_seen" in r for r in records) else None)


def teacher_semantic(records: list[dict]) -> tuple[float | None, int]:
    """The teacher's semantic validity (%) over the tasks its recourse was judged on, and their
    count; None and 0 where none was (records without the readings, no judged attribute)."""
    judged = [r for r in records if r.get("teacher_judge_seen") is not None]
    if not judged:
        return None, 0
    return 100.0 * sum(bool(r["teacher_valid"]) and bool(r["teacher_judge_seen"]) for r in judged) / len(judged), \
        len(judged)


def semantic_sides(valid: tuple[torch.Tensor, torch.Tensor], semantic: SemanticColumns) -> tuple[torch.Tensor, torch.Tensor]:
    """``(the row's, the teacher's)`` per-task semantic validity on the judged tasks, from
    ``valid`` = ``(student_valid, teacher_valid)`` of the row's recourse columns."""
    student_valid, teacher_valid = valid
    judged = semantic.judged
    return (semantic_valid(student_valid, semantic.student_seen)[judged],
            semantic_valid(teacher_valid, semantic.teacher_seen)[judged])


# --- a family against the teacher ---------------------------------------------------------------


@dataclass(frozen=True)
class SemanticComparison:
    """A family's semantic validity against another's (in points), on the tasks both judged."""

    test: PairedTest
    score_interval: list[float]  # Newcombe's paired interval of the difference, the 2×2 cells over every seed pair
    degenerate: bool  # 0 against 0 on every task of every seed: no difference to test

    def record(self, margin: float) -> dict:
        """What a row or family records of it: the difference, the interval the test inverts, p,
        standard error, df, Newcombe's interval and TOST at ``margin``."""
        return {"difference": self.test.difference, "interval": self.test.interval(), "p": self.test.p,
                "se": self.test.standard_error, "df": self.test.df, "score_interval": self.score_interval,
                **({"degenerate": True} if self.degenerate else {}),
                "equivalence": {**self.test.tost(margin).to_dict(), "df": self.test.df}}


def compare_semantic(left: list[torch.Tensor], right: list[torch.Tensor], samples: int,
                     task_weights: str = "multinomial", seed: int = 1) -> SemanticComparison:
    """Family ``left`` against family ``right``: each a list of seeds' per-task semantic validity
    (bool ``(n,)``, the same tasks), ``mean_A − mean_B`` in points with
    ``se² = v_tasks + s²_A/k_A + s²_B/k_B`` (:func:`recourse.benchmark.comparison.welch_test`),
    ``v_tasks`` the variance of the difference over the task bootstrap (the same resampled tasks
    for every seed of both), at least what Newcombe's interval implies. Swapping the two sides
    negates the difference and leaves everything else as it was, to the bit."""
    tasks = len(left[0])
    counts = task_weights_drawn(tasks, samples, torch.Generator().manual_seed(seed), task_weights)
    trials = counts @ torch.ones(tasks, dtype=torch.float64)

    def rates(side: list[torch.Tensor]) -> torch.Tensor:  # (draws,): the mean over seeds of each resample
        per_seed = [(counts @ (100.0 * v.double())) / trials for v in side]
        return finite_mean(torch.stack(per_seed, dim=1))

    tables = [_cells(a, b) for a in left for b in right]
    cells = [sum(t[i] for t in tables) / len(tables) for i in range(4)]
    score = stats.newcombe_paired_interval(*cells).as_list(100.0)
    values = [[100.0 * float(v.double().mean()) if tasks else float("nan") for v in side] for side in (left, right)]
    test = family_test(values, rates(left) - rates(right), score)  # a share: Newcombe's floor applies
    degenerate = all(not bool(v.any()) for v in (*left, *right))
    return SemanticComparison(test, score, degenerate)


def _cells(a: torch.Tensor, b: torch.Tensor) -> tuple[int, int, int, int]:
    """The 2×2 table of two sides' per-task shares: (both, only a, only b, neither)."""
    a, b = a.bool(), b.bool()
    return int((a & b).sum()), int((a & ~b).sum()), int((~a & b).sum()), int((~a & ~b).sum())


def row_semantic(valid: tuple[torch.Tensor, torch.Tensor], semantic: SemanticColumns | None, samples: int,
                 task_weights: str, margin: float = EQUIVALENCE_MARGIN) -> dict:
    """A student row's fields: ``semantic_validity`` (%, its own recourse over the judged tasks)
    and ``semantic`` (the judged tasks' count, the teacher's semantic validity on them, and the
    row − teacher difference with its test, as a one-seed family). None and {} where no task is
    judged (or the run read no judge)."""
    if semantic is None or not bool(semantic.judged.any()):
        return {"semantic_validity": None, "semantic": {}}
    mine, teacher = semantic_sides(valid, semantic)
    compared = compare_semantic([mine], [teacher], samples, task_weights)
    return {"semantic_validity": 100.0 * float(mine.double().mean()),
            "semantic": {"judged": int(semantic.judged.sum()), "teacher": 100.0 * float(teacher.double().mean()),
                         REFERENCE: compared.record(margin)}}


def family_semantic(valid: list[tuple[torch.Tensor, torch.Tensor]], semantic: list[SemanticColumns],
                    samples: int, task_weights: str, margin: float = EQUIVALENCE_MARGIN) -> dict:
    """A family's semantic validity (mean and sd over its seeds, on the tasks every seed has
    judged), the teacher's on them, and the family against the teacher (:func:`compare_semantic`,
    the teacher a family of one); {} where no task is judged."""
    judged = semantic[0].judged.clone()
    for columns in semantic[1:]:
        judged &= columns.judged
    if not bool(judged.any()):
        return {}
    sides = [semantic_sides(v, replace(s, judged=judged)) for v, s in zip(valid, semantic)]
    seeds, teacher = [mine for mine, _ in sides], sides[0][1]
    compared = compare_semantic(seeds, [teacher], samples, task_weights)
    values = [100.0 * float(s.double().mean()) for s in seeds]
    return {"judged": int(judged.sum()), "mean": mean_of(values), "sd": sd_of(values),
            "teacher": 100.0 * float(teacher.double().mean()), REFERENCE: compared.record(margin)}


# --- the registered family ------------------------------------------------------------------------


@dataclass(frozen=True)
class RegisteredClaim:
    """One claim of the registered family: ``row`` (a family of the table) against ``reference``."""

    row: str
    reference: str = REFERENCE
    metric: str = METRIC
    kind: str = "difference"  # or "equivalence" (TOST at the family's margin)


@dataclass(frozen=True)
class RegisteredFamily:
    """The claims a registration file fixed before the run (its ``claims``, margin and α), with
    where they were read from and the file's SHA-256: the run records them in its settings, so
    that ``recourse recompute-claims`` needs nothing else."""

    source: str = field(compare=False)  # where it was read: the same file read from elsewhere is the same family
    claims: tuple[RegisteredClaim, ...]
    equivalence_margin: float = EQUIVALENCE_MARGIN
    alpha: float = 0.05
    sha256: str = ""

    def __post_init__(self) -> None:
        if not self.claims:
            raise ValueError(f"{self.source}: a registered family needs at least one claim")
        for claim in self.claims:
            if (claim.reference, claim.metric) != (REFERENCE, METRIC) or claim.kind not in CLAIM_KINDS:
                raise ValueError(f"{self.source}: only {METRIC} against {REFERENCE} ({' or '.join(CLAIM_KINDS)}) "
                                 f"can be registered here, got {claim}")
        if len(set(self.claims)) != len(self.claims):
            raise ValueError(f"{self.source}: a claim is registered twice")
        if not (0 < self.equivalence_margin < math.inf and 0 < self.alpha < 1):
            raise ValueError(f"{self.source}: margin {self.equivalence_margin} and alpha {self.alpha} are out of range")

    @property
    def rows(self) -> tuple[str, ...]:
        """The registered rows (families of the table), in the file's order."""
        return tuple(dict.fromkeys(c.row for c in self.claims))

    @classmethod
    def from_file(cls, path: Path | str) -> "RegisteredFamily":
        """The family of a registration file (``assets/results/benchmark-primary.json``)."""
        try:
            text = Path(path).read_bytes()
            record = json.loads(text)
            claims = tuple(RegisteredClaim(c["row"], c["reference"], c["metric"], c["kind"]) for c in record["claims"])
            return cls(str(path), claims, float(record.get("equivalence_margin_points", EQUIVALENCE_MARGIN)),
                       float(record.get("alpha", 0.05)), hashlib.sha256(text).hexdigest())
        except (OSError, KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: not a registered family ({type(error).__name__}: {error})") from None

    @classmethod
    def from_dict(cls, record: dict) -> "RegisteredFamily":
        """As a run's settings recorded it (:func:`dataclasses.asdict`)."""
        return cls(record["source"], tuple(RegisteredClaim(**c) for c in record["claims"]),
                   float(record["equivalence_margin"]), float(record["alpha"]), record.get("sha256", ""))
