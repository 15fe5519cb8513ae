"""The benchmark drawn: ``benchmark.md`` (table, intervals, paired differences, per
attribute), the app's table and its accuracy-against-recourse plot."""

from __future__ import annotations

from pathlib import Path

from recourse.benchmark.rows import PAIRED_REFERENCES, BenchmarkRow
from recourse.benchmark.run import BenchmarkResult
from recourse.benchmark.tasks import FP32


def _number(value: float | None, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return "—"
    if value != value:  # NaN: undefined (empty S or B)
        return "n/a"
    return f"{value:.{digits}f}{suffix}"


def markdown_table(rows: list[BenchmarkRow]) -> str:
    header = ("| method | Acc % | VD % ↓ | CRG ↓ | DirSim % ↑ | student success % | Overhead | agreement % "
              "| twin/integer % | bits/weight | size MB | batch-1 ms | batch-32 ms | N | \\|S\\| | \\|B\\| |")
    lines = [header, "|" + "---|" * 16]
    for row in rows:
        kernels = "" if row.integer_kernels or row.method == FP32 else " (fake-quant)"
        lines.append(
            f"| {row.method} | {row.acc:.2f} | {_number(row.vd, 1)} | {_number(row.crg, 3)} | {_number(row.dirsim, 1)} "
            f"| {_number(row.success_rate, 1)} | {_number(row.overhead, 3, '×')} | {row.agreement:.2f} "
            f"| {_number(row.twin_integer_agreement, 2)} "
            f"| {row.bits_per_weight:.2f} | {row.size_mb:.2f} | {row.latency_batch1_ms:.2f}{kernels} "
            f"| {row.latency_batch32_ms:.1f}{kernels} | {row.n} | {row.s} | {'—' if row.method == FP32 else row.b} |")
    return "\n".join(lines)


def per_attribute_table(rows: list[BenchmarkRow]) -> str:
    attributes = list(next((r.per_attribute for r in rows if r.per_attribute), {}))
    lines = ["| method | " + " | ".join(f"{a} VD / CRG / DirSim" for a in attributes) + " |",
             "|---|" + "---|" * len(attributes)]
    for row in rows:
        if not row.per_attribute:
            continue
        cells = [f"{_number(v['vd'], 1)} / {_number(v['crg'], 3)} / {_number(v['dirsim'], 1)}"
                 for v in row.per_attribute.values()]
        lines.append(f"| {row.method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def intervals_table(rows: list[BenchmarkRow]) -> str:
    """95% bootstrap intervals of VD, CRG and DirSim per method."""
    lines = ["| method | VD % [95% CI] | CRG [95% CI] | DirSim % [95% CI] |", "|---|---|---|---|"]
    for row in rows:
        if row.intervals:
            lines.append(f"| {row.method} | {_number(row.vd, 1)} {_interval(row.intervals['vd'], 1)} "
                         f"| {_number(row.crg, 3)} {_interval(row.intervals['crg'], 3)} "
                         f"| {_number(row.dirsim, 1)} {_interval(row.intervals['dirsim'], 1)} |")
    return "\n".join(lines)


def paired_table(rows: list[BenchmarkRow], reference: str) -> str:
    """Paired differences ``method − reference`` with their 95% bootstrap intervals."""
    lines = [f"| method − {reference} | ΔVD % | ΔCRG | ΔDirSim % |", "|---|---|---|---|"]
    for row in rows:
        versus = row.paired.get(reference)
        if versus:
            cells = [f"{_number(versus[m][0], d)} {_interval(versus[m][1:], d)}" for m, d in (("vd", 1), ("crg", 3), ("dirsim", 1))]
            lines.append(f"| {row.method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _interval(values: list, digits: int) -> str:
    return f"[{_number(values[0], digits)}, {_number(values[1], digits)}]"


def heading(result: BenchmarkResult) -> str:
    return (f"Benchmark on {result.split} ({result.date}): `{result.command}`; N = {result.n} recourse tasks, "
            f"attributes {', '.join(result.attributes)}; accuracy on all {result.accuracy_images} images; "
            f"{result.processes} process(es), {result.seconds:.0f} s.")


def markdown_report(result: BenchmarkResult) -> str:
    """``benchmark.md``: the table, its intervals, the paired comparisons, per attribute."""
    rows = list(result.rows)
    methods = {row.method for row in rows}
    paired = "".join(f"\n\nPaired with {reference} on the same tasks (95% bootstrap intervals):\n\n"
                     + paired_table(rows, reference) for reference in PAIRED_REFERENCES if reference in methods)
    return (f"{heading(result)}\n\n{markdown_table(rows)}\n\nUncertainty (percentile bootstrap over tasks, 2,000 "
            f"resamples):\n\n{intervals_table(rows)}{paired}\n\nPer attribute (VD % / CRG / DirSim %):\n\n"
            f"{per_attribute_table(rows)}\n")


# Columns of the app's table: (row field, header, digits)
DISPLAY_COLUMNS = (
    ("method", "method", None), ("acc", "Acc %", 2), ("vd", "VD % ↓", 1), ("crg", "CRG ↓", 3),
    ("dirsim", "DirSim % ↑", 1), ("success_rate", "student success %", 1), ("overhead", "Overhead", 3),
    ("agreement", "agreement %", 2), ("bits_per_weight", "bits/weight", 2), ("size_mb", "size MB", 2),
    ("latency_batch1_ms", "batch-1 ms", 2), ("n", "N", None), ("s", "|S|", None), ("b", "|B|", None),
)


def display_rows(result: BenchmarkResult) -> tuple[list[str], list[list[str]]]:
    """Headers and formatted cells of the table the app shows."""
    headers = [header for _, header, _ in DISPLAY_COLUMNS]
    cells = []
    for row in result.rows:
        line = []
        for name, _, digits in DISPLAY_COLUMNS:
            value = getattr(row, name)
            line.append(str(value) if digits is None else _number(value, digits))
        cells.append(line)
    return headers, cells


def accuracy_plot(result: BenchmarkResult):
    """A matplotlib figure: accuracy against VD, CRG and DirSim, one point per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    labels = ("VD (%), lower is better", "CRG, lower is better", "DirSim (%), higher is better")
    for axis, column, label in zip(axes, ("vd", "crg", "dirsim"), labels):
        for row in result.rows:
            value = getattr(row, column)
            if isinstance(value, (int, float)) and value == value:
                axis.scatter(value, row.acc, color="#db2777" if row.method != FP32 else "#2563eb")
                axis.annotate(row.method, (value, row.acc), fontsize=8, xytext=(3, 3), textcoords="offset points")
        axis.set_xlabel(label)
        axis.set_ylabel("accuracy (%)")
        axis.grid(alpha=0.3)
    figure.tight_layout()
    plt.close(figure)
    return figure


def write_markdown(result: BenchmarkResult, out: Path) -> Path:
    """``benchmark.md`` beside the run's ``benchmark.json``."""
    path = Path(out) / "benchmark.md"
    path.write_text(markdown_report(result))
    return path
