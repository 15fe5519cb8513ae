"""An audit as HTML: the predictions chart, the value cards, and the one-page report.

Shared by the app (which shows the pieces) and the export (which files the whole page),
so that both say the same thing. Plain HTML with inline styles and images as data URIs:
the report is one self-contained file that opens offline.
"""

from __future__ import annotations

import datetime
import html
import json
import re
from typing import TYPE_CHECKING

from recourse.audit.edit_path import divergence_sentence
from recourse.audit.image_noise_floor import BOUNDARY_LOGIT
from recourse.audit.instruments import JudgeView
from recourse.audit.verdict import EDIT_KINDS, NO_CHECKS, Checks, artifact_says, failed, judge_says, sizes_withheld
from recourse.data import ATTRIBUTES
from recourse.render.methods import method_summary
from recourse.render.path_plot import path_svg
from recourse.render.pictures import DISPLAY_SIZE, audit_pictures, display_pictures, png_data_uri

if TYPE_CHECKING:  # the result this renders imports this module to save itself
    from recourse.audit.result import AuditResult, Predictions
    from recourse.generation.spaces.artifacts import ArtifactCheck

# (key, plain label, symbol, one-line meaning): the value cards, in order. The label is what a card
# shows; the symbol (docs/metrics.md) is its tooltip; the key is the export's, unchanged.
CARDS: tuple[tuple[str, str, str, str], ...] = (
    ("teacher_valid", "Full-precision model accepts its own edit", "V_f(x'_f)",
     "Does the full-precision model accept its own recourse (decide the target on it)?"),
    ("student_accepts_teacher", "Compressed model accepts the full-precision edit", "V_g(x'_f)",
     "Does the compressed model accept the full-precision model's recourse?"),
    ("student_valid", "Compressed model accepts its own edit", "V_g(x'_g)",
     "Does the compressed model accept the recourse it guided itself?"),
    ("teacher_cost", "Size of the full-precision edit", "cost c_f",
     "Mean absolute pixel change of the full-precision recourse (0-1 scale)."),
    ("student_cost", "Size of the compressed model's edit", "cost c_g",
     "Mean absolute pixel change of the compressed model's recourse."),
    ("crg", "Size gap (CRG)", "CRG_i", "|c_g - c_f| / c_f: how much the two recourses differ in cost (0 = equal)."),
    ("dirsim", "Direction match (DirSim)", "DirSim_i",
     "100 · cos of the two changes x' - x: same direction = 100, unrelated = 0."),
)

# The robust judge's cards: does a model that low-amplitude edits do not move see the change?
JUDGE_CARDS: tuple[tuple[str, str, str, str], ...] = (
    ("teacher", "Robust judge on the full-precision edit", "judge on x'_f",
     "Does the independent robust judge see the attribute change in the full-precision recourse? (It never guides "
     "one.)"),
    ("student", "Robust judge on the compressed edit", "judge on x'_g",
     "Does the robust judge see the attribute change in the compressed model's recourse?"),
)

# The stronger judge (radius 3) beside the first, and identity: is each recourse still the same person?
STRONG_JUDGE_CARDS: tuple[tuple[str, str, str, str], ...] = (
    ("teacher", "Stronger judge on the full-precision edit", "strong judge on x'_f",
     "Does the stronger robust judge (radius 3, trained apart from the guide) see the change in the full-precision "
     "recourse?"),
    ("student", "Stronger judge on the compressed edit", "strong judge on x'_g",
     "Does the stronger robust judge see it in the compressed model's recourse?"),
)
IDENTITY_CARDS: tuple[tuple[str, str, str, str], ...] = (
    ("teacher", "Same person after the full-precision edit", "same person in x'_f",
     "dlib's face-descriptor distance to the face; the same person at 0.6 or less (dlib's threshold, FVA's). It "
     "never guides."),
    ("student", "Same person after the compressed edit", "same person in x'_g",
     "The same for the compressed model's recourse."),
)

# Every card's plain label, in the order shown.
CARD_TITLES: tuple[str, ...] = tuple(label for cards in (CARDS, JUDGE_CARDS, STRONG_JUDGE_CARDS, IDENTITY_CARDS)
                                     for _, label, _, _ in cards)

# Where a stop came from, as AuditStops records it: "<file> (<n> <split> faces|tasks, <date>)"
_RUN = re.compile(r"\((\d+) (\w+) (faces|tasks)\b[^)]*\)")
_SPLITS = {"val": "validation", "train": "training", "test": "test"}
_FILE = re.compile(r"\(?\bno \S+\.json\)?|\S+\.json")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

