"""The benchmark drawn: ``benchmark.md`` (table, intervals, paired differences, per
attribute), the app's table and its accuracy-against-recourse plot."""

from __future__ import annotations

from pathlib import Path

from recourse.benchmark.rows import PAIRED_REFERENCES, BenchmarkRow, FamilyRow
from recourse.benchmark.run import BenchmarkResult
from recourse.benchmark.settings import FP32
from recourse.benchmark.sweep import SweepPoint
from recourse.render.floors import floors_section
from recourse.render.sweep_curves import curves_section


def _number(value: float | None, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return "—"
    if value != value:  # NaN: undefined (empty S or B)
        return "n/a"
    return f"{value:.{digits}f}{suffix}"


def markdown_table(rows: list[BenchmarkRow]) -> str:
    """Every model: accuracy, recourse (VD with its two-sided companions, CRG, DirSim, semantic
    validity: its own recourse valid and seen by the attribute's independent judge), size and speed."""
    header = ("| method | Acc % | agreement % | bits/weight | VD % ↓ | FA½ % ↓ | FA¾ % ↓ | \\|Δlogit\\| ↓ | lean "
              "| CRG ↓ | DirSim % ↑ | seen % ↑ | student success % | Overhead | twin/integer % | size MB | batch-1 ms "
              "| batch-32 ms | N | \\|S\\| | \\|B\\| |")
    lines = [header, "|" + "---|" * 21]
    for row in rows:
        kernels = "" if row.integer_kernels or row.method == FP32 or row.compression == "foreign" else " (fake-quant)"
        lines.append(
            f"| {row.method} | {row.acc:.2f} | {row.agreement:.2f} | {row.bits_per_weight:.2f} | {_number(row.vd, 1)} "
            f"| {_number(row.fa_50, 1)} | {_number(row.fa_75, 1)} | {_number(row.logit_gap, 2)} "
            f"| {_signed(row.logit_lean)} | {_number(row.crg, 3)} | {_number(row.dirsim, 1)} "
            f"| {_number(row.semantic_validity, 1)} | {_number(row.success_rate, 1)} | {_number(row.overhead, 3, '×')} "
            f"| {_number(row.twin_integer_agreement, 2)} | {row.size_mb:.2f} | {row.latency_batch1_ms:.2f}{kernels} "
            f"| {row.latency_batch32_ms:.1f}{kernels} | {row.n} | {row.s} | {'—' if row.method == FP32 else row.b} |")
    return "\n".join(lines)


def _signed(value: float | None, digits: int = 2) -> str:
    text = _number(value, digits)
    return f"+{text}" if value is not None and value == value and value > 0 else text


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
    """95% bootstrap intervals (over tasks) of VD, FA¾, CRG and DirSim per model."""
    lines = ["| method | VD % [95% CI] | FA¾ % [95% CI] | CRG [95% CI] | DirSim % [95% CI] |", "|---|---|---|---|---|"]
    for row in rows:
        if row.intervals:
            cells = [f"{_number(getattr(row, m), d)} {_interval(row.intervals.get(m, [None, None]), d)}"
                     for m, d in (("vd", 1), ("fa_75", 1), ("crg", 3), ("dirsim", 1))]
            lines.append(f"| {row.method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


PAIRED_COLUMNS = (("vd", "ΔVD %", 1), ("fa_75", "ΔFA¾ %", 1), ("logit_gap", "Δ\\|Δlogit\\|", 2),
                  ("crg", "ΔCRG", 3), ("dirsim", "ΔDirSim %", 1))


def paired_table(rows: list[BenchmarkRow], reference: str) -> str:
    """Paired differences ``model − reference`` on shared tasks, with 95% bootstrap intervals."""
    lines = [f"| method − {reference} | " + " | ".join(h for _, h, _ in PAIRED_COLUMNS) + " |",
             "|---|" + "---|" * len(PAIRED_COLUMNS)]
    for row in rows:
        versus = row.paired.get(reference)
        if versus:
            cells = [f"{_number(versus.get(m, [None])[0], d)} {_interval(versus.get(m, [None] * 3)[1:], d)}" for m, _, d in PAIRED_COLUMNS]
            lines.append(f"| {row.method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mean_sd(cell: dict, digits: int) -> str:
    sd = f" ± {_number(cell['sd'], digits)}" if cell["sd"] is not None and cell["sd"] == cell["sd"] else ""
    return f"{_number(cell['mean'], digits)}{sd} {_interval([cell['low'], cell['high']], digits)}"


def families_table(families: list[FamilyRow], group: str = "all") -> str:
    """Each method over its seeds: mean ± sd across seeds [95% interval over seeds and tasks]."""
    lines = ["| method | seeds | bits/weight | Acc % | agreement % | VD % | FA¾ % | \\|Δlogit\\| | CRG | DirSim % |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for family in families:
        metrics = family.metrics.get(group)
        if not metrics:
            continue
        acc, agree = family.acc, family.agreement
        cells = [_mean_sd(metrics[m], d) for m, d in (("vd", 1), ("fa_75", 1), ("logit_gap", 2), ("crg", 3),
                                                       ("dirsim", 1))]
        lines.append(f"| {family.family} | {len(family.variants)} | {family.bits_per_weight:.2f} "
                     f"| {_plain_mean_sd(acc, 2)} | {_plain_mean_sd(agree, 2)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _plain_mean_sd(values, digits: int) -> str:
    mean, sd = values
    return _number(mean, digits) + (f" ± {_number(sd, digits)}" if sd is not None and sd == sd else "")


def family_paired_table(families: list[FamilyRow], reference: str, group: str = "all") -> str:
    lines = [f"| method − {reference} | " + " | ".join(h for _, h, _ in PAIRED_COLUMNS) + " |",
             "|---|" + "---|" * len(PAIRED_COLUMNS)]
    for family in families:
        versus = family.paired.get(reference, {}).get(group)
        if versus:
            cells = [f"{_number(versus.get(m, [None])[0], d)} {_interval(versus.get(m, [None] * 3)[1:], d)}" for m, _, d in PAIRED_COLUMNS]
            lines.append(f"| {family.family} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sweep_table(sweep: list[SweepPoint], names: list[str]) -> str:
    """VD % [95% interval] / FA¾ % of each model at each margin of the teacher's recourse, with its cost."""
    if not sweep:
        return ""
    base = sweep[0].teacher_cost
    lines = ["| margin | " + " | ".join(f"{p.margin:g}" for p in sweep) + " |", "|---|" + "---|" * len(sweep),
             "| teacher success % | " + " | ".join(_number(p.teacher_success, 1) for p in sweep) + " |",
             "| teacher cost (× first) | " + " | ".join(
                 f"{_number(p.teacher_cost, 4)} ({_number(p.teacher_cost / base if base else None, 2)}×)"
                 for p in sweep) + " |"]
    for name in names:
        if all(name in p.students for p in sweep):
            lines.append(f"| {name} VD / FA¾ % | " + " | ".join(
                f"{_number(p.students[name]['vd'], 1)}{_sweep_interval(p, name)} / {_number(p.students[name]['fa_75'], 1)}"
                for p in sweep) + " |")
    return "\n".join(lines)


def first_of_each_family(rows: list[BenchmarkRow]) -> list[str]:
    """The sweep table's rows: each family's first (its seed 0; the first reference folder of
    ``fp32-ref``, whose rows are all named apart from their family)."""
    first: dict[str, str] = {}
    for row in rows:
        if row.method != FP32:
            first.setdefault(row.family, row.method)
    return list(first.values())


def _sweep_interval(point: SweepPoint, name: str) -> str:
    bounds = point.intervals.get(name, {}).get("vd")
    return f" {_interval(bounds, 1)}" if bounds else ""


def _interval(values: list, digits: int) -> str:
    return f"[{_number(values[0], digits)}, {_number(values[1], digits)}]"


def heading(result: BenchmarkResult) -> str:
    return (f"Benchmark on {result.split} ({result.date}): `{result.command}`; N = {result.n} recourse tasks, "
            f"attributes {', '.join(result.attributes)}; accuracy on all {result.accuracy_images} images; "
            f"{result.processes} process(es), {result.seconds:.0f} s.")


def latency_table(latency: list[dict]) -> str:
    """The quantized foreign models against their float originals, timed in the same run
    (recourse.benchmark.latency)."""
    lines = ["| runtime | quantized | float original | ms per image, quantized | ms per image, float | speed-up |",
             "|---|---|---|---:|---:|---:|"]
    for row in latency:
        lines.append(f"| {row['runtime']} | {row['model']} | {row['original']} | {row['model_ms_per_image']:.3f} | "
                     f"{row['original_ms_per_image']:.3f} | {row['speedup']:.2f}× |")
    first = latency[0] if latency else {}
    return "\n".join(lines) + (f"\n\nMedian of {first['repeats']} alternating calls on a batch of {first['batch']} "
                               f"faces, {first['threads']} threads." if first else "")


def markdown_report(result: BenchmarkResult) -> str:
    """``benchmark.md``: the table, its intervals, methods over seeds, the held-out attributes,
    the paired comparisons, the margin sweep and per attribute."""
    rows = list(result.rows)
    families = list(result.families)
    parts = [heading(result), markdown_table(rows),
             f"Uncertainty (percentile bootstrap over tasks, {result.settings.get('bootstrap_samples', 1000)} "
             f"resamples):\n\n{intervals_table(rows)}"]
    floors = floors_section(rows, families)  # nothing for a run without both floors
    if floors:
        parts.append(floors)
    if result.latency:
        parts.append("Latency of each quantized model card against its float original, same run:\n\n"
                     + latency_table(list(result.latency)))
    if families:
        parts.append("Methods over their fine-tuning seeds (mean ± sd across seeds [95% interval, bootstrap over "
                     "seeds and tasks]), all attributes:\n\n" + families_table(families))
        seen = ", ".join(result.settings.get("seen_attributes", ()))
        for group, label in (("seen", f"the attributes of the recourse points ({seen})"),
                             ("held_out", "the held-out attributes, which no method saw recourse points of")):
            if any(group in f.metrics for f in families):
                parts.append(f"On {label}:\n\n" + families_table(families, group))
        for reference in PAIRED_REFERENCES:
            if any(reference in f.paired for f in families):
                for group in ("all", "held_out"):
                    parts.append(f"Paired with {reference} on shared tasks, {group.replace('_', '-')} attributes "
                                 f"(seed k against seed k; 95% interval over seeds and tasks):\n\n"
                                 + family_paired_table(families, reference, group))
    else:
        for reference in PAIRED_REFERENCES:
            if any(reference in row.paired for row in rows):
                parts.append(f"Paired with {reference} on shared tasks (95% bootstrap intervals):\n\n"
                             + paired_table(rows, reference))
    if result.sweep:
        names = first_of_each_family(rows)
        parts.append("Margin sweep (the teacher's recourse made to each margin; VD % [95% interval over tasks, where recorded] / FA¾ % of each model):\n\n"
                     + sweep_table(list(result.sweep), names))
        curves = curves_section(list(result.sweep))  # nothing for a sweep of fewer than two noise draws
        if curves:
            parts.append(curves)
    parts.append(f"Per attribute (VD % / CRG / DirSim %):\n\n{per_attribute_table(rows)}")
    return "\n\n".join(parts) + "\n"


# Columns of the app's table: (row field, header, digits)
DISPLAY_COLUMNS = (
    ("method", "method", None), ("acc", "Acc %", 2), ("vd", "VD % ↓", 1), ("fa_75", "FA¾ % ↓", 1),
    ("logit_gap", "|Δlogit| ↓", 2), ("crg", "CRG ↓", 3),
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


def _is_extra_seed(method: str) -> bool:
    return method.endswith(("-s1", "-s2"))


def accuracy_plot(result: BenchmarkResult):
    """A matplotlib figure: accuracy against VD, CRG and DirSim, one point per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    labels = ("VD (%), lower is better", "CRG, lower is better", "DirSim (%), higher is better")
    for axis, column, label in zip(axes, ("vd", "crg", "dirsim"), labels):
        placed: list[tuple[float, float]] = []  # label positions in axes fractions, to skip overlaps
        points = [(getattr(row, column), row) for row in result.rows]
        points = [(value, row) for value, row in points if isinstance(value, (int, float)) and value == value]
        for value, row in points:
            axis.scatter(value, row.acc, s=14, color="#db2777" if row.method != FP32 else "#2563eb")
        axis.figure.canvas.draw()  # the axes' limits, to place labels in their fractions
        for value, row in points:
            if _is_extra_seed(row.method):
                continue  # seeds 1 and 2 sit beside seed 0: one label for the three
            x, y = axis.transLimits.transform((value, row.acc))
            if any(abs(x - px) < 0.22 and abs(y - py) < 0.06 for px, py in placed):
                continue  # a label here would overlap one already drawn: the table names every point
            placed.append((x, y))
            # 8 pt: 11 px at the figure's 100 dpi, as a phone shows it (app.css); 7 pt drew 9.7 px
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
