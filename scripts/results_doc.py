"""Write ``docs/results.md`` from the result files under ``assets/`` (nothing typed by hand).

    python -m scripts.results_doc            # rewrite docs/results.md
    python -m scripts.results_doc --check    # exit 1 if docs/results.md is not up to date

Each table comes with the command that made its file, with the options that make it do so
today where the defaults have changed since (``recourse.cli.reproduction``: a run of the cone
walk at margin 6 shows ``--counterfactual-method pca-walk-cone --margin 6``); the conclusions
are computed from the paired intervals, so the prose cannot drift from the numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from recourse.benchmark import BenchmarkResult
from recourse.cli import EARLIER_GENERATION, generation_arguments, reproduction
from recourse.names import QUALITY_ATTRIBUTES
from recourse.paths import assets_dir, project_root
from recourse.render.benchmark import latency_table
from recourse.render.benchmark import (
    PAIRED_REFERENCES, families_table, family_paired_table, markdown_table, paired_table, sweep_table,
)
from scripts import results_benchmark, results_judges

DOC = project_root() / "docs" / "results.md"
ACCURACY = ("eval-classifier-test.json", "eval-oracle-test.json", "eval-classifier-aligned.json")
ACCURACY_COMMANDS = (
    "python -m recourse evaluate --data ../shared/data/celeba-hq-64 --split test --json assets/results/eval-classifier-test.json",
    "python -m recourse evaluate --data ../shared/data/celeba-hq-64 --split test --model oracle --json assets/results/eval-oracle-test.json",
    "python -m recourse evaluate --data ../shared/data/celeba-aligned-dev --split all --no-cache --json assets/results/eval-classifier-aligned.json",
)
# Each committed quality run, named by its split and counterfactual method (settings: its record).
QUALITY = (("test · denoised (the default, σ 1.0)", "counterfactual-quality-test-denoised.json"),
           ("val · denoised (the default, σ 1.0; first 200 faces)", "counterfactual-quality-val-denoised.json"),
           ("test · denoised at σ 0.4 (the earlier setting and denoiser step 8,164; first 256 faces)",
            "counterfactual-quality-test-denoised-s04.json"),
           ("test · pca-walk-cone (the earlier default)", "counterfactual-quality-test.json"),
           ("val · pca-walk-cone", "counterfactual-quality-val.json"),
           ("test · pca-walk (ablation: no guide)", "counterfactual-quality-test-pca-walk.json"),
           ("val · pca-walk (ablation: no guide)", "counterfactual-quality-val-pca-walk.json"))
BENCHMARKS = (("test", "benchmark.json"), ("test, a second run on other faces", "benchmark-second.json"),
              ("validation: the margin sweep that chose the table's margin", "benchmark-val-sweep.json"),
              ("test, the two-model floor (a second full-precision classifier)", "benchmark-reference.json"))
STABILITY = (("The default generator (denoised, σ 1.0, margin 10, the bisected stop)", "stability-test-denoised.json"),
             ("The default generator: the same pixels in another layout, batch and order",
              "stability-test-denoised-layout.json"),
             ("The earlier cone walk at margin 6 (the quality evaluation's then), the stop interpolated between the "
              "last two steps", "stability-test.json"),
             ("Margin 6, the bisected stop (`--stop-search bisect`)", "stability-test-bisect.json"),
             ("Margin 2 (the benchmark table's), the default stop", "stability-test-margin2.json"),
             ("Margin 2, the bisected stop", "stability-test-margin2-bisect.json"),
             ("The app's audits: margin 0, the default stop", "stability-test-margin0.json"),
             ("Margin 0 with the bisected stop (no better there: audits keep the default)",
              "stability-test-margin0-bisect.json"))
METRIC_NAMES = {"vd": ("VD", "lower", 1), "fa_75": ("FA¾", "lower", 1), "logit_gap": ("|Δlogit|", "lower", 2),
                "crg": ("CRG", "lower", 3), "dirsim": ("DirSim", "higher", 1)}


def _load(name: str) -> dict | None:
    path = assets_dir() / "results" / name
    if not path.is_file():
        path = assets_dir() / name
    return json.loads(path.read_text()) if path.is_file() else None


def accuracy_section() -> list[str]:
    reports = [r for r in map(_load, ACCURACY) if r is not None]
    if not reports:
        return ["## Classifier accuracy", "", "_No evaluation files in assets/results/ yet._", ""]
    lines = ["## Classifier accuracy", "", "Per-attribute accuracy (%), made by", "", "```bash",
             *ACCURACY_COMMANDS, "```", ""]
    baselines = {}
    for report in reports:
        baselines.setdefault((report["layout"], report["split"], report["n_images"]), report)
    headers = [f"{r['model']}: {r['layout']} {r['split']}" for r in reports]
    headers += [f"majority: {layout} {split}" for layout, split, _ in baselines]
    lines += ["| attribute | " + " | ".join(headers) + " |", "|---|" + "---:|" * len(headers)]
    for attribute in reports[0]["per_attribute"]:
        values = [f"{r['per_attribute'][attribute]:.2f}" for r in reports]
        values += [f"{b['majority_baseline_per_attribute'][attribute]:.2f}" for b in baselines.values()]
        lines.append(f"| {attribute} | " + " | ".join(values) + " |")
    means = [f"**{r['mean_accuracy']:.2f}**" for r in reports] + [f"{b['majority_baseline_mean']:.2f}"
                                                                   for b in baselines.values()]
    lines.append("| **mean** | " + " | ".join(means) + " |")
    lines.append("| images | " + " | ".join(str(r["n_images"]) for r in reports) + " |" + " |" * len(baselines))
    return lines + [""]


def _rate(value) -> str:
    return "—" if value is None else f"{value:.1f}"


def _sections(files: tuple[tuple[str, str], ...], render_one) -> list[str]:
    """``render_one(title, name, record)`` for each result file there is, a note for each missing one."""
    lines: list[str] = []
    for title, name in files:
        record = _load(name)
        lines += render_one(title, name, record) if record is not None else [f"_No {title} results in assets/ yet._", ""]
    return lines


def writing(command: str, path: str) -> str:
    """``command`` with its ``--json`` (where it has one) set to ``path``, the file shown."""
    return re.sub(r"(--json )\S+", lambda match: match.group(1) + path, command)


def quality_table(split: str, name: str, report: dict) -> list[str]:
    lines = [f"### {split}, {report['n']} images ({report['seconds']:.0f} s)", "", "```bash",
             writing(reproduction(report["command"], report["settings"]), f"assets/results/{name}"), "```", "",
             "| attribute | FR % | judge FR % (tasks) | oracle FR % | oracle FR % (to 1 / to 0) | MNAC | proximity "
             "| oracle-feature FD | median s / CF | tasks to 1 |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["attributes"]:
        judge = f"{_rate(r.get('judge_flip_rate'))} ({r['judge_agreed']})" if "judge_agreed" in r else "—"
        lines.append(f"| {r['attribute']} | {r['flip_rate']:.1f} | {judge} | {_rate(r['oracle_flip_rate'])} "
                     f"| {_rate(r['oracle_flip_rate_to_1'])} / {_rate(r['oracle_flip_rate_to_0'])} | {r['mnac']:.2f} "
                     f"| {r['proximity']:.4f} | {r['oracle_fd']:.2f} | {r['median_seconds']:.3f} "
                     f"| {r['to_target_1']} / {r['n']} |")
    return lines + ["", f"Seconds are wall-clock on the run's machine ({report['threads']} torch threads) as it was "
                        "during the run: they grow when other jobs share the cores.", ""]


def quality_section() -> list[str]:
    return ["## Counterfactual quality", "",
            "Guided by the full-precision classifier, judged by the adversarially robust judge and by the oracle "
            "(definitions in `docs/metrics.md`; judge and oracle FR count only tasks where that model agreed with "
            "the classifier before the edit, the number of such tasks in brackets; FD is on the oracle's "
            "penultimate features, *not* FID). Contact sheets on faces that are not from the dataset: "
            "`docs/contact-sheets/`.", "", *_sections(QUALITY, quality_table), *mnac_levers()]


def mnac_levers() -> list[str]:
    """What bringing MNAC to 4 costs: the preview of a larger preserve weight and a tighter mask."""
    record = _load("denoised-mnac-levers-val.json")
    if record is None:
        return []
    lines = ["### What MNAC ≤ 4 costs (validation preview)", "", record["purpose"], "", "```bash",
             *(run["command"] for run in record["runs"].values()), "```", "",
             "| setting | attribute | FR % | MNAC | judge FR % | strong judge FR % | FVA % |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for setting, run in record["runs"].items():
        for attribute, row in run["attributes"].items():
            teacher = row["teacher"]
            lines.append(f"| {setting} | {attribute} | {teacher['fr']:.1f} | {teacher['mnac']:.2f} "
                         f"| {_rate(teacher['judge_fr'][0])} | {_rate(teacher['strong_judge_fr'][0])} "
                         f"| {teacher['fva']:.1f} |")
    return lines + ["", "A larger preserve weight (the default is 5) lowers MNAC by making the edit fainter: at 20 "
                        "it is under 4 everywhere, but the judges then see the attribute change far less often and "
                        "Heavy_Makeup's FR falls; 10 sits between and leaves Male and Heavy_Makeup above 4. A "
                        "tighter mask leaves MNAC where it was: the other attributes change inside the edit, not "
                        "around it. The default keeps the visible edit.", ""]


def conclusions(result: BenchmarkResult, reference: str, group: str = "all") -> list[str]:
    """One line per method (over its seeds where it has several): which paired differences
    with ``reference`` have a 95% interval that excludes zero."""
    lines = []
    compared = [(f.family, f.paired.get(reference, {}).get(group)) for f in result.families] if result.families \
        else [(row.method, row.paired.get(reference)) for row in result.rows]
    for name_, versus in compared:
        if not versus:
            continue
        better, worse = [], []
        for metric, (name, good, digits) in METRIC_NAMES.items():
            if metric not in versus:
                continue
            difference, low, high = versus[metric]
            if low is None or high is None:
                continue
            text = f"{name} {difference:+.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
            if low > 0 or high < 0:
                improves = (difference < 0) == (good == "lower")
                (better if improves else worse).append(text)
        parts = []
        if better:
            parts.append("better on " + ", ".join(better))
        if worse:
            parts.append("worse on " + ", ".join(worse))
        lines.append(f"- `{name_}` against `{reference}`: "
                     + ("; ".join(parts) if parts else "no difference whose 95% interval excludes zero") + ".")
    return lines


def benchmark_tables(title: str, name: str, record: dict) -> list[str]:
    result = BenchmarkResult.from_dict(record)
    margin = result.settings.get("counterfactual", {}).get("margin")
    lines = [f"### {title}", "", f"`{reproduction(result.command, record['settings'])}` ({result.date}, "
             f"{result.seconds:.0f} s, N = {result.n} "
             f"tasks, attributes {', '.join(result.attributes)}, margin {margin}; "
             f"`assets/{name.replace('.json', '.md')}` adds intervals and per-attribute values)", "",
             markdown_table(list(result.rows)), ""]
    families = list(result.families)
    if families:
        lines += ["Each method over its fine-tuning seeds: mean ± sd across seeds [95% interval, bootstrap over "
                  "seeds and tasks].", "", families_table(families), ""]
        if any("held_out" in f.metrics for f in families):
            lines += ["On the eight held-out attributes only:", "", families_table(families, "held_out"), ""]
        for reference in PAIRED_REFERENCES:
            for group in ("all", "held_out"):
                if any(group in f.paired.get(reference, {}) for f in families):
                    lines += [f"Paired with `{reference}` on shared tasks, {group.replace('_', '-')} attributes:", "",
                              family_paired_table(families, reference, group), "",
                              *conclusions(result, reference, group), ""]
    else:
        for reference in PAIRED_REFERENCES:
            if any(reference in row.paired for row in result.rows):
                lines += [f"Paired with `{reference}` on the same tasks (95% bootstrap intervals over tasks):", "",
                          paired_table(list(result.rows), reference), "", *conclusions(result, reference), ""]
    if result.sweep:
        names = [row.method for row in result.rows if row.method != "fp32" and row.method == row.family]
        lines += ["Margin sweep: the teacher's recourse made to each margin; VD % [95% interval over tasks, where "
                  "recorded] / FA¾ % of each model:", "",
                  sweep_table(list(result.sweep), names), ""]
    return lines


def judge_section() -> list[str]:
    record = _load("judge-check.json")
    if record is None:
        return ["## The judge's robustness check", "", "_No judge-check.json in assets/results/ yet._", "",
                *transfer_table()]
    lines = ["## The judge's robustness check", "",
             f"An L∞ PGD attack on the classifier at each attribute's counterfactual cost, judged by the robust "
             f"judge ({record['n']} {record['split']} faces, {record['seconds']:.0f} s):", "", "```bash",
             record["command"], "```", "",
             "| attribute | ε | attack mean abs change | classifier flipped % | judge flipped % (faces) |",
             "|---|---:|---:|---:|---:|"]
    for r in record["attributes"]:
        lines.append(f"| {r['attribute']} | {r['epsilon']:.4f} | {r['mean_change']:.4f} | "
                     f"{r['classifier_flip_rate']:.1f} | {_rate(r['judge_flip_rate'])} ({r['judge_agreed']}) |")
    return lines + ["", *transfer_table()]


# How the transfer check is re-run once the stronger judge is trained (scripts/judge_check.py).
STRONG_JUDGE_CHECK = ("python -m scripts.judge_check --data ../shared/data/celeba-hq-64 --split val --n 80 --threads 1 "
                      "--costs assets/results/counterfactual-quality-val.json --attack classifier guide "
                      "--judges judge strong-judge --json assets/results/judge-transfer-val.json")


def _span(values: list[float]) -> str:
    values = [v for v in values if v == v]  # NaN: a judge that agreed on no face
    return f"{min(values):.1f}–{max(values):.1f}%" if values else "—"


def transfer_table() -> list[str]:
    """The same-budget attack on each model that moves or steers an edit, judged by every judge."""
    record = _load("judge-transfer-val.json")
    if record is None:
        return []
    rows, judges, attacked = record["transfer"], record["judges"], record["attacked"]
    lines = ["### The attack on the guide transfers", "",
             f"The same attack aimed at each model that moves or steers an edit — the classifier, and the robust guide "
             f"that steers the cone-guided walk — on {record['n']} {record['split']} faces ({record['seconds']:.0f} s, "
             f"{record['threads']} thread), judged by each judge (counted where that judge agreed with the attacked "
             "model before the attack; faces in brackets):", "", "```bash", record["command"], "```", "",
             "| attribute | ε | " + " | ".join(f"{model} flipped % | " + " | ".join(f"{judge} flipped % (faces)"
                                                                              for judge in judges) for model in attacked)
             + " |", "|---|---:|" + "---:|" * (len(attacked) * (1 + len(judges)))]
    for attribute in dict.fromkeys(r["attribute"] for r in rows):
        cells = []
        for model in attacked:
            r = next(r for r in rows if r["attribute"] == attribute and r["attacked"] == model)
            cells += [f"{r['attacked_flip_rate']:.1f}"] + [f"{_rate(r['judges'][j]['flip_rate'])} ({r['judges'][j]['agreed']})"
                                                          for j in judges]
        epsilon = next(r["epsilon"] for r in rows if r["attribute"] == attribute)
        lines.append(f"| {attribute} | {epsilon:.4f} | " + " | ".join(cells) + " |")
    lines.append("")
    for judge in judges:
        spans = {model: _span([r["judges"][judge]["flip_rate"] for r in rows if r["attacked"] == model])
                 for model in attacked}
        lines.append(f"The {judge} is flipped on " + ", ".join(f"{span} of the faces by the attack on the {model}"
                                                               for model, span in spans.items()) + ".")
    for judge, state in record.get("unfinished", {}).items():  # measured on an early epoch's checkpoint
        lines += ["", f"The {judge} was {state} when this was measured: its numbers are not the finished judge's."]
    if "strong-judge" not in judges:
        lines += ["", "The stronger judge (`checkpoints/strong-judge`, radius 3) is not trained yet; once it is, the "
                  "same check with both judges:", "", "```bash", STRONG_JUDGE_CHECK, "```"]
    return lines + [""]


def stability_section() -> list[str]:
    return ["## Stability of per-image numbers", "",
            "The first two records are the default generator's; the others were made with the earlier cone walk "
            "(`--method pca-walk-cone`), at the margins they name.", "", *_sections(STABILITY, stability_table)]


def stability_table(title: str, name: str, record: dict) -> list[str]:
    lines = [f"### {title}", "", "```bash", record["command"], "```", ""]
    if "crg_change" in record:
        crg, dirsim = record["crg_change"], record["dirsim_change"]
        lines += [f"{record['tasks']} {record['split']} tasks, `{record['variant']}` against the classifier, one pixel "
                  f"moved by 1/255 ({record['defined_both_times']} tasks defined both times, {record['seconds']:.0f} s):",
                  "", "| | median | 90th percentile | max | share within the bound |", "|---|---:|---:|---:|---:|",
                  f"| abs ΔCRG_i | {crg['median']:.4f} | {crg['p90']:.4f} | {crg['max']:.4f} | "
                  f"{record['share_crg_within_0.05']:.1f}% within 0.05 |",
                  f"| abs ΔDirSim_i | {dirsim['median']:.2f} | {dirsim['p90']:.2f} | {dirsim['max']:.2f} | "
                  f"{record['share_dirsim_within_5']:.1f}% within 5 |", ""]
    if "largest_pixel_difference_same_pixels" in record:
        lines.append(f"Largest pixel difference between counterfactuals of the same pixels in another memory layout, "
                     f"batch composition and order: {record['largest_pixel_difference_same_pixels']:g}"
                     + ("." if "crg_change" in record else f" ({record['tasks']} {record['split']} tasks, "
                                                           f"{record['seconds']:.0f} s)."))
    if record.get("note"):
        lines.append(record["note"])
    return lines + [""]


def visibility_section() -> list[str]:
    record = _load("visibility-frontier-val.json")
    if record is None:
        return ["_No visibility frontier results in assets/ yet._", ""]
    lines = ["## How large an edit a more robust model sees (validation split)", "",
             "```bash", record["command"], "```", "",
             "Each edit is scored by the robust model that did not steer it, counted where that model agreed "
             "with the classifier before the edit; the judge is not used. Pictures: `docs/visibility/`. The strong "
             "guide (not committed): `python -m recourse train-classifier --data ../shared/data/celeba-hq-64 --preset "
             "guide --adversarial-radius 3 --seed 11 --out out/guide-radius3 --threads 1`.", "",
             "| attribute | edit | FR % | scored by | its FR % | oracle FR % | MNAC | mean \\|x' − x\\| |",
             "|---|---|---:|---|---:|---:|---:|---:|"]
    for row in record["rows"]:
        lines.append(f"| {row['attribute']} | {row['setting']} | {row['fr']:.1f} | {row['scored_by']} | "
                     f"{row['cross_fr']:.2f} | {row['oracle_fr']:.1f} | {row['mnac']:.2f} | {row['proximity']:.4f} |")
    return lines + [""]


# The commands that measure today's generator with the instruments whose results are not committed yet.
QUALITY_WITH_INSTRUMENTS = ("python -m recourse evaluate-counterfactuals --data ../shared/data/celeba-hq-64 --split test "
                            "--n 500 --json assets/results/counterfactual-quality-test.json")
DISCRIMINATOR = "edit-discriminator-test.json"
DISCRIMINATOR_CONE = "edit-discriminator-test-cone.json"  # the same check on the earlier cone walk's edits
DISCRIMINATOR_PAIRS = {split: "python -m scripts.export_pairs --data ../shared/data/celeba-hq-64 --split "
                              f"{split} --n 200 --out out/realism/{split}-pairs.npz" for split in ("train", "test")}
DISCRIMINATOR_COMMANDS = (
    *DISCRIMINATOR_PAIRS.values(),
    "python -m scripts.edit_discriminator --data ../shared/data/celeba-hq-64 --train-pairs out/realism/train-pairs.npz "
    f"--test-pairs out/realism/test-pairs.npz --json assets/results/{DISCRIMINATOR}")
EXPORT_PAIRS_OPTIONS = {"method": "--method", "margin": "--margin"}  # scripts.export_pairs' generation options
REFERENCE_BENCHMARK = ("python -m recourse benchmark --data ../shared/data/celeba-hq-64 --split test --tasks 180 --margin 2 "
                       "--variants ptq-int4 gptq --reference-models checkpoints/classifier-seed1 --out out/bench-reference")


def _measured(key: str) -> list[tuple[str, dict]]:
    """(split, attribute row) of every committed quality run that reports ``key``."""
    found = []
    for split, name in QUALITY:
        record = _load(name)
        found += [(split, r) for r in (record or {}).get("attributes", []) if r.get(key) is not None]
    return found


def _measured_table(key: str, head: list[str], cells, missing: list[str]) -> list[str]:
    """A row per (split, attribute) of the committed quality runs that report ``key``, its
    cells from ``cells(row)``; ``missing`` where no run does."""
    measured = _measured(key)
    if not measured:
        return missing
    return head + [f"| {split} | {r['attribute']} | {cells(r)} |" for split, r in measured] + [""]


def _not_yet(what: str, *commands: str) -> list[str]:
    return [f"_{what}: not measured yet._ It comes from:", "", "```bash", *commands, "```", ""]


def instruments_section() -> list[str]:
    """Each instrument that judges counterfactuals, what it says, and its floor (docs/metrics.md)."""
    return ["## Instruments and their floors", "",
            "Each instrument below judges counterfactuals and never steers one (definitions in `docs/metrics.md`). "
            "None is read on its own: each beside its floor, what it gives where nothing was edited or where two "
            "good models are compared.", "",
            *identity_paragraph(), *judges_paragraph(), *results_judges.section(_load),
            *results_judges.visible_stop_section(_load), *realism_paragraph(),
            *discriminator_paragraph(),
            *divergence_paragraph()]


def identity_paragraph() -> list[str]:
    identity = _load("identity-calibration.json")
    lines = ["### Identity: FVA and FS", ""]
    if identity is None:
        return lines + _not_yet("The identity calibration", "python -m scripts.identity_calibration --data "
                                "../shared/data/celeba-hq-64 --n 200 --json assets/results/identity-calibration.json")
    conditions = identity["conditions"]
    mirrored, different = conditions.get("same face, mirrored"), conditions.get("two different faces (all pairs)")
    floor = ""
    if mirrored and different:
        floor = (f" The floor: the same face mirrored lies at a median distance of {mirrored['median']:.3f} (FVA "
                 f"{mirrored['within threshold % (FVA)']:.0f}%), two different faces at {different['median']:.3f}, "
                 f"{different['within threshold % (FVA)']:.2f}% of them under 0.6 (an upper bound on false matches: "
                 "some pairs may be one person). A counterfactual far beyond the mirrored face's distance changed "
                 "who the person is, whatever its flip rate.")
    lines += ["Is each counterfactual still the same person? dlib's ResNet face descriptor (the face upsampled from "
              "64 to 256 px, aligned by 5 landmarks); FVA is the share within dlib's own threshold 0.6 of their "
              f"original, FS the mean distance. Calibrated at 64 px on {identity['faces']} {identity['split']} "
              f"faces.{floor}", "", "```bash", identity["command"], "```", "",
              "| pair | pairs | median distance | FS (mean) | FVA % |", "|---|---:|---:|---:|---:|"]
    for name, row in conditions.items():
        lines.append(f"| {name} | {row['pairs']} | {row['median']:.3f} | {row['mean (FS)']:.3f} | "
                     f"{row['within threshold % (FVA)']:.2f} |")
    lines.append("")
    return lines + _measured_table("fva", ["The committed quality runs:", "", "| run | attribute | FVA % | FS |", "|---|---|---:|---:|"],
                                   lambda r: f"{r['fva']:.1f} | {r['fs']:.3f}",
                                   _not_yet("Today's generator's FVA and FS", QUALITY_WITH_INSTRUMENTS))


def judges_paragraph() -> list[str]:
    lines = ["### The two judges: judge FR at radius 1 and at radius 3", "",
             "Does a robust model that never guides see the attribute change? Judge FR counts a counterfactual when "
             "the judge's decision moves to the target, over the tasks where the judge agreed with the classifier "
             "before the edit. Its floor is the robustness check above: a plain attack of the counterfactuals' "
             "budget should not flip the judge."]
    record = _load("judge-transfer-val.json")
    if record is not None and "judge" in record["judges"]:
        spans = {model: _span([r["judges"]["judge"]["flip_rate"] for r in record["transfer"] if r["attacked"] == model])
                 for model in record["attacked"]}
        lines[-1] += (" For the radius-1 judge it holds against the classifier but not against the guide, its "
                      "near-twin: " + ", ".join(f"the attack on the {model} flips it on {span} of the faces"
                                               for model, span in spans.items())
                      + f" ({record['n']} {record['split']} faces). So judge FR at radius 1 partly measures transfer "
                        "between two radius-1 models; the stronger judge (radius 3, its own recipe and seed, fixed "
                        "before any result) is the reading to trust where the two differ.")
    lines.append("")
    lines += judges_accuracy_table()
    return lines + _measured_table(
        "strong_judge_flip_rate", ["The ceiling beside each FR is what that judge would give if every counterfactual were a "
                                   "real face of its target class (its rate of seeing real faces of that class as such, "
                                   "on the run's split, weighted by the counted tasks' targets): no realistic edit is "
                                   "expected to pass it, and a FR far above it is suspect.", "",
                                   "| run | attribute | judge FR % (tasks) | its ceiling % | strong judge FR % (tasks) "
                                   "| its ceiling % |", "|---|---|---:|---:|---:|---:|"],
        lambda r: f"{_rate(r['judge_flip_rate'])} ({r['judge_agreed']}) | {_rate(r.get('judge_ceiling'))} | "
                  f"{_rate(r['strong_judge_flip_rate'])} ({r['strong_judge_agreed']}) | "
                  f"{_rate(r.get('strong_judge_ceiling'))}",
        _not_yet("The strong judge's FR (it is being trained: `checkpoints/strong-judge`)",
                 QUALITY_WITH_INSTRUMENTS, STRONG_JUDGE_CHECK))


NEAR_MAJORITY = 2.0  # accuracy points above the majority rate below which a judge does not see an attribute
JUDGE_ACCURACY = (("radius 1", "eval-judge-val.json"), ("radius 3 (strong)", "eval-strong-judge-val.json"))


def judges_accuracy_table() -> list[str]:
    """Each judge's validation accuracy on the quality attributes beside the majority rate: a
    judge that stays at the majority cannot see the attribute, however robust it is."""
    records = [(title, _load(name)) for title, name in JUDGE_ACCURACY]
    if any(record is None for _, record in records):
        return _not_yet("The judges' accuracy against the majority rate", *(
            f"python -m recourse evaluate --data ../shared/data/celeba-hq-64 --split val --model "
            f"{'judge' if 'strong' not in name else 'strong-judge'} --json assets/results/{name}"
            for _, name in JUDGE_ACCURACY))
    majority = records[0][1]["majority_baseline_per_attribute"]
    near = [f"{title} on {a}" for title, r in records for a in QUALITY_ATTRIBUTES
            if r["per_attribute"][a] - majority[a] < NEAR_MAJORITY]
    verdict = ("Each judge is at least " f"{NEAR_MAJORITY:g} points above the majority rate on every quality attribute"
               if not near else "Within " f"{NEAR_MAJORITY:g} points of the majority rate (cannot see it): " + ", ".join(near))
    lines = [f"{verdict} (validation accuracy %):", "",
             "| attribute | majority | " + " | ".join(title for title, _ in records) + " |",
             "|---|---:|" + "---:|" * len(records)]
    lines += [f"| {a} | {majority[a]:.1f} | " + " | ".join(f"{r['per_attribute'][a]:.1f}" for _, r in records) + " |"
              for a in QUALITY_ATTRIBUTES]
    return lines + [""]


def realism_paragraph() -> list[str]:
    floor = _load("realism-floor-test.json")
    lines = ["### Realism: oracle-feature FD and KID with a real-versus-real floor", ""]
    if floor is None:
        return lines + _not_yet("The realism floor", "python -m scripts.realism_floor --data ../shared/data/celeba-hq-64 "
                                "--split test --json assets/results/realism-floor-test.json")
    rows = floor["floor"]
    lines += [f"Are the edits distributed like real faces that have the target? FD (biased upwards at small N) and KID "
              f"(unbiased) on the oracle's penultimate features. The floor: two disjoint sets of real "
              f"{floor['split']} faces of the same size ({floor['draws']} draws) give FD {rows[0]['fd_mean']:.2f} at "
              f"{rows[0]['n']} faces per set and {rows[-1]['fd_mean']:.2f} at {rows[-1]['n']}, and a mean KID within "
              f"±{max(abs(r['kid_mean']) for r in rows):.4f} of 0 (sd up to {max(r['kid_sd'] for r in rows):.4f}): a set of counterfactuals is as "
              "realistic as real faces when it is within this of real faces, at equal sizes.", "",
              "```bash", floor["command"], "```", "", "| faces per set | FD mean (sd) | KID mean (sd) |", "|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['n']} | {row['fd_mean']:.2f} ({row['fd_sd']:.2f}) | "
                     f"{row['kid_mean']:.5f} ({row['kid_sd']:.5f}) |")
    lines.append("")
    return lines + _measured_table(
        "realism_fd", ["| run | attribute | faces per set | FD edits / floor | KID edits / floor |", "|---|---|---:|---:|---:|"],
        lambda r: f"{r['realism_n']} | {r['realism_fd']:.2f} / {r['floor_fd']:.2f} | "
                  f"{r['realism_kid']:.4f} / {r['floor_kid']:.4f}",
        _not_yet("Today's generator against this floor", QUALITY_WITH_INSTRUMENTS))


def discriminator_paragraph() -> list[str]:
    lines = ["### Real versus edited: the discriminator's AUC", "",
             "Can a logistic regression on the oracle's features, trained on the train split's edits and matched real "
             "faces, tell the test split's edits from real ones? Its floor is AUC 0.5 (it cannot); its train AUC far "
             "above its test AUC says it memorised.", ""]
    record = _load(DISCRIMINATOR)
    if record is None:
        return lines + _not_yet("The discriminator's AUC", *DISCRIMINATOR_COMMANDS)
    lines += [f"Test AUC {record['auc']:.3f} (train {record['train_auc']:.3f}; {record['n_train']} train and "
              f"{record['n_test']} test faces, half of them edited):", "", "```bash",
              *pairs_commands(record), record["command"], "```", ""]
    earlier = _load(DISCRIMINATOR_CONE)
    if earlier is not None:
        lines += [f"The earlier cone walk's edits (margin 6; `{DISCRIMINATOR_CONE}`): test AUC {earlier['auc']:.3f} "
                  f"(train {earlier['train_auc']:.3f}).", ""]
    return lines


def pairs_commands(record: dict) -> list[str]:
    """The ``scripts.export_pairs`` commands of a discriminator run's pairs, with the generation
    options that make today's defaults the pairs' recorded ones (``pairs_counterfactual``; a run
    that recorded none had pairs of the earlier defaults, ``recourse.cli.EARLIER_GENERATION``)."""
    from recourse.generation import CounterfactualConfig

    recorded = record.get("pairs_counterfactual") or {}
    return [" ".join([command, *generation_arguments(recorded.get(split) or EARLIER_GENERATION, CounterfactualConfig(),
                                                     EXPORT_PAIRS_OPTIONS)])
            for split, command in DISCRIMINATOR_PAIRS.items()]


def divergence_paragraph() -> list[str]:
    lines = ["### The two-model divergence floor", "",
             "How different are two good models' recourses? A second full-precision classifier, the same recipe with "
             "another seed, takes a variant's place in the benchmark (row `fp32-ref-<folder>`): its VD, CRG and DirSim "
             "against the teacher are what an independently trained model gives, the reference a variant's must be "
             "read against (with the noise control), never 0 and 100.", ""]
    found = []
    for title, name in BENCHMARKS:
        record = _load(name)
        found += [(title, row) for row in (record or {}).get("rows", []) if row["method"].startswith("fp32-ref-")]
    if not found:
        return lines + _not_yet("The two-model floor (the seed-1 classifier is being trained into "
                                "`out/classifier-seed1`)", REFERENCE_BENCHMARK)
    lines += ["| run | row | VD % | CRG | DirSim |", "|---|---|---:|---:|---:|"]
    lines += [f"| {title} | {row['method']} | {_rate(row.get('vd'))} | "
              f"{'—' if row.get('crg') is None else format(row['crg'], '.3f')} | {_rate(row.get('dirsim'))} |"
              for title, row in found]
    return lines + [""]


DIRECTIONS = "dirsim-references-val.json"


def _interval(row: dict, metric: str, digits: int) -> str:
    value, (low, high) = row.get(metric), row["intervals"].get(metric, [None, None])
    if value is None:
        return "—"
    return f"{value:.{digits}f}" + ("" if low is None else f" [{low:.{digits}f}, {high:.{digits}f}]")


def direction_section() -> list[str]:
    """DirSim and CRG on the default generator beside a second full-precision classifier."""
    record = _load(DIRECTIONS)
    lines = ["## Recourse directions on the default generator", ""]
    if record is None:
        return lines + ["Not measured yet.", ""]
    method = record["settings"]["counterfactual"]
    lines += [f"Each model edits through the face denoiser on its own (`{method['method']}`, σ {method['sigma']:g}, "
              f"margin {method['margin']:g}); no direction is shared. {record['n']} {record['split']} tasks "
              f"({', '.join(record['attributes'])} in turn), {record['seconds']:.0f} s on one process:", "",
              "```bash", record["command"], "```", "",
              "| row | bits/weight | agreement % | \\|Δlogit\\| | CRG [95%] | DirSim % [95%] | zero-length edits | N |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in record["rows"]:
        if row["method"] == "fp32":
            continue
        zero = row["proportions"]["zero_edits"]
        lines.append(f"| {row['method']} | {row['bits_per_weight']:.2f} | {row['agreement']:.2f} | "
                     f"{_interval(row, 'logit_gap', 2)} | {_interval(row, 'crg', 3)} | {_interval(row, 'dirsim', 1)} | "
                     f"{zero['count']} of {zero['n']} | {row['n']} |")
    zero = sum(row["proportions"]["zero_edits"]["count"] for row in record["rows"] if row["method"] != "fp32")
    cone = [row["dirsim"] for row in (_load("benchmark-reference.json") or {}).get("rows", []) if row.get("dirsim")]
    earlier = (f" With the earlier cone walk the same rows on test sat at DirSim {min(cone):.1f}–{max(cone):.1f} "
               f"(`benchmark-reference.json`, below)." if cone else "")
    return lines + ["", "Zero-length edits (the model already decides the target on the face) are counted apart and "
                        f"left out of DirSim (`dirsim_moved`; here {zero or 'none'}). A second full-precision classifier "
                        "of another seed (`fp32-ref-…`) is the reference a variant's direction is read against." + earlier,
                    ""]


def denoiser_section() -> list[str]:
    """The face denoiser's gate and learning curve."""
    gate = _load("denoiser-gate-val.json")
    if gate is None:
        return []
    lines = ["## The face denoiser", "",
             f"Denoising PSNR (dB) on {gate['n']} {gate['split']} faces, the same noise for every denoiser; the "
             "gate asks the face denoiser to beat both linear ones at every σ and to keep identity through a "
             "noise-and-denoise round trip where its own image reaches a picture (the inpainting's σ; FVA ≥ 90%). "
             "Gate: **{'passed' if gate['passed'] else 'not passed'}**.",
             "", "```bash", gate["command"], "```", "", "| σ | face denoiser | PCA projection | Wiener | noisy input |",
             "|---:|---:|---:|---:|---:|"]
    for sigma, row in gate["psnr_db"].items():
        lines.append(f"| {sigma} | {row['face denoiser']:.2f} | {row['pca projection']:.2f} | "
                     f"{row['wiener (gaussian)']:.2f} | {row['noisy input']:.2f} |")
    trip = gate["round_trip_identity"]
    lines += ["", f"Round trip at σ = {trip['sigma']} (gated): FVA {trip['fva']:.1f}%, FS {trip['fs']:.3f}."]
    guidance = gate.get("round_trip_identity_at_guidance_sigma")
    if guidance is not None:
        lines[-1] += (f" At the guidance's σ = {guidance['sigma']}: FVA {guidance['fva']:.1f}%, FS {guidance['fs']:.3f}, "
                      "reported only: the default output carries D's change, in which the round trip cancels.")
    lines.append("")
    curve_path = assets_dir() / "results" / "denoiser-curve.jsonl"
    if curve_path.is_file():
        curve = [json.loads(line) for line in curve_path.read_text().splitlines() if line.strip()]
        lines += ["Learning curve (EMA weights, 256 validation faces; `assets/results/denoiser-curve.jsonl`, "
                  "written by `python -m recourse train-denoiser`):", "",
                  "| step | images seen | hours | loss | PSNR σ 0.1 | σ 0.3 | σ 0.5 |", "|---:|---:|---:|---:|---:|---:|---:|"]
        for row in curve[1::2] if len(curve) > 6 else curve:
            lines.append(f"| {row['step']} | {row['step'] * 32} | {row['hours']:.2f} | {row['loss']:.3f} | "
                         f"{row['psnr_0.1']:.2f} | {row['psnr_0.3']:.2f} | {row['psnr_0.5']:.2f} |")
        lines.append("")
    return lines


