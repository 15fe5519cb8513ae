"""Where one face's recourse is read: three stops on each model's edit (``docs/metrics.md``,
"The recourse path").

* **boundary** (margin 0): where the decision flips; available, and labelled as the boundary,
  because its verdicts are mostly the boundary's noise (the benchmark's validation sweep: the
  weight-noise control rejects most of the teacher's recourses there);
* **benchmark**: the margin the benchmark validated (the smallest at which the noise control's
  VD is small), read from the committed validation sweep: per-image validity, CRG and DirSim
  are read here by default;
* **visible**: the stop chosen on validation as the smallest at which the judges trained on
  other faces stop seeing more change (:mod:`recourse.audit.visible_stop`, applied to the
  committed run of ``scripts/measurements/visible_stop.py``): the picture is shown here.

All three are points of the same straight path from the face to the model's whole edit, which
aims at the largest of them (or at the visible-stop run's own edit margin).
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from recourse.audit.visible_stop import chosen_stop
from recourse.locations import assets_dir
from recourse.validation import check_float

VAL_SWEEP = "results/val-sweep-denoised.json"  # the benchmark's margin, chosen on validation
VISIBLE_STOP = "results/visible-stop-val.json"  # the visible stop, chosen on validation
# the region-space edit's visible stop per attribute, chosen on validation (attribute_visible_stops)
VISIBLE_STOP_SPACE = "results/visible-stop-space-val.json"
GAP_SHARE = 1.0  # the independent judges' shift, in real class gaps, a visible stop aims at
STOP_FVA = 97.0  # the least dlib FVA (%) a visible stop keeps, where some stop keeps it
# Where a file is missing (a fresh checkout without results): the generator's dataset default
# for the picture and the boundary for the numbers, each said where it is shown.
FALLBACK_VISIBLE = 10.0
NUMBERS_AT = ("benchmark", "boundary")
MAX_STOP = 50.0  # logits, as the generator's MAX_MARGIN: a sigmoid is 1 - 2e-22 there


@dataclass(frozen=True)
class AuditStops:
    """The margins (logits past the boundary, toward the target) of the three stops, the edit's
    own margin, which stop the per-image numbers are read at, and where each margin came from."""

    benchmark: float
    visible: float
    edit: float  # the whole edit aims past this margin (≥ every stop)
    numbers_at: str = "benchmark"
    boundary: float = 0.0
    benchmark_source: str = ""
    visible_source: str = ""

    def __post_init__(self) -> None:
        if self.numbers_at not in NUMBERS_AT:
            raise ValueError(f"numbers_at must be one of {', '.join(NUMBERS_AT)}, got {self.numbers_at!r}")
        if not 0 <= self.boundary <= self.benchmark <= self.edit or not 0 <= self.visible <= self.edit:
            raise ValueError(f"stops must lie on the edit: boundary {self.boundary:g} ≤ benchmark {self.benchmark:g}, "
                             f"visible {self.visible:g}, each ≤ the edit's margin {self.edit:g}")

    @property
    def numbers(self) -> float:
        """The margin the per-image numbers are read at."""
        return self.benchmark if self.numbers_at == "benchmark" else self.boundary

    def margins(self) -> dict[str, float]:
        return {"boundary": self.boundary, "benchmark": self.benchmark, "visible": self.visible}

    def to_dict(self) -> dict:
        return {**asdict(self), "numbers": self.numbers}


def _read(name: str) -> dict | None:
    path = assets_dir() / name
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def validated_benchmark_margin() -> tuple[float | None, str]:
    """The benchmark's margin by its own rule, recomputed from the committed validation sweep."""
    from recourse.benchmark.sweep import SweepPoint, chosen_margin

    sweep = _read(VAL_SWEEP)
    if sweep is None or "sweep" not in sweep:
        return None, f"no validation sweep at assets/{VAL_SWEEP}"
    margin = chosen_margin([SweepPoint(**point) for point in sweep["sweep"]])
    return margin, f"assets/{VAL_SWEEP} ({sweep['n']} {sweep['split']} tasks, {sweep['date']})"


def chosen_visible_stop() -> tuple[float | None, float | None, str]:
    """``(visible stop, the edit margin it was chosen on, source)``: the rule recomputed from the
    committed run's readings."""
    record = _read(VISIBLE_STOP)
    stop = None if record is None else chosen_stop(record)
    if stop is None:
        return None, None, f"not chosen yet (no assets/{VISIBLE_STOP})"
    return (float(stop), float(record["settings"]["margin"]),
            f"assets/{VISIBLE_STOP} ({record['n']} {record['split']} faces, {record['date']})")


