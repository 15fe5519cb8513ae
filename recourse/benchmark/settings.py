"""The benchmark's settings: everything that changes its recourse numbers
(:class:`BenchmarkSettings`, validated on construction, read back from a record with the values
of then), and the analysis versions a record's statistics were made with."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from recourse.benchmark.placement_claims import RegisteredPlacements
from recourse.benchmark.semantic import RegisteredFamily
from recourse.data import DEFAULT_ATTRIBUTES, HELD_OUT_ATTRIBUTES, attribute_index
from recourse.generation import CounterfactualConfig
from recourse.validation import check_int

FP32 = "fp32"
STUDENT_STOPS = ("decider", "twin")
SEED_LEVELS = ("parametric", "resample")
TASK_WEIGHTS = ("multinomial", "dirichlet")
# "On the noise floor" means a paired difference against the noise control within these
# margins by TOST: half a typical 4-bit VD and FA, a tenth of a logit, a fifth of a typical
# CRG, 2 points of DirSim (docs/metrics.md). Stated before the final run, recorded with it.
EQUIVALENCE_MARGINS: tuple[tuple[str, float], ...] = (
    ("vd", 2.0), ("fa_75", 5.0), ("logit_gap", 0.1), ("crg", 0.02), ("dirsim_moved", 2.0))
# The analysis version: how a run's families are compared and its claims counted
# (recourse.benchmark.comparison; docs/metrics.md, "Analysis versions"). LEGACY_ANALYSIS: seed k
# of a family against seed k mod K of the other (so the two orders differ), every test a claim,
# TOST apart. ANALYSIS, the default: family means in either order, claims without duplicates or
# 0-against-0, TOST inside the correction families. A run records its version, so that every
# record keeps the numbers it was written with.
# v3: v2 and each row placed in its matched-noise family and among the retrained seeds
# (recourse.benchmark.placed_rows), recorded beside the claims; v2 records have no placements.
LEGACY_ANALYSIS = "v1"
FAMILIES_ANALYSIS = "v2"
ANALYSIS = "v3"
ANALYSES = (LEGACY_ANALYSIS, FAMILIES_ANALYSIS, ANALYSIS)
# The versions as records written before they had names spell them (a record format: kept so
# that those records read back).
DATED_ANALYSES = {"2026-12-02": LEGACY_ANALYSIS, "2026-12-03": FAMILIES_ANALYSIS}
# The value a record that lacks one of these settings was made with (BenchmarkSettings.from_record).
LEGACY_SETTINGS = {"student_stop": "twin", "noise_draws": 1, "noise_match_split": None, "seed_level": "resample",
                   "task_weights": "multinomial", "equivalence_margins": (), "analysis": LEGACY_ANALYSIS,
                   "matched_noise": (), "placement_family": None}
# the generation settings' likewise: the cone walk, and edits over the whole frame
LEGACY_COUNTERFACTUAL = {"method": "pca-walk-cone", "region_mask": False}


@dataclass(frozen=True)
class BenchmarkSettings:
    """Everything that changes the benchmark's recourse numbers."""

    n: int = 500
    first_task: int = 0  # tasks first_task … first_task + n − 1
    attributes: tuple[str, ...] = (*DEFAULT_ATTRIBUTES, *HELD_OUT_ATTRIBUTES)
    seen_attributes: tuple[str, ...] = DEFAULT_ATTRIBUTES  # those of the recourse points
    margins: tuple[float, ...] = ()  # the margin sweep (teacher recourse only); empty: none
    noise_control: str | None = "ptq-int4"  # the variant whose agreement the noise control matches; None: no control
    bootstrap_samples: int = 1000  # resamples of every interval
    chunk_size: int = 20
    counterfactual: CounterfactualConfig = CounterfactualConfig()
    latency_repeats: int = 15
    # Where the student's own edit x'_g stops: on the model whose decisions are scored
    # ("decider", the integer model where there is one, as the audit does) or on its
    # differentiable twin ("twin", that of a record without this setting; LEGACY_SETTINGS).
    student_stop: str = "decider"
    noise_draws: int = 3  # noise controls (fp32-noise, fp32-noise-s1, ...): one family of draws
    noise_match_split: str | None = "val"  # the split the control's sigma is matched on; None: the run's own images
    # Variants that get a noise floor of their own: noise_draws draws matched to that
    # variant's agreement (rows fp32-noise@<variant>, fp32-noise-s1@<variant>, ...), against which
    # its TOST is read instead of against the noise control, matched to noise_control's
    # agreement only. The noise control stays (the sweep's band and margin rule read it alone);
    # noise_control itself needs none (its floor is the noise control). Empty: none.
    matched_noise: tuple[str, ...] = ()
    seed_level: str = "parametric"  # "parametric" (s/√k · t_{k−1}) or "resample" (the seeds resampled)
    task_weights: str = "multinomial"  # the task level: "multinomial" (ordinary bootstrap) or "dirichlet" (Bayesian)
    # TOST margins of "on the noise floor" (stated before the run; docs/metrics.md); empty: no test
    equivalence_margins: tuple[tuple[str, float], ...] = EQUIVALENCE_MARGINS
    analysis: str = ANALYSIS  # how families are compared and claims counted (ANALYSES); no chunk depends on it
    # The registered primary family (recourse.benchmark.semantic), read from its file
    # before the run: its claims are corrected by Holm over exactly themselves and every other
    # claim is secondary. None: the claims on all tasks are the primary family, those of the
    # attribute groups the secondary one (recourse.benchmark.claims). No chunk depends on it.
    primary_family: RegisteredFamily | None = None
    # The registered placement claims (recourse.benchmark.placed_rows): each row inside or outside
    # its matched-noise family or the retrained seeds, Holm over exactly themselves. None: the
    # placements are read, and no claim is made of them. No chunk depends on it.
    placement_family: RegisteredPlacements | None = None

    def __post_init__(self) -> None:
        # a record's older spelling of its analysis reads as the version it names
        object.__setattr__(self, "analysis", analysis_version(self.analysis))
        check_int("n", self.n, 1, 1_000_000)  # CelebA has 202,599 photos
        check_int("first_task", self.first_task, 0, 1_000_000)
        check_int("chunk_size", self.chunk_size, 1, 10_000)
        check_int("latency_repeats", self.latency_repeats, 1, 10_000)
        check_int("bootstrap_samples", self.bootstrap_samples, 10, 100_000)
        if not isinstance(self.attributes, tuple) or not self.attributes:
            raise ValueError(f"attributes must be a non-empty tuple of names, got {self.attributes!r}")
        for attribute in self.attributes:
            if not isinstance(attribute, str):
                raise ValueError(f"attribute names must be strings, got {attribute!r}")
            attribute_index(attribute)
        if len(set(self.attributes)) != len(self.attributes):
            raise ValueError(f"attributes must not repeat, got {', '.join(self.attributes)}")
        if not isinstance(self.seen_attributes, tuple):
            raise ValueError(f"seen_attributes must be a tuple of attribute names, got {self.seen_attributes!r}")
        for attribute in self.seen_attributes:
            attribute_index(attribute)
        if not isinstance(self.margins, tuple) or len(self.margins) > 20 or len(set(self.margins)) != len(self.margins):
            raise ValueError(f"margins must be a tuple of at most 20 distinct margins, got {self.margins!r}")
        for margin in self.margins:
            CounterfactualConfig(margin=margin)  # the same bounds as a margin of the generator
        if not isinstance(self.counterfactual, CounterfactualConfig):
            raise ValueError(f"counterfactual must be a CounterfactualConfig, got {type(self.counterfactual).__name__}")
        if self.student_stop not in STUDENT_STOPS:
            raise ValueError(f"student_stop must be one of {', '.join(STUDENT_STOPS)}, got {self.student_stop!r}")
        check_int("noise_draws", self.noise_draws, 1, 100)
        if self.noise_match_split not in (None, "train", "val", "test"):
            raise ValueError(f"noise_match_split must be train, val, test or None, got {self.noise_match_split!r}")
        if not isinstance(self.matched_noise, tuple) or len(self.matched_noise) > 100 or \
                not all(isinstance(v, str) and v for v in self.matched_noise) or \
                len(set(self.matched_noise)) != len(self.matched_noise):
            raise ValueError(f"matched_noise must be a tuple of distinct variant names, got {self.matched_noise!r}")
        if self.seed_level not in SEED_LEVELS:
            raise ValueError(f"seed_level must be one of {', '.join(SEED_LEVELS)}, got {self.seed_level!r}")
        if self.task_weights not in TASK_WEIGHTS:
            raise ValueError(f"task_weights must be one of {', '.join(TASK_WEIGHTS)}, got {self.task_weights!r}")
        if not isinstance(self.equivalence_margins, tuple) or not all(
                isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], (int, float)) and 0 < pair[1] < float("inf") for pair in self.equivalence_margins):
            raise ValueError(f"equivalence_margins must be a tuple of (metric, positive margin), "
                             f"got {self.equivalence_margins!r}")
        if self.analysis not in ANALYSES:
            raise ValueError(f"analysis must be one of {', '.join(ANALYSES)}, got {self.analysis!r}")
        if self.primary_family is not None and not isinstance(self.primary_family, RegisteredFamily):
            raise ValueError(f"primary_family must be a RegisteredFamily, got {type(self.primary_family).__name__}")
        if self.placement_family is not None and not isinstance(self.placement_family, RegisteredPlacements):
            raise ValueError(f"placement_family must be a RegisteredPlacements, "
                             f"got {type(self.placement_family).__name__}")

    @classmethod
    def from_record(cls, recorded: dict) -> "BenchmarkSettings":
        """The settings a ``benchmark.json`` recorded. A setting it does not name takes the
        value the run was made with (:data:`LEGACY_SETTINGS`, :data:`LEGACY_COUNTERFACTUAL`), so
        that every record keeps meaning what it meant: the cone walk, the twin's stop, one noise
        draw matched on the run's own images (and no noise floor matched to another variant),
        the seeds resampled, and the statistics of :data:`LEGACY_ANALYSIS` (so that the command
        rebuilt from it, ``recourse.cli.reproduction``, names that analysis and gives back the
        record's numbers)."""
        values = {**LEGACY_SETTINGS, **recorded}
        values["counterfactual"] = CounterfactualConfig(**{**LEGACY_COUNTERFACTUAL, **values.get("counterfactual", {})})
        for name in ("attributes", "seen_attributes", "margins", "matched_noise"):
            values[name] = tuple(values[name])
        values["equivalence_margins"] = tuple((str(m), float(v)) for m, v in values["equivalence_margins"])
        if values.get("primary_family") is not None:
            values["primary_family"] = RegisteredFamily.from_dict(values["primary_family"])
        if values.get("placement_family") is not None:
            values["placement_family"] = RegisteredPlacements.from_dict(values["placement_family"])
        return cls(**values)

    def student_inputs(self) -> dict[str, str]:
        """What keys a student's cached part besides the teacher's inputs and its weights: the
        stop, where it is not the twin's (so that the parts cached on the twin keep their keys)."""
        return {} if self.student_stop == "twin" else {"student_stop": self.student_stop}

    def fingerprint(self, inputs: dict[str, str]) -> str:
        """Identifies what a cached part was computed with (these settings and ``inputs``).
        What does not change a chunk's content is left out: which tasks and how many (task
        ``i`` is the same in any run that has it, so a run can be extended, cut or shifted),
        the sweep's margins, the controls' choice (each noise draw keys its own part by its
        details), the latency repeats and the statistics."""
        ignored = ("n", "first_task", "margins", "noise_control", "latency_repeats", "bootstrap_samples",
                   # a student's stop keys its own part (student_inputs); the noise draws key
                   # theirs by their details; the rest only changes the table, not a chunk
                   "student_stop", "noise_draws", "noise_match_split", "matched_noise", "seed_level",
                   "task_weights", "equivalence_margins", "analysis", "primary_family", "placement_family")
        settings = {k: v for k, v in asdict(self).items() if k not in ignored}
        text = json.dumps({"settings": settings, "inputs": inputs}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def analysis_version(value: str) -> str:
    """The analysis version ``value`` names: one of :data:`ANALYSES`, or the date by which a
    record written before the versions had names spells it (:data:`DATED_ANALYSES`). Any other
    value is returned as it is, for the caller to refuse."""
    return DATED_ANALYSES.get(value, value) if isinstance(value, str) else value


def recorded_analysis(settings: dict) -> str:
    """The analysis version a record's statistics were made with: its ``analysis``, or
    :data:`LEGACY_ANALYSIS` where it names none."""
    return analysis_version(settings.get("analysis", LEGACY_ANALYSIS))
