"""The counterfactual-quality page: each quality run, the judges, the instruments and the face denoiser."""

from __future__ import annotations

import json

from recourse.cli import reproduction
from recourse.locations import assets_dir
from scripts.docs.results import default_quality, files, instruments
from scripts.docs.results.files import rate

# Each quality run of the default generator, named by its split (settings: its record).
QUALITY = (("test · denoised (the default, σ 1.0)", "counterfactual-quality-test-denoised.json"),
           ("val · denoised (the default, σ 1.0; first 200 faces)", "counterfactual-quality-val-denoised.json"))


def quality_table(split: str, name: str, report: dict) -> list[str]:
    lines = [f"### {split}, {report['n']} images ({report['seconds']:.0f} s)", "", "```bash",
             files.writing(reproduction(report["command"], report["settings"]), files.location(name)), "```", "",
             "| attribute | FR % | judge FR % (tasks) | oracle FR % | oracle FR % (to 1 / to 0) | MNAC | proximity "
             "| oracle-feature FD | median s / CF | tasks to 1 |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["attributes"]:
        judge = f"{rate(r.get('judge_flip_rate'))} ({r['judge_agreed']})" if "judge_agreed" in r else "—"
        lines.append(f"| {r['attribute']} | {r['flip_rate']:.1f} | {judge} | {rate(r['oracle_flip_rate'])} "
                     f"| {rate(r['oracle_flip_rate_to_1'])} / {rate(r['oracle_flip_rate_to_0'])} | {r['mnac']:.2f} "
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
            "`docs/contact-sheets/`.", "",
            *default_quality.default_quality_section(), *files.sections(QUALITY, quality_table), *mnac_levers()]


def mnac_levers() -> list[str]:
    """What bringing MNAC to 4 costs: the preview of a larger preserve weight and a tighter mask."""
    record = files.load("denoised-mnac-levers-val.json")
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
                         f"| {rate(teacher['judge_fr'][0])} | {rate(teacher['strong_judge_fr'][0])} "
                         f"| {teacher['fva']:.1f} |")
    return lines + ["", "A larger preserve weight (the default is 5) lowers MNAC by making the edit fainter: at 20 "
                        "it is under 4 everywhere, but the judges then see the attribute change far less often and "
                        "Heavy_Makeup's FR falls; 10 sits between and leaves Male and Heavy_Makeup above 4. A "
                        "tighter mask leaves MNAC where it was: the other attributes change inside the edit, not "
                        "around it. The default keeps the visible edit.", ""]


def judge_section() -> list[str]:
    record = files.load("judge-check.json")
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
                     f"{r['classifier_flip_rate']:.1f} | {rate(r['judge_flip_rate'])} ({r['judge_agreed']}) |")
    return lines + ["", *transfer_table()]


def transfer_table() -> list[str]:
    """The same-budget attack on each model that moves or steers an edit, judged by every judge."""
    record = files.load("judge-transfer-val.json")
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
            cells += [f"{r['attacked_flip_rate']:.1f}"] + [f"{rate(r['judges'][j]['flip_rate'])} ({r['judges'][j]['agreed']})"
                                                          for j in judges]
        epsilon = next(r["epsilon"] for r in rows if r["attribute"] == attribute)
        lines.append(f"| {attribute} | {epsilon:.4f} | " + " | ".join(cells) + " |")
    lines.append("")
    for judge in judges:
        spans = {model: files.span([r["judges"][judge]["flip_rate"] for r in rows if r["attacked"] == model])
                 for model in attacked}
        lines.append(f"The {judge} is flipped on " + ", ".join(f"{span} of the faces by the attack on the {model}"
                                                               for model, span in spans.items()) + ".")
    for judge, state in record.get("unfinished", {}).items():  # measured on an early epoch's checkpoint
        lines += ["", f"The {judge} was {state} when this was measured: its numbers are not the finished judge's."]
    if "strong-judge" not in judges:
        lines += ["", "The stronger judge (`checkpoints/strong-judge`, radius 3) is not trained yet; once it is, the "
                  "same check with both judges:", "", "```bash", instruments.STRONG_JUDGE_CHECK, "```"]
    return lines + [""]


def visibility_section() -> list[str]:
    record = files.load("visibility-frontier-val.json")
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


