"""DirSim and CRG drawn between their floors (``recourse.benchmark.floors``): each row's value,
the two floors and the row's position on the scale they span, for ``benchmark.md`` and the
results pages. A run without both floors gets nothing here and keeps its rendering."""

from __future__ import annotations

from collections.abc import Sequence

from recourse.benchmark.floors import FLOOR_METRICS, RERUN_FLOOR, FloorScale, ScalePosition, direction_scales
from recourse.benchmark.rows import REFERENCE_FAMILY, BenchmarkRow, FamilyRow
from recourse.benchmark.settings import FP32

LABELS = {"dirsim": ("DirSim %", 1), "crg": ("CRG", 3)}  # header, digits


def _cell(value: float | None, digits: int) -> str:
    if value is None:
        return "—"
    return "n/a" if value != value else f"{value:.{digits}f}"


def position_cell(position: ScalePosition) -> str:
    """``0.22 [0.17, 0.27]``: the position, and in brackets the position with the bottom floor
    moved by ± its sd (left out where the bottom has one seed); ``n/a`` where undefined."""
    if position.position != position.position:
        return "n/a"
    spread = f" [{position.low:.2f}, {position.high:.2f}]" if position.low == position.low else ""
    return f"{position.position:.2f}{spread}"


def scale_sentence(scales: dict[str, FloorScale]) -> str:
    """The two floors of each metric, with the bottom's spread over its seeds."""
    def bottom(scale: FloorScale, digits: int) -> str:
        sd = f" ± {scale.bottom_sd:.{digits}f}" if scale.bottom_sd == scale.bottom_sd else ""
        return f"{scale.bottom:.{digits}f}{sd}"

    references = next(iter(scales.values())).references
    tops = ", ".join(f"{LABELS[m][0].split()[0]} {scales[m].top:.{LABELS[m][1]}f}" for m in FLOOR_METRICS if m in scales)
    bottoms = ", ".join(f"{LABELS[m][0].split()[0]} {bottom(scales[m], LABELS[m][1])}"
                        for m in FLOOR_METRICS if m in scales)
    seeds = f"{references} independently retrained full-precision seed{'s' if references != 1 else ''}"
    return (f"DirSim and CRG between their floors. Top: `{RERUN_FLOOR}`, the classifier's own recourse made again "
            f"with fresh noise ({tops}). Bottom: `{REFERENCE_FAMILY}`, {seeds} (mean"
            f"{' ± sd over the seeds' if references > 1 else ''}: {bottoms}). A row's position is "
            "(value − bottom) / (top − bottom): 1 on the top floor, 0 on the bottom one, for either metric; in "
            "brackets, the position with the bottom moved by its sd either way.")


def floors_table(rows: Sequence[BenchmarkRow], scales: dict[str, FloorScale]) -> str:
    """Every compared row's DirSim and CRG with its position between the floors."""
    metrics = [m for m in FLOOR_METRICS if m in scales]
    lines = ["| row | " + " | ".join(f"{LABELS[m][0]} | position" for m in metrics) + " |",
             "|---|" + "---:|---:|" * len(metrics)]
    for row in rows:
        if row.method == FP32:
            continue
        cells = []
        for metric in metrics:
            value = getattr(row, metric)
            cells += [_cell(value, LABELS[metric][1]), position_cell(scales[metric].position(value))]
        lines.append(f"| {row.method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def family_floors_table(families: Sequence[FamilyRow], scales: dict[str, FloorScale], group: str = "all") -> str:
    """Each family's mean over its seeds (all attributes) with its position between the floors."""
    metrics = [m for m in FLOOR_METRICS if m in scales]
    lines = ["| family | seeds | " + " | ".join(f"{LABELS[m][0]}, mean | position" for m in metrics) + " |",
             "|---|---:|" + "---:|---:|" * len(metrics)]
    for family in families:
        values = family.metrics.get(group)
        if not values:
            continue
        cells = []
        for metric in metrics:
            mean = values.get(metric, {}).get("mean")
            cells += [_cell(mean, LABELS[metric][1]), position_cell(scales[metric].position(mean))]
        lines.append(f"| {family.family} | {len(family.variants)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def floors_section(rows: Sequence[BenchmarkRow], families: Sequence[FamilyRow] = ()) -> str:
    """The floors, every row on their scale and, where the run has families, each family's mean;
    empty where the run lacks either floor."""
    scales = direction_scales(rows)
    if not scales:
        return ""
    parts = [scale_sentence(scales), floors_table(rows, scales)]
    if families:
        parts += ["Each family's mean over its seeds on the same scale (all attributes):",
                  family_floors_table(families, scales)]
    return "\n\n".join(parts)