def benchmark_section() -> list[str]:
    return [*results_benchmark.section(_load, benchmark_tables),
            "## Earlier benchmark runs, on the cone walk", "",
            "Every variant against the full-precision classifier (VD = Validity Drop; definitions in "
            "`docs/metrics.md`), made with the earlier default generator (the PCA walk turned towards a shared "
            "robust guide), which forced the models' recourse directions together: superseded by the run above, "
            "kept for comparison. The app's Benchmark tab reads the same files.", "",
            *_sections(BENCHMARKS, benchmark_tables), *replication_section()]


def _claim(value: list[float], digits: int) -> str:
    return f"{value[0]:+.{digits}f} [{value[1]:.{digits}f}, {value[2]:.{digits}f}]"


def replication_section() -> list[str]:
    record = _load("benchmark-replication.json")
    if record is None:
        return []
    summary = record["summary"]
    lines = ["### Does a second run on other faces reproduce the first?", "", "```bash", record["command"], "```", "",
             f"Tasks {record['first']['first_task']}–{record['first']['first_task'] + record['first']['n'] - 1} "
             f"against tasks {record['second']['first_task']}–"
             f"{record['second']['first_task'] + record['second']['n'] - 1}. Of {summary['compared']} values "
             f"(each family's metrics and paired differences in every attribute group, and each model's sweep "
             f"values), the second run's value is inside the first run's 95% interval for "
             f"{summary['second_inside_first']} and the first's inside the second's for "
             f"{summary['first_inside_second']} (about 83% is expected of two independent runs). "
             f"The first run makes {summary['claims']} claims (paired differences whose interval excludes zero); "
             f"{summary['claims_held']} hold in the second run (its interval excludes zero on the same side), and "
             f"for {summary['claims_second_inside_first']} the second run's value is inside the first's interval.",
             "", "Claims on all attributes:", "",
             "| family − reference | metric | first run | second run | second inside first | holds |",
             "|---|---|---:|---:|:---:|:---:|"]
    for value in record["values"]:
        if value["reference"] and value["claim"] and value["group"] == "all" and value["metric"] in METRIC_NAMES:
            name, _, digits = METRIC_NAMES[value["metric"]]
            lines.append(f"| {value['family']} − {value['reference']} | {name} | {_claim(value['first'], digits)} | "
                         f"{_claim(value['second'], digits)} | {'yes' if value['second_inside_first'] else 'no'} | "
                         f"{'yes' if value['held'] else '**no**'} |")
    return lines + [""]


