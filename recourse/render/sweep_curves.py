"""The margin sweep drawn as curves (``recourse.benchmark.sweep``): for each of VD, FA¾ and the
signed Δlogit, a compact table (every row over the swept margins, and the noise draws' mean
and min–max) for ``benchmark.md``, and a small inline SVG line chart (each family's mean over
its seeds against the noise draws' band) for the results pages. SVG, not a plotting library,
as :mod:`recourse.render.path_plot`: it goes into a markdown page unchanged."""

from __future__ import annotations

import html
import math

from recourse.benchmark.sweep import (
    CURVE_METRICS, NoiseBand, SweepCurve, SweepPoint, family_curves, has_noise_spread, noise_band, row_curves,
)
from recourse.render.path_plot import _scale

# metric: (name in a table's corner, name on a chart's axis, digits, signed)
CURVE_LABELS = {"vd": ("VD %", "VD (%)", 1, False), "fa_75": ("FA¾ %", "FA¾ (%)", 1, False),
                "logit_lean": ("signed Δlogit", "signed Δlogit (+: toward the target)", 2, True)}
WIDTH, HEIGHT = 380, 200
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 14, 36  # room for the axes' labels
LEGEND_ROW = 13  # px per legend line, two entries a line
NOISE_FILL, NOISE_LINE = "#e2e8f0", "#64748b"
NOISE_DASH, REPEAT_DASH = "4,2", "1,2"
# one colour per family, in the table's order (cycled past ten, then dotted); the noise draws' mean dashed
PALETTE = ("#2563eb", "#db2777", "#16a34a", "#ea580c", "#7c3aed", "#0891b2", "#ca8a04", "#dc2626", "#4f46e5",
           "#0d9488")


def _cell(value: float, digits: int, signed: bool) -> str:
    if value != value:
        return "n/a"
    text = f"{value:.{digits}f}"
    return f"+{text}" if signed and value > 0 else text


def curve_table(points: list[SweepPoint], metric: str) -> str:
    """One metric over the swept margins: the noise draws' mean [min, max], then every row."""
    corner, _, digits, signed = CURVE_LABELS[metric]
    lines = [f"| {corner} | " + " | ".join(f"{p.margin:g}" for p in points) + " |",
             "|---|" + "---:|" * len(points)]
    band = noise_band(points, metric)
    if band is not None:
        cells = [f"{_cell(m, digits, signed)} [{_cell(lo, digits, signed)}, {_cell(hi, digits, signed)}]"
                 for m, lo, hi in zip(band.mean, band.low, band.high)]
        lines.append(f"| noise draws, mean [min, max] of {len(band.draws)} | " + " | ".join(cells) + " |")
    for curve in row_curves(points, metric):
        lines.append(f"| {curve.name} | " + " | ".join(_cell(v, digits, signed) for v in curve.values) + " |")
    return "\n".join(lines)


def curves_section(points: list[SweepPoint]) -> str:
    """The three metrics' tables, or nothing where the sweep has fewer than two noise draws (no
    band to read a curve against: the committed cone-walk runs keep their sweep table alone)."""
    if not points or not has_noise_spread(points):
        return ""
    parts = ["The sweep as curves: each row's VD, FA¾ and signed Δlogit (mean over S of the student's logit "
             "minus the teacher's at x'_f, signed toward the target) at every swept margin, beside the noise "
             "draws' mean and range:"]
    parts += [curve_table(points, metric) for metric in CURVE_METRICS]
    return "\n\n".join(parts)