_GOOD, _BAD, _NEUTRAL = "#dcfce7", "#fee2e2", "#f3f4f6"


def audit_record(result: AuditResult) -> dict:
    """The audit's values and its pictures (PNG data URIs): the JSON export of the app and the CLI."""
    return {**result.to_dict(),
            "images": {name: png_data_uri(picture) for name, picture in audit_pictures(result).items()}}


def decided(probability: float, digits: int) -> str:
    """``probability`` to ``digits`` places, with the decision it implies where the rounding
    hides it: a quantized model's logit is often exactly 0, p = 0.500, which decides 1."""
    shown = f"{probability:.{digits}f}"
    if float(shown) == 0.5:
        return f"{shown}→{int(probability >= 0.5)}"
    return shown


def _bar(probability: float, colour: str) -> str:
    return (f'<span style="white-space:nowrap"><span style="background:#e5e7eb;width:70px;height:9px;'
            f'display:inline-block;vertical-align:middle"><span style="background:{colour};width:{probability * 70:.0f}px;'
            f'height:9px;display:block"></span></span> <span style="font-family:monospace">{decided(probability, 2)}'
            '</span></span>')


def predictions_chart(predictions: Predictions, student_name: str = "compressed") -> str:
    """Both models' probabilities side by side, of the attributes both predict (all 40 for the
    project's models); rows whose decisions differ highlighted."""
    diverging = set(predictions.diverging)
    shown = predictions.attributes
    rows = []
    for i, name in enumerate(ATTRIBUTES):
        if name not in shown:
            continue
        teacher, student = float(predictions.teacher_probabilities[i]), float(predictions.student_probabilities[i])
        background = "#fde68a" if name in diverging else ("#e0f2fe" if name == predictions.attribute else "transparent")
        label = html.escape(name.replace("_", " "))
        if name == predictions.attribute:
            label = f"<b>{label}</b> (audited)"
        if name in diverging:
            label += ' <b style="color:#b45309">decisions differ</b>'
        cell = 'style="padding:0 4px;border:none"'
        rows.append(f'<tr style="background:{background}"><td {cell}>{label}</td>'
                    f'<td {cell}>{_bar(teacher, "#2563eb")}</td><td {cell}>{_bar(student, "#db2777")}</td></tr>')
    summary = (f"{len(diverging)} of {len(shown)} decisions differ: {html.escape(', '.join(predictions.diverging))}"
               if diverging else f"The two models agree on all {len(shown)} decisions.")
    caption = ("" if len(shown) == len(ATTRIBUTES) else
               f'<p style="font-size:12px">Only the {len(shown)} attributes both models predict are shown; at least '
               f"one of the two does not predict the other {len(ATTRIBUTES) - len(shown)} of CelebA's 40.</p>")
    return (f'<div class="predictions-chart"><p><b>{summary}</b></p>{caption}'
            f'<table style="border-collapse:collapse;font-size:12px;line-height:1.25"><tr><th align="left">attribute</th>'
            f'<th align="left">full precision p</th><th align="left">{html.escape(student_name)} p</th></tr>'
            + "".join(rows) + "</table></div>")


def _card_value(result: AuditResult, key: str) -> tuple[str, str]:
    """The shown value and the card's colour."""
    r = result.recourse
    value = getattr(r, key)
    if isinstance(value, bool):
        return ("valid ✓", _GOOD) if value else ("not valid ✗", _BAD)
    if value is None:
        return "undefined: " + html.escape(r.reason), _NEUTRAL
    if key in ("crg", "dirsim") and not result.compared:  # noise, not a finding (image_noise_floor.NOISE_FLOOR_COST)
        why = "on the boundary" if abs(result.face_logit) < BOUNDARY_LOGIT else "below the noise floor"
        return f"not compared: {why}", _NEUTRAL
    if key == "dirsim":
        return f"{value:.1f}", _NEUTRAL
    return f"{value:.4f}" if key.endswith("cost") else f"{value:.3f}", _NEUTRAL


# Short values in the cards; what "not counted" means is in the card's small print.
_JUDGE_CARD = {"yes": ("sees it ✓", _GOOD), "no": ("sees no change ✗", _BAD),
               "not counted": ("not counted", _NEUTRAL), "no judge": ("no judge", _NEUTRAL),
               "failed check": ("does not count ✗", _BAD)}
