"""The recourse path drawn as a small inline SVG: both models' logits along one model's edit,
signed so that up is toward the target, the stops' margins as dashed lines, where each
decision flips, and the point the viewer is looking at. SVG, not a plotting library: it goes
into the app, the HTML export and the README unchanged."""

from __future__ import annotations

import html

from recourse.audit.edit_path import RecoursePath, divergence_sentence

WIDTH, HEIGHT = 380, 210
# 12 user units: drawn at 11 px or more down to a plot 348 px wide (a 390-px phone, app.css)
FONT_PX = 12
LEFT, RIGHT, TOP, BOTTOM = 40, 16, 14, 40  # room for the axes' labels (RIGHT: half the last tick's "100%")
TEACHER_COLOUR, STUDENT_COLOUR = "#2563eb", "#db2777"  # as in the predictions chart
STOP_LABELS = {"boundary": "boundary", "benchmark": "benchmark margin", "visible": "visible stop"}


def _scale(low: float, high: float, out_low: float, out_high: float):
    span = (high - low) or 1.0
    return lambda value: out_low + (value - low) / span * (out_high - out_low)


def path_svg(path: RecoursePath, student_name: str, shown_alpha: float | None = None,
             sizes_compared: bool = True) -> str:
    """The plot of one path; ``shown_alpha`` marks the image shown beside it; ``sizes_compared``
    as in :func:`recourse.audit.edit_path.divergence_sentence` (its spoken label)."""
    sign = 1.0 if path.target == 1 else -1.0
    teacher = [sign * v for v in path.teacher_logits]
    student = [sign * v for v in path.student_logits]
    margins = list(path.margins.values())
    low, high = min(*teacher, *student, 0.0), max(*teacher, *student, *margins, 0.0)
    pad = 0.08 * ((high - low) or 1.0)
    x_of = _scale(0.0, 1.0, LEFT, WIDTH - RIGHT)
    y_of = _scale(low - pad, high + pad, HEIGHT - BOTTOM, TOP)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="recourse-path" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="100%" style="max-width:{WIDTH}px;font:{FONT_PX}px sans-serif" role="img" '
             f'aria-label="{html.escape(divergence_sentence(path, student_name, sizes_compared))}">',
             f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{HEIGHT - TOP - BOTTOM}" '
             'fill="#f8fafc" stroke="#cbd5e1"/>']
    for name, margin in path.margins.items():
        y = y_of(margin)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#64748b" '
                     f'stroke-dasharray="{"2,2" if margin == 0 else "5,3"}"/>')
        parts.append(f'<text x="{WIDTH - RIGHT - 2}" y="{y - 2:.1f}" text-anchor="end" fill="#475569">'
                     f'{html.escape(STOP_LABELS.get(name, name))} {margin:g}</text>')
    for values, colour in ((teacher, TEACHER_COLOUR), (student, STUDENT_COLOUR)):
        points = " ".join(f"{x_of(a):.1f},{y_of(v):.1f}" for a, v in zip(path.alphas, values))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
    for flip, colour in ((path.teacher_flip, TEACHER_COLOUR), (path.student_flip, STUDENT_COLOUR)):
        if flip is not None:
            parts.append(f'<circle cx="{x_of(flip):.1f}" cy="{y_of(0.0):.1f}" r="4" fill="white" stroke="{colour}" '
                         'stroke-width="2"/>')
    for name, alpha in path.stops.items():
        if alpha is not None:
            x = x_of(alpha)
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{HEIGHT - BOTTOM}" y2="{HEIGHT - BOTTOM + 5}" '
                         'stroke="#0f172a"/>')
    if shown_alpha is not None:
        x = x_of(shown_alpha)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" stroke="#0f172a" '
                     'stroke-width="1.5" opacity="0.6"/>')
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<text x="{x_of(tick):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" '
                     f'fill="#475569">{tick:.0%}</text>')
    parts += [f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 6}" text-anchor="middle" fill="#0f172a">'
              f'share of {"the full-precision" if path.guided_by == "teacher" else html.escape(student_name) + "’s"}'
              f'{" model’s" if path.guided_by == "teacher" else ""} edit</text>',
              f'<text x="10" y="{(TOP + HEIGHT - BOTTOM) / 2}" transform="rotate(-90 10 {(TOP + HEIGHT - BOTTOM) / 2})" '
              'text-anchor="middle" fill="#0f172a">logit toward the target</text>',
              f'<text x="{LEFT + 4}" y="{TOP + FONT_PX + 1}" fill="{TEACHER_COLOUR}">full precision</text>',
              f'<text x="{LEFT + 4}" y="{TOP + 2 * FONT_PX + 3}" fill="{STUDENT_COLOUR}">'
              f'{html.escape(student_name)}</text>',
              "</svg>"]
    return "".join(parts)