def _runs(values: tuple[float, ...] | list[float]) -> list[list[int]]:
    """The runs of consecutive margins where a curve is defined: an undefined value (NaN) breaks the line."""
    runs: list[list[int]] = [[]]
    for i, value in enumerate(values):
        if value == value:
            runs[-1].append(i)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def curve_svg(points: list[SweepPoint], metric: str) -> str:
    """One metric's chart: each family's mean over its seeds at every swept margin (evenly
    spaced, labelled with their values), the noise draws' min–max as a grey band and their mean
    dashed; one line of SVG."""
    _, axis_name, digits, _ = CURVE_LABELS[metric]
    curves: list[SweepCurve] = family_curves(points, metric)
    band: NoiseBand | None = noise_band(points, metric)
    # 0 always in range: which side of it a curve lies on is what the signed Δlogit says
    values = [v for c in curves for v in c.values] + ([*band.low, *band.high] if band else []) + [0.0]
    values = [v for v in values if v == v and math.isfinite(v)]
    low, high = min(values), max(values)
    pad = 0.08 * ((high - low) or 1.0)
    legend_lines = math.ceil((len(curves) + (band is not None)) / 2)
    height = HEIGHT + LEGEND_ROW * legend_lines
    x_of = _scale(0.0, max(len(points) - 1, 1), LEFT, WIDTH - RIGHT)
    y_of = _scale(low - pad, high + pad, HEIGHT - BOTTOM, TOP)
    xs = [x_of(i) for i in range(len(points))]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="sweep-curve" viewBox="0 0 {WIDTH} {height}" '
             f'width="100%" style="max-width:{WIDTH}px;font:10px sans-serif" role="img" '
             f'aria-label="{html.escape(axis_name)} over the swept margins">',
             f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{HEIGHT - TOP - BOTTOM}" '
             'fill="#f8fafc" stroke="#cbd5e1"/>']
    parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y_of(0.0):.1f}" y2="{y_of(0.0):.1f}" '
                 'stroke="#94a3b8" stroke-dasharray="2,2"/>')
    if band is not None:
        for run in _runs(band.low):
            outline = [(xs[i], band.high[i]) for i in run] + [(xs[i], band.low[i]) for i in reversed(run)]
            parts.append('<polygon points="' + " ".join(f"{x:.1f},{y_of(y):.1f}" for x, y in outline)
                         + f'" fill="{NOISE_FILL}" stroke="none"/>')
        for run in _runs(band.mean):
            parts.append(_polyline([(xs[i], band.mean[i]) for i in run], y_of, NOISE_LINE, NOISE_DASH))
    for k, curve in enumerate(curves):
        for run in _runs(curve.values):
            parts.append(_polyline([(xs[i], curve.values[i]) for i in run], y_of, PALETTE[k % len(PALETTE)],
                                   REPEAT_DASH if k >= len(PALETTE) else ""))
    for x, point in zip(xs, points):
        parts.append(f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 13}" text-anchor="middle" fill="#475569">'
                     f'{point.margin:g}</text>')
    for value in (low, high):
        parts.append(f'<text x="{LEFT - 3}" y="{y_of(value) + 3:.1f}" text-anchor="end" fill="#475569">'
                     f'{value:.{digits}f}</text>')
    parts += [f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - BOTTOM + 27}" text-anchor="middle" '
              'fill="#0f172a">margin of the teacher’s recourse (evenly spaced)</text>',
              f'<text x="10" y="{(TOP + HEIGHT - BOTTOM) / 2}" transform="rotate(-90 10 {(TOP + HEIGHT - BOTTOM) / 2})" '
              f'text-anchor="middle" fill="#0f172a">{html.escape(axis_name)}</text>']
    entries = ([(f"noise draws ({len(band.draws)})", NOISE_LINE, NOISE_DASH)] if band else []) + \
        [(curve.name, PALETTE[k % len(PALETTE)], REPEAT_DASH if k >= len(PALETTE) else "")
         for k, curve in enumerate(curves)]
    for k, (name, colour, dashes) in enumerate(entries):
        x, y = LEFT + (k % 2) * (WIDTH - LEFT - RIGHT) / 2, HEIGHT + LEGEND_ROW * (k // 2) + 4
        dash = f' stroke-dasharray="{dashes}"' if dashes else ""
        parts.append(f'<line x1="{x:.1f}" x2="{x + 14:.1f}" y1="{y - 3}" y2="{y - 3}" stroke="{colour}" '
                     f'stroke-width="2"{dash}/>')
        parts.append(f'<text x="{x + 18:.1f}" y="{y}" fill="#0f172a">{html.escape(name)}</text>')
    return "".join(parts) + "</svg>"


def _polyline(segment: list[tuple[float, float]], y_of, colour: str, dashes: str = "") -> str:
    points = " ".join(f"{x:.1f},{y_of(y):.1f}" for x, y in segment)
    dash = f' stroke-dasharray="{dashes}"' if dashes else ""
    return f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"{dash}/>'


def curve_charts(points: list[SweepPoint]) -> str:
    """The three metrics' charts, one after another in one HTML block (one line, so that
    markdown passes it through whole); empty where :func:`curves_section` is."""
    if not points or not has_noise_spread(points):
        return ""
    return '<div class="sweep-curves">' + "".join(curve_svg(points, metric) for metric in CURVE_METRICS) + "</div>"