_STRUCK = " Does not count: this edit failed the artifact check."
# the evidence table's caption where an edit failed its check
_STRUCK_MARKS = "; an instrument's ✓ on an edit that failed the artifact check is shown ✗: it does not count"
_JUDGE_NOTE = {"not counted": " Not counted: it saw the target on the face already.", "failed check": _STRUCK}


def strong_judge_says(result: AuditResult, model: str) -> str:
    """:func:`recourse.audit.verdict.judge_says` for the stronger judge, or why it is absent ("not trained")."""
    if result.strong_judge is None:
        return result.missing.get("strong_judge", "no judge")
    return judge_says(result.strong_judge, model, _check(result, model))


def identity_says(result: AuditResult, model: str) -> tuple[str, str]:
    """The identity card's value and colour: "kept ✓ 0.31", "changed ✗ 0.74", "does not count ✗
    0.31" (the edit failed its artifact check), or why not measured."""
    identity = result.identity
    if identity is None:
        return "not measured: " + html.escape(result.missing.get("identity", "no face descriptor")), _NEUTRAL
    distance = getattr(identity, f"{model}_distance")
    if failed(_check(result, model)):
        return f"does not count ✗ {distance:.2f}", _BAD
    return (f"kept ✓ {distance:.2f}", _GOOD) if identity.kept(model) else (f"changed ✗ {distance:.2f}", _BAD)


def _checks(result: AuditResult) -> Checks:
    # a stand-in that holds only what the cards read (no check, no edit kind) renders as before
    return getattr(result, "artifacts", NO_CHECKS)


def _check(result: AuditResult, model: str) -> ArtifactCheck | None:
    """The ``"teacher"``'s or the ``"student"``'s artifact check (None where none was made)."""
    return _checks(result)[("teacher", "student").index(model)]


def edit_note(result: AuditResult) -> str:
    """Which edit the recourses are, as a parenthesis (" (the model's pixel edit)"); "" for a walk."""
    words = EDIT_KINDS.get(getattr(result, "edit_kind", ""))
    return f" ({words})" if words else ""


def artifact_lines(result: AuditResult) -> str:
    """A short line per model: which edit its picture is and its artifact check (the report's;
    on the screen the verdict says a failed check and the struck cards show it)."""
    lines = []
    for model, picture in (("teacher", "Full precision x'_f"), ("student", "Compressed x'_g")):
        check = _check(result, model)
        if check is not None:
            colour = "#b91c1c" if failed(check) else "#374151"
            lines.append(f'<div class="artifact-check" style="font-size:12px;color:{colour}">'
                         f"{html.escape(picture + edit_note(result))}: {html.escape(artifact_says(check))}</div>")
    return "".join(lines)


def value_cards(result: AuditResult, every_check: bool = False) -> str:
    """The cards: each a plain label (its symbol in a tooltip), a short value and its meaning;
    under them, the artifact checks (:func:`artifact_lines`)."""
    entries = [(label, symbol, meaning, *_card_value(result, key)) for key, label, symbol, meaning in CARDS]
    for model, label, symbol, meaning in JUDGE_CARDS:
        says = judge_says(result.judge, model, _check(result, model))
        entries.append((label, symbol, meaning + _JUDGE_NOTE.get(says, ""), *_JUDGE_CARD[says]))
    for model, label, symbol, meaning in STRONG_JUDGE_CARDS:
        says = strong_judge_says(result, model)
        value, colour = _JUDGE_CARD.get(says, (html.escape(says), _NEUTRAL))  # e.g. "not trained"
        entries.append((label, symbol, meaning + _JUDGE_NOTE.get(says, ""), value, colour))
    for model, label, symbol, meaning in IDENTITY_CARDS:
        struck = _STRUCK if failed(_check(result, model)) else ""
        entries.append((label, symbol, meaning + struck, *identity_says(result, model)))
    cards = []
    for label, symbol, meaning, value, colour in entries:
        # compact: a short value in 15 px, the meaning in small print, so that each card stays a few lines high
        cards.append(f'<div class="value-card" style="background:{colour};border-radius:8px;padding:6px 8px;'
                     f'min-width:110px;flex:1 1 110px"><div style="font-size:12px;color:#374151">'
                     f'<abbr title="{html.escape(symbol)}" style="text-decoration:none;cursor:help">'
                     f'{html.escape(label)}</abbr>'
                     f'</div><div style="font-size:15px;font-weight:600;line-height:1.3">{value}</div>'
                     f'<div style="font-size:11px;line-height:1.3;color:#4b5563">{html.escape(meaning)}</div></div>')
    return ('<div style="display:flex;flex-wrap:wrap;gap:6px">' + "".join(cards) + "</div>"
            + (artifact_lines(result) if every_check else ""))