def denoiser_section() -> list[str]:
    """The face denoiser's gate and learning curve."""
    gate = files.load("denoiser-gate-val.json")
    if gate is None:
        return []
    lines = ["## The face denoiser", "",
             f"Denoising PSNR (dB) on {gate['n']} {gate['split']} faces, the same noise for every denoiser; the "
             "gate asks the face denoiser to beat both linear ones at every σ and to keep identity through a "
             "noise-and-denoise round trip where its own image reaches a picture (the inpainting's σ; FVA ≥ 90%). "
             f"Gate: **{'passed' if gate['passed'] else 'not passed'}**.",
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


def _candidate_lines(record: dict) -> list[str]:
    """What each candidate is, from its training record (``denoiser-candidates/training-<name>.json``)."""
    lines = []
    for c in record["candidates"]:
        training = files.load(f"denoiser-candidates/training-{c['name']}.json")
        if training is None:
            continue
        config = training["train_config"]
        lines.append(f"- `{c['name']}`: {training['step']:,} steps of {config['batch_size']} "
                     f"({training['images_seen']:,} images, {training['training_hours'] * 60:.1f} min on "
                     f"{training.get('device', 'cpu')}), σ {config['sigma_min']:g}–{config['sigma_max']:g} "
                     f"{config.get('sigma_sampling', 'log-uniform')}: `{training['training_command']}`")
    return lines


def candidates_section() -> list[str]:
    """Larger-prior candidates against today's denoiser, by the adoption rule."""
    record = files.load("denoiser-candidates-val.json")
    if record is None:
        return []
    sigmas = list(record["today"]["gate"]["psnr_db"])
    lines = ["### Candidates for a stronger prior", "",
             f"Rule: {record['rule']} ({record['date']}; the judges' runs on the same {record['today']['gate']['split']} "
             "faces, `scripts/measurements/visible_stop.py --local-regions`).", "", *_candidate_lines(record), "",
             "```bash", record["command"], "```", "",
             "| denoiser | " + " | ".join(f"PSNR σ {s}" for s in sigmas)
             + " | shift at FVA ≥ 100% | shift at FVA ≥ 97% | adopted |",
             "|---|" + "---:|" * (len(sigmas) + 2) + "---|"]
    today = record["today"]
    floors = ("fva>=100", "fva>=97")
    from scripts.measurements.denoiser_candidates import shift_at_identity

    today_shifts = [shift_at_identity(today["visible_stop_summary"], float(f.split(">=")[1])) for f in floors]
    lines.append("| today's | " + " | ".join(f"{today['gate']['psnr_db'][s]['face denoiser']:.2f}" for s in sigmas)
                 + " | " + " | ".join(f"{v:.3f}" for v in today_shifts) + " | (today's) |")
    for c in record["candidates"]:
        judged = c["shift_at_identity"] or {}
        shifts = [judged.get(f, {}).get("candidate") for f in floors]
        lines.append(f"| {c['name']} | " + " | ".join(
            f"{c['gate']['psnr_db'][s]['face denoiser']:.2f} ({c['gate_psnr_gain_db'][s]:+.2f})" for s in sigmas)
            + " | " + " | ".join("not run (gate)" if v is None else f"{v:.3f}" for v in shifts)
            + f" | {'yes' if c['adopted'] else 'no'} |")
    lines += ["", "Shift at FVA ≥ F: the largest mean judges' shift among the stops of the same validation edits "
              "whose FVA reaches F, i.e. how much the judges see for a given loss of identity. A sharper prior "
              "makes larger edits per logit: more shift at every stop, and less identity at every stop; only "
              "more shift at the same identity counts.", ""]
    return lines


def page() -> list[str]:
    return [*quality_section(), *judge_section(), *visibility_section(), *instruments.section(QUALITY),
            *denoiser_section(), *candidates_section()]


def headline() -> str:
    """The default generator's flip rate and identity on test, attribute by attribute."""
    title, name = QUALITY[0]
    record = files.load(name)
    if record is None:
        return "not measured yet"
    rows = record["attributes"]
    text = (f"FR {min(r['flip_rate'] for r in rows):.1f}–{max(r['flip_rate'] for r in rows):.1f}% over "
            f"{len(rows)} attributes ({title.split(' (')[0]}, {record['n']} faces)")
    fva = [r["fva"] for r in rows if r.get("fva") is not None]
    return text + (f"; still the same person (FVA) {min(fva):.1f}–{max(fva):.1f}%" if fva else "")