def foreign_section() -> list[str]:
    """Your own models (docs/foreign-models.md): the worked example's cards as benchmark rows
    next to native variants, and the int8 latency against float in the same run."""
    record = _load("benchmark-foreign.json")
    if record is None:
        return []
    lines = ["## Your own models: the worked example's cards in the benchmark", "",
             "The project's classifier exported to ONNX and `torch.export`, quantized by ONNX Runtime's static "
             "quantizer and torchao's pt2e flow (`docs/foreign-models.md`), each given by its model card "
             "(`--models`) and benchmarked against the full-precision classifier next to native variants. "
             "A black box (ONNX Runtime) guides its own recourse with gradients estimated from forward passes in "
             "the generator's face basis; the float ONNX row shows what that estimate alone costs.", "",
             *benchmark_tables("Rows", "benchmark-foreign.json", record)[1:]]
    if record.get("latency"):
        lines += ["Latency of each int8 model against its float original, timed in the same run:", "",
                  latency_table(record["latency"]), ""]
    return lines


def render() -> str:
    lines = ["# Results", "",
             "_Generated by `python -m scripts.results_doc` from the files under `assets/`; do not edit by hand. "
             "`tests/test_results_doc.py` fails when this page and the files disagree._", "",
             *accuracy_section(), *quality_section(), *judge_section(), *stability_section(), *visibility_section(),
             *instruments_section(), *denoiser_section(), *direction_section(), *benchmark_section(), *foreign_section()]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that docs/results.md is up to date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not DOC.is_file() or DOC.read_text() != text:
            print(f"{DOC.relative_to(project_root())} is out of date: run python -m scripts.results_doc", file=sys.stderr)
            return 1
        return 0
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(project_root())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