def attribution_table(result: AuditResult) -> str:
    rows = []
    for a in result.attributions:
        spearman = "undefined" if a.spearman is None else f"{a.spearman:.3f}"
        rows.append(f"<tr><td>{html.escape(a.method)}</td><td>{a.student_model}</td><td>{spearman}</td>"
                    f"<td>{a.top_iou:.3f}</td></tr>")
    return ('<div class="attribution-scroll"><table class="attribution-table" style="font-size:13px"><tr><th align="left">method</th>'
            '<th align="left">student form explained</th><th align="left">Spearman ρ of the maps</th>'
            '<th align="left">top-10% IoU</th></tr>' + "".join(rows) + "</table></div>"
            '<p style="font-size:12px">Red: pixels that raise the attribute\'s logit; blue: pixels that lower it. '
            "ρ = 1 and IoU = 1 mean the two models look at the same pixels.</p>")


def judge_reading_rows(result: AuditResult) -> str:
    """One row per calibrated judge: its score on x, x'_f and x'_g, ✓ where it puts the face in
    the target class at its threshold, and what it was trained on."""
    if not result.judge_readings:
        why = result.missing.get("judge_readings")
        return "" if why is None else f"<tr><td>judges trained elsewhere</td><td colspan='3'>{html.escape(why)}</td></tr>"

    def cell(reading, score: float, model: str | None = None) -> str:
        seen = reading.sees(score)
        counted = seen and not (model and failed(_check(result, model)))  # a failed check strikes the tick
        shown = "no face found" if seen is None else f"{score:.3g} {'✓' if counted else '✗'}"
        return f"<td style='padding:2px 8px'>{shown}</td>"

    rows = []
    for reading in result.judge_readings:
        kind = "" if reading.independent else " — trained on the classifier's faces"
        label = (f"{html.escape(reading.judge)}<br><span style='color:#6b7280;font-size:11px'>trained on "
                 f"{html.escape(reading.trained_on)}{kind}; threshold {reading.threshold:.3g}</span>")
        rows.append(f"<tr><td>{label}</td>{cell(reading, reading.on_face)}"
                    f"{cell(reading, reading.on_teacher_counterfactual, 'teacher')}"
                    f"{cell(reading, reading.on_student_counterfactual, 'student')}"
                    "</tr>")
    return "".join(rows)


def readings_table(result: AuditResult) -> str:
    """The calibrated judges' rows as a table of their own, under the models' evidence."""
    rows = judge_reading_rows(result)
    if not rows:
        return ""
    return ('<table class="judge-readings" style="font-size:13px;border-collapse:collapse;margin-top:6px">'
            '<tr><th align="left">judges trained on other faces (never guide)</th><th align="left">face x</th>'
            '<th align="left">x\'_f</th><th align="left">x\'_g</th></tr>' + rows + "</table>")