@functools.lru_cache(maxsize=1)
def committed_stops() -> AuditStops:
    """The stops an audit uses by default, from the committed files."""
    benchmark, benchmark_source = validated_benchmark_margin()
    visible, edit, visible_source = chosen_visible_stop()
    if benchmark is None:
        benchmark, benchmark_source = 0.0, f"the boundary: {benchmark_source}"
    if visible is None:
        visible, visible_source = FALLBACK_VISIBLE, f"the generator's dataset default: visible stop {visible_source}"
    return AuditStops(benchmark=benchmark, visible=visible, edit=max(edit or 0.0, visible, benchmark),
                      benchmark_source=benchmark_source, visible_source=visible_source)


def stops_for(picture_margin: float | None = None, numbers_at: str = "benchmark",
              base: AuditStops | None = None) -> AuditStops:
    """The committed stops with the picture moved to ``picture_margin`` (a user's choice, even
    where it is the committed stop: an attribute's own stop does not replace it; the edit then
    aims at least that far) and the numbers read at ``numbers_at``."""
    base = base or committed_stops()
    if picture_margin is not None:
        check_float("margin", picture_margin, 0.0, MAX_STOP)
    visible = base.visible if picture_margin is None else float(picture_margin)
    return AuditStops(benchmark=base.benchmark, visible=visible, edit=max(base.edit, visible),
                      numbers_at=numbers_at, boundary=base.boundary, benchmark_source=base.benchmark_source,
                      visible_source=base.visible_source if picture_margin is None else "chosen by the user")


def gap_stop(rows: list[dict], share: float = GAP_SHARE, fva: float = STOP_FVA) -> float | None:
    """Among the stops that keep the person (dlib's FVA ≥ ``fva``; all, where none does), the
    smallest whose mean independent-judge shift reaches ``share`` of the real class gap, else the
    one of the largest shift; None without a reading. A stop past the person's identity is not
    a recourse for that person, however much the judges see."""
    kept = [row for row in rows if row.get("fva") is not None and row["fva"] >= fva] or rows
    readable = [(row["stop"], row["shift"]) for row in kept if row.get("shift") is not None]
    if not readable:
        return None
    reaching = [stop for stop, shift in readable if shift >= share]
    return min(reaching) if reaching else max(readable, key=lambda pair: pair[1])[0]


@functools.lru_cache(maxsize=1)
def attribute_visible_stops() -> tuple[dict[str, float], str]:
    """``({attribute: stop}, source)`` of the region-space edits, by :func:`gap_stop` on the
    committed validation run; empty where there is none."""
    record = _read(VISIBLE_STOP_SPACE)
    if record is None:
        return {}, f"no assets/{VISIBLE_STOP_SPACE}"
    chosen = {row["attribute"]: gap_stop(row["stops"]) for row in record.get("attributes", [])}
    return ({name: float(stop) for name, stop in chosen.items() if stop is not None},
            f"assets/{VISIBLE_STOP_SPACE} ({record['n']} {record['split']} faces, {record['date']})")


def for_attribute(stops: AuditStops, attribute: str, edit_kind: str) -> AuditStops:
    """``stops`` with the visible stop of ``attribute``'s region-space edit, where the committed
    run chose one and the user did not choose the picture's margin. An attribute no independent
    judge reads gets the mean of the judged attributes' stops, and says so."""
    chosen, source = attribute_visible_stops()
    if edit_kind != "region-space" or not chosen or stops.visible_source == "chosen by the user":
        return stops
    if attribute in chosen:
        visible, where = chosen[attribute], f"{attribute}'s, from {source}"
    else:
        visible = round(sum(chosen.values()) / len(chosen), 1)
        where = f"no independent judge reads {attribute}: the mean of the judged attributes' stops, from {source}"
    # a warp's straight path cross-fades two mouths away from its end: a moved part's whole edit
    # aims at its picture's stop, so that the picture is (almost) the warp itself
    from recourse.generation.spaces.templates import MOUTH_SHAPE_GROUP, SPACE_OF

    edit = max(stops.benchmark, visible) if SPACE_OF.get(attribute) == MOUTH_SHAPE_GROUP else max(stops.edit, visible)
    return AuditStops(benchmark=stops.benchmark, visible=visible, edit=edit,
                      numbers_at=stops.numbers_at, boundary=stops.boundary,
                      benchmark_source=stops.benchmark_source, visible_source=where)
