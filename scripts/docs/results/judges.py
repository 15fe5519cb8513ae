"""The independent judges on the quality page: their calibration, ceilings and the visible stop.

What each judge gives real faces (its calibration and ceilings) and what it says about a
counterfactual run (seen rates beside those ceilings, shifts), judges trained on other faces
first and the project's CelebA-trained judges as secondary columns. Drawn from the committed
files only (``scripts/docs/results/quality.py`` puts it on ``docs/results/quality.md``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

CALIBRATION = "independent-judges-test.json"
# Each committed baseline: scripts.measurements.judge_counterfactuals on a run's saved counterfactuals.
BASELINES = ("independent-judges-baseline-m10.json", "independent-judges-baseline-m2.json")
# The visible stop's validation runs (scripts/measurements/visible_stop.py): the default, then the edits
# confined to the attribute's region and cut by the model's own gradient, measured alike.
VISIBLE_STOP_RUNS = (("edits over the frame (the rule's run; the edits until the region choice)", "visible-stop-val.json"),
                     ("every edit confined to its region, the frame's budget", "visible-stop-val-region.json"),
                     ("region cut to half by the model's gradient (MaskDiME)", "visible-stop-val-adaptive.json"),
                     ("every edit confined, 48 steps at learning rate 0.03", "visible-stop-val-region48.json"),
                     ("the mouth confined, 24 steps at 0.06", "visible-stop-val-region24-lr06.json"),
                     ("the mouth confined, 32 steps at 0.045", "visible-stop-val-region32-lr045.json"),
                     ("eyes and hair confined, 48 steps at 0.03 (today's default for local attributes)",
                      "visible-stop-val-region48-local.json"),
                     ("eyes and hair over the frame", "visible-stop-val-off-local.json"))
AT_STOP = 10.0  # the per-attribute rows are read at the visible stop
CALIBRATE_COMMAND = ("python -m scripts.measurements.calibrate_judges --data ../shared/data/celeba-hq-64 "
                     "--json assets/results/independent-judges-test.json")

Loader = Callable[[str], "dict | None"]


def _not_yet(what: str, *commands: str) -> list[str]:
    return [f"_{what}: not measured yet._ It comes from:", "", "```bash", *commands, "```", ""]


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def calibration_table(record: dict) -> list[str]:
    rows = sorted(record["judges"], key=lambda row: not row["independent"])
    trained = {row["judge"]: (row["trained_on"], row["independent"]) for row in rows}
    lines = [f"- **{judge}**: {'' if independent else 'trained on the same faces as the classifier: '}{what}"
             for judge, (what, independent) in trained.items()]
    lines += ["", "| judge | attribute | AUC (val) | balanced accuracy % | ceiling: present % | ceiling: absent % | "
              "faces found % | used |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        used = "yes" if row["usable"] else f"no (AUC < {record['min_auc']})"
        lines.append(f"| {row['judge']} | {row['attribute']} | {row['auc']:.3f} ({row['val_auc']:.3f}) | "
                     f"{_percent(row['balanced_accuracy'])} | {_percent(row['tpr'])} | {_percent(row['tnr'])} | "
                     f"{_percent(row['found'])} | {used} |")
    return lines + [""]


def _seen(row: dict) -> str:
    if not row["n"]:
        return f"no face found ({row['missing']})"
    return (f"{_percent(row['seen_rate'])} [{_percent(row['seen_low'])}, {_percent(row['seen_high'])}] "
            f"of {_percent(row['ceiling'])}")


def _shift(row: dict) -> str:
    return "—" if not row["n"] else f"{row['shift']:+.2f} [{row['shift_low']:+.2f}, {row['shift_high']:+.2f}]"


def baseline_table(record: dict) -> list[str]:
    """One row per attribute, target and independent judge; the CelebA-trained judges' seen
    rates of the same counterfactuals as the last columns."""
    verdicts = record["verdicts"]
    secondary = sorted({row["judge"] for row in verdicts if not row["independent"]})
    head = ("| attribute | → target | judge (trained on other faces) | tasks | seen % [95%] of its ceiling % | "
            "seen / ceiling | shift [95%] | " + " | ".join(f"{name}: seen % of ceiling" for name in secondary) + " |")
    lines = [head, "|---|---:|---|---:|---:|---:|---:|" + "---:|" * len(secondary)]
    for row in (row for row in verdicts if row["independent"]):
        same = {other["judge"]: other for other in verdicts if not other["independent"]
                and (other["attribute"], other["target"]) == (row["attribute"], row["target"])}
        over = "—" if row["seen_over_ceiling"] is None else f"{row['seen_over_ceiling']:.2f}"
        cells = [_seen(same[name]) if name in same else "—" for name in secondary]
        lines.append(f"| {row['attribute']} | {row['target']} | {row['judge']} | {row['n']} | {_seen(row)} | {over} | "
                     f"{_shift(row)} | " + " | ".join(cells) + " |")
    return lines + [""]


def section(load: Loader) -> list[str]:
    lines = ["### Judges trained on other faces: ceilings and what they see", "",
             "The robust judges above were trained on the classifier's own faces. These judges were not (each named "
             "by what it learnt from; definitions in `docs/metrics.md`, \"Independent judges\"). A threshold per "
             "judge and attribute is chosen on validation (balanced accuracy against CelebA's labels); the test "
             "split gives its AUC and its *ceilings*: the share of real faces of each class it puts in their class, "
             "the most a counterfactual set can be expected to reach in that direction. A judge under AUC 0.80 is "
             "shown and not used. The project's CelebA-trained judges are calibrated alike and listed after them.", ""]
    calibration = load(CALIBRATION)
    if calibration is None:
        return lines + _not_yet("The independent judges' calibration", CALIBRATE_COMMAND)
    lines += ["```bash", calibration["command"], "```", "", *calibration_table(calibration)]
    short = [f"{row['judge']} on {row['attribute']} (AUC {row['auc']:.3f})" for row in calibration["judges"]
             if row["independent"] and row["auc"] < 0.85]
    if short:
        lines += ["Under AUC 0.85 on test: " + ", ".join(short) + ".", ""]
    lines += ["What they say about counterfactuals: the *seen rate* is the share of counterfactuals a judge puts in "
              "the target class, beside its ceiling for that class; the *shift* is the mean move of its score "
              "toward the target as a fraction of the gap between the two real classes' means (1.0: as far as the "
              "real difference between the classes). Wilson 95% intervals on seen rates, bootstrap on shifts.", ""]
    for name in BASELINES:
        record = load(name)
        if record is None:
            lines += _not_yet(f"The baseline {Path(name).stem}",
                              f"python -m scripts.measurements.judge_counterfactuals ... --json assets/results/{name}")
            continue
        lines += [f"#### {record['label']}: the first {record['n']} {record['split']} faces", "", "```bash",
                  *([record["run"]] if record.get("run") else []), record["command"], "```", "", *baseline_table(record)]
    return lines


def _value(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def visible_stop_section(load: Loader) -> list[str]:
    """The stops measured on validation: the judges' mean shift and seen rate over the ceiling,
    FVA, MNAC and FR at each candidate stop, for each way of editing; the rule's choice."""
    lines = ["### The visible stop and the edit's region, chosen on validation", "",
             "Each full-precision edit aims past the largest candidate; each candidate stop is the first point of "
             "its path where the classifier is that far past the boundary. The rule, fixed before the runs "
             "(`docs/metrics.md`): the smallest stop whose mean shift of the judges trained on other faces reaches "
             "0.9 of the largest. A way of editing is adopted only where it keeps FR, the shift and FVA.", ""]
    for title, name in VISIBLE_STOP_RUNS:
        record = load(name)
        if record is None:
            lines += _not_yet(f"The visible-stop run {title}",
                              f"python -m scripts.measurements.visible_stop ... --json assets/results/{name}")
            continue
        lines += [f"#### {title}: {record['n']} {record['split']} faces, chosen stop "
                  f"{_value(record['chosen_stop'], 0)}", "", "```bash", record["command"], "```", "",
                  f"(its output committed as `assets/results/{name}`; {record['seconds']:.0f} s)", "",
                  "| stop | mean shift | seen / ceiling | FVA % | MNAC | FR % |", "|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {row['stop']:g} | {_value(row['shift'], 2)} | {_value(row['seen_over_ceiling'], 2)} | "
                  f"{_value(row['fva'], 1)} | {_value(row['mnac'], 2)} | {_value(row['flip_rate'], 1)} |"
                  for row in record["summary"]]
        lines += ["", f"At stop {AT_STOP:g}, by attribute:", "", "| attribute | mean shift | FVA % | MNAC | FR % |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| {entry['attribute']} | {_value(row['shift'], 2)} | {_value(row['fva'], 1)} | "
                  f"{_value(row['mnac'], 2)} | {_value(row['flip_rate'], 1)} |"
                  for entry in record["attributes"] for row in entry["stops"] if row["stop"] == AT_STOP]
        lines.append("")
    return lines