def evidence_table(result: AuditResult, student_name: str = "compressed") -> str:
    """Each model's probability of the attribute on the face and on both recourses, and the
    student's logit: how far each decision is from the boundary (0)."""
    p, after, logits = result.predictions, result.probabilities_after, result.student_logits
    index = ATTRIBUTES.index(p.attribute)
    wanted = "present" if p.target else "absent"

    def cell(probability: float, logit: float | None = None, model: str | None = None) -> str:
        decision = int(probability >= 0.5) if logit is None else int(logit >= 0)
        # an instrument's tick on an edit that failed the artifact check does not count
        mark = "✓" if decision == p.target and not (model and failed(_check(result, model))) else "✗"
        # the decision is spelled out beside the compressed model's logit, which sits on a grid
        # and is often exactly 0 (p = 0.500, decided 1), and wherever p rounds to 0.500
        if logit is not None:
            extra = f"logit {'0' if logit == 0 else f'{logit:+.2f}'} → decides {decision}"
        elif f"{probability:.3f}" == "0.500":
            extra = f"decides {decision}"
        else:
            extra = ""
        extra = f"<br><span style='color:#6b7280;font-size:11px'>{extra}</span>" if extra else ""
        return f"<td style='padding:2px 8px'>{probability:.3f} {mark}{extra}</td>"

    teacher_row = (cell(float(p.teacher_probabilities[index])) + cell(after["teacher_on_teacher_counterfactual"])
                   + cell(after["teacher_on_student_counterfactual"]))
    student_row = (cell(float(p.student_probabilities[index]), logits["original"])
                   + cell(after["student_on_teacher_counterfactual"], logits["teacher_counterfactual"])
                   + cell(after["student_on_student_counterfactual"], logits["student_counterfactual"]))
    def judge_row(judge: JudgeView | None, name: str, missing: str | None) -> str:
        if judge is None:  # said, not hidden: the stronger judge may not be trained yet
            return "" if missing is None else f"<tr><td>{name}</td><td colspan='3'>{html.escape(missing)}</td></tr>"
        return (f"<tr><td>{name}</td>{cell(judge.on_face)}"
                f"{cell(judge.on_teacher_counterfactual, None, 'teacher')}"
                f"{cell(judge.on_student_counterfactual, None, 'student')}</tr>")

    judge_rows = (judge_row(result.judge, "robust judge (never guides; trained on CelebA-HQ, like the classifier)", None)
                  + judge_row(result.strong_judge, "stronger judge, radius 3 (never guides; CelebA-HQ)",
                              result.missing.get("strong_judge")))
    identity = result.identity
    if identity is None:
        why = result.missing.get("identity")
        identity_row = "" if why is None else f"<tr><td>dlib distance to x</td><td colspan='3'>{html.escape(why)}</td></tr>"
    else:
        def distance(model: str) -> str:
            value = getattr(identity, f"{model}_distance")
            kept = identity.kept(model) and not failed(_check(result, model))
            return f"<td style='padding:2px 8px'>{value:.3f} {'✓' if kept else '✗'}</td>"
        identity_row = (f"<tr><td>dlib distance to x (same person ≤ {identity.threshold:g})</td>"
                        f"<td style='padding:2px 8px'>0</td>{distance('teacher')}{distance('student')}</tr>")
    return (f'<div style="overflow-x:auto"><table class="evidence-table" style="font-size:13px;border-collapse:collapse">'
            f'<tr><th align="left">p({html.escape(p.attribute)}) on</th><th align="left">face x</th>'
            f'<th align="left">x\'_f (full precision)</th><th align="left">x\'_g (compressed)</th></tr>'
            f'<tr><td>full precision</td>{teacher_row}</tr>'
            f'<tr><td>{html.escape(student_name)}</td>{student_row}</tr>{judge_rows}{identity_row}</table>'
            f'{readings_table(result)}</div>'
            f'<p style="font-size:12px">Target: attribute {wanted} (✓ = the model decides the target; on the dlib '
            f'row, ✓ = still the same person{_STRUCK_MARKS if any(map(failed, _checks(result))) else ""}). '
            f'{html.escape(stops_sentence(result))}</p>')


def plain_source(source: str) -> str:
    """Where a stop came from, for a person: the faces it was chosen on, never the file or the
    date (those stay in the export's ``settings.stops``)."""
    run = _RUN.search(source)
    if run:
        count, split, kind = run.groups()
        return f"chosen on {count} {_SPLITS.get(split, split)} {kind}"
    if "not chosen yet" in source:
        return "not chosen yet: the generator's default"
    return " ".join(_DATE.sub("", _FILE.sub("", source)).split()).strip(" ,;:()")


def stops_sentence(result: AuditResult) -> str:
    """Where the faces above and the cards were read, for a person."""
    stops = result.settings.stops
    margin = result.settings.counterfactual.margin
    if stops is None:
        return (f"Each recourse was guided until its own model's logit was {margin:g} past the boundary (margin "
                f"{margin:g}; 0 = the smallest change that flips the decision).")
    numbers = (f"the benchmark's validated margin {stops.benchmark:g}" if stops.numbers_at == "benchmark"
               else "the boundary (margin 0, mostly noise)")
    return (f"Each model edits the face once; the faces above are shown where its deciding model is {stops.visible:g} "
            f"logits past the boundary (the visible stop; {plain_source(stops.visible_source)}); the validity, size, "
            f"size gap and direction match cards are read on the same edits at {numbers}.")


def stops_summary(result: AuditResult) -> str:
    """Where the picture and the numbers were read, in words (the status line: no file, no date)."""
    stops = result.settings.stops
    if stops is None:
        return f"margin {result.settings.counterfactual.margin:g}"
    numbers = (f"the benchmark's validated margin {stops.benchmark:g}" if stops.numbers_at == "benchmark"
               else "the boundary (margin 0)")
    return (f"pictures at the visible stop, margin {stops.visible:g} ({plain_source(stops.visible_source)}); "
            f"per-image numbers at {numbers}; each edit aimed past {result.settings.edit_config.margin:g}")


def paths_html(result: AuditResult) -> str:
    """Both recourse paths: each model's edit with both models' logits along it."""
    if not result.paths:
        return ""
    name = result.predictions.variant
    compared = not sizes_withheld(result.recourse, result.face_logit)
    blocks = "".join(f'<figure style="display:inline-block;margin:4px;vertical-align:top;max-width:400px">'
                     f'{path_svg(path, name, sizes_compared=compared)}<figcaption style="font-size:12px">'
                     f'{html.escape(divergence_sentence(path, name, compared))}</figcaption></figure>'
                     for path in result.paths)
    return (f'<h2>The recourse paths</h2><div class="recourse-paths">{blocks}</div>'
            + "".join(path_judges_table(path, name) for path in result.paths))


def path_judges_table(path, student_name: str) -> str:
    """The judges trained on other faces along one path: their scores at every judged point."""
    if not path.judge_scores:
        return ""
    whose = "the full-precision model's edit" if path.guided_by == "teacher" else f"{student_name}'s edit"
    head = "".join(f"<th style='padding:0 6px'>{alpha:.0%}</th>" for alpha in path.judged_alphas)
    rows = "".join(f"<tr><td>{html.escape(judge)}</td>" + "".join(
        f"<td style='padding:0 6px'>{'—' if value != value else f'{value:.3g}'}</td>" for value in values) + "</tr>"
                   for judge, values in path.judge_scores.items())
    return (f'<table style="font-size:12px;border-collapse:collapse;margin:4px 0"><caption style="text-align:left">'
            f'Judges trained on other faces along {html.escape(whose)} (their scores; — : no face found)</caption>'
            f'<tr><th align="left">share of the edit</th>{head}</tr>{rows}</table>')


def report_html(result: AuditResult, source: str = "") -> str:
    """The whole audit on one self-contained page."""
    p = result.predictions
    pictures = {name: png_data_uri(picture) for name, picture in display_pictures(result).items()}

    def figure(name: str, caption: str) -> str:
        return (f'<figure style="display:inline-block;margin:4px;text-align:center"><img src="{pictures[name]}" '
                f'width="{DISPLAY_SIZE}"><figcaption style="font-size:12px">{html.escape(caption)}</figcaption></figure>')

    target = f"{p.target} ({'present' if p.target else 'absent'})"
    record = {k: v for k, v in result.to_dict().items() if k != "images"}
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>Recourse audit: {html.escape(p.attribute)}, {html.escape(p.variant)}</title></head>
<body style="font-family:sans-serif;max-width:1100px;margin:auto">
<h1>Recourse audit</h1>
<p>Variant <b>{html.escape(p.variant)}</b> against the full-precision classifier; attribute <b>{html.escape(p.attribute)}</b>,
target {target}; seed {result.seed}; method {html.escape(method_summary(result.settings.counterfactual, p.attribute))}; {html.escape(stops_summary(result))}. {html.escape(source)} Made {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC.
Metric definitions: docs/metrics.md in the recourse-audit repository.</p>
<h2>Verdict</h2><p style="font-size:18px">{html.escape(result.verdict)}</p>
{value_cards(result, every_check=True)}
<h2>Face and recourses</h2>
{figure("aligned", "input (" + p.alignment + ")")}{figure("teacher_counterfactual", "full-precision recourse x'_f" + edit_note(result))}
{figure("student_counterfactual", "compressed recourse x'_g" + edit_note(result))}<br>
{figure("teacher_difference", "x'_f - x (red brighter, blue darker)")}{figure("student_difference", "x'_g - x")}
{evidence_table(result, p.variant)}
{paths_html(result)}
<h2>Attributions</h2>
{figure("integrated-gradients_teacher", "IntegratedGradients, full precision")}{figure("integrated-gradients_student", "IntegratedGradients, fake-quantized twin")}
{figure("occlusion_teacher", "Occlusion, full precision")}{figure("occlusion_student", f"Occlusion, {result.student_model} model")}
{attribution_table(result)}
<h2>Predictions</h2>
{predictions_chart(p, p.variant)}
<h2>All values</h2>
<pre style="font-size:11px;white-space:pre-wrap">{html.escape(json.dumps(record, indent=1))}</pre>
</body></html>
"""
