"""The instruments that judge counterfactuals, each beside its floor, read on a set of quality runs."""

from __future__ import annotations

from recourse.cli import EARLIER_GENERATION, generation_arguments
from recourse.names import QUALITY_ATTRIBUTES
from scripts.docs.results import files, judges
from scripts.docs.results.files import not_yet, rate

Runs = tuple[tuple[str, str], ...]  # (title, file) of quality runs

# The commands that measure today's generator with the instruments whose results are not committed yet.
QUALITY_WITH_INSTRUMENTS = ("python -m recourse evaluate-counterfactuals --data ../shared/data/celeba-hq-64 --split test "
                            "--n 500 --json assets/results/counterfactual-quality-test-denoised.json")
STRONG_JUDGE_CHECK = ("python -m scripts.measurements.judge_check --data ../shared/data/celeba-hq-64 --split val "
                      "--n 80 --threads 1 --costs assets/archive/counterfactual-quality-val.json "
                      "--attack classifier guide --judges judge strong-judge --json assets/results/judge-transfer-val.json")
DISCRIMINATOR = "edit-discriminator-test.json"
DISCRIMINATOR_CONE = "edit-discriminator-test-cone.json"  # the same check on the earlier cone walk's edits
DISCRIMINATOR_PAIRS = {split: "python -m scripts.figures.export_pairs --data ../shared/data/celeba-hq-64 --split "
                              f"{split} --n 200 --out out/realism/{split}-pairs.npz" for split in ("train", "test")}
DISCRIMINATOR_COMMANDS = (
    *DISCRIMINATOR_PAIRS.values(),
    "python -m scripts.measurements.edit_discriminator --data ../shared/data/celeba-hq-64 "
    "--train-pairs out/realism/train-pairs.npz "
    f"--test-pairs out/realism/test-pairs.npz --json assets/results/{DISCRIMINATOR}")
# scripts.figures.export_pairs' generation options
EXPORT_PAIRS_OPTIONS = {"method": "--method", "margin": "--margin", "region_mask": "--region-mask",
                        "keep_monochrome": "--keep-monochrome"}
NEAR_MAJORITY = 2.0  # accuracy points above the majority rate below which a judge does not see an attribute
JUDGE_ACCURACY = (("radius 1", "eval-judge-val.json"), ("radius 3 (strong)", "eval-strong-judge-val.json"))


def measured(key: str, runs: Runs) -> list[tuple[str, dict]]:
    """(split, attribute row) of every committed quality run of ``runs`` that reports ``key``."""
    found = []
    for split, name in runs:
        record = files.load(name)
        found += [(split, r) for r in (record or {}).get("attributes", []) if r.get(key) is not None]
    return found


def measured_table(key: str, runs: Runs, head: list[str], cells, missing: list[str]) -> list[str]:
    """A row per (split, attribute) of the committed quality runs that report ``key``, its
    cells from ``cells(row)``; ``missing`` where no run does."""
    found = measured(key, runs)
    if not found:
        return missing
    return head + [f"| {split} | {r['attribute']} | {cells(r)} |" for split, r in found] + [""]


def section(runs: Runs) -> list[str]:
    """Each instrument that judges counterfactuals, what it says, and its floor (docs/metrics.md)."""
    return ["## Instruments and their floors", "",
            "Each instrument below judges counterfactuals and never steers one (definitions in `docs/metrics.md`). "
            "None is read on its own: each beside its floor, what it gives where nothing was edited or where two "
            "good models are compared.", "",
            *identity_paragraph(runs), *judges_paragraph(runs), *judges.section(files.load),
            *judges.visible_stop_section(files.load), *realism_paragraph(runs), *discriminator_paragraph()]


def identity_paragraph(runs: Runs) -> list[str]:
    identity = files.load("identity-calibration.json")
    lines = ["### Identity: FVA and FS", ""]
    if identity is None:
        return lines + not_yet("The identity calibration", "python -m scripts.measurements.identity_calibration --data "
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
    return lines + fva_table(runs, not_yet("Today's generator's FVA and FS", QUALITY_WITH_INSTRUMENTS))


def fva_table(runs: Runs, missing: list[str]) -> list[str]:
    return measured_table("fva", runs, ["The committed quality runs:", "", "| run | attribute | FVA % | FS |",
                                        "|---|---|---:|---:|"], lambda r: f"{r['fva']:.1f} | {r['fs']:.3f}", missing)


def judges_paragraph(runs: Runs) -> list[str]:
    lines = ["### The two judges: judge FR at radius 1 and at radius 3", "",
             "Does a robust model that never guides see the attribute change? Judge FR counts a counterfactual when "
             "the judge's decision moves to the target, over the tasks where the judge agreed with the classifier "
             "before the edit. Its floor is the robustness check above: a plain attack of the counterfactuals' "
             "budget should not flip the judge."]
    record = files.load("judge-transfer-val.json")
    if record is not None and "judge" in record["judges"]:
        spans = {model: files.span([r["judges"]["judge"]["flip_rate"] for r in record["transfer"]
                                    if r["attacked"] == model]) for model in record["attacked"]}
        lines[-1] += (" For the radius-1 judge it holds against the classifier but not against the guide, its "
                      "near-twin: " + ", ".join(f"the attack on the {model} flips it on {span} of the faces"
                                               for model, span in spans.items())
                      + f" ({record['n']} {record['split']} faces). So judge FR at radius 1 partly measures transfer "
                        "between two radius-1 models; the stronger judge (radius 3, its own recipe and seed, fixed "
                        "before any result) is the reading to trust where the two differ.")
    lines.append("")
    lines += judges_accuracy_table()
    missing = not_yet("The strong judge's FR (it is being trained: `checkpoints/strong-judge`)",
                      QUALITY_WITH_INSTRUMENTS, STRONG_JUDGE_CHECK)
    return lines + judge_fr_table(runs, missing)


def judge_fr_table(runs: Runs, missing: list[str]) -> list[str]:
    """Each run's judge FR beside the ceiling of each judge."""
    return measured_table(
        "strong_judge_flip_rate", runs,
        ["The ceiling beside each FR is what that judge would give if every counterfactual were a "
         "real face of its target class (its rate of seeing real faces of that class as such, "
         "on the run's split, weighted by the counted tasks' targets): no realistic edit is "
         "expected to pass it, and a FR far above it is suspect.", "",
         "| run | attribute | judge FR % (tasks) | its ceiling % | strong judge FR % (tasks) "
         "| its ceiling % |", "|---|---|---:|---:|---:|---:|"],
        lambda r: f"{rate(r['judge_flip_rate'])} ({r['judge_agreed']}) | {rate(r.get('judge_ceiling'))} | "
                  f"{rate(r['strong_judge_flip_rate'])} ({r['strong_judge_agreed']}) | "
                  f"{rate(r.get('strong_judge_ceiling'))}", missing)


def judges_accuracy_table() -> list[str]:
    """Each judge's validation accuracy on the quality attributes beside the majority rate: a
    judge that stays at the majority cannot see the attribute, however robust it is."""
    records = [(title, files.load(name)) for title, name in JUDGE_ACCURACY]
    if any(record is None for _, record in records):
        return not_yet("The judges' accuracy against the majority rate", *(
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


def realism_paragraph(runs: Runs) -> list[str]:
    floor = files.load("realism-floor-test.json")
    lines = ["### Realism: oracle-feature FD and KID with a real-versus-real floor", ""]
    if floor is None:
        return lines + not_yet("The realism floor", "python -m scripts.measurements.realism_floor "
                               "--data ../shared/data/celeba-hq-64 --split test "
                               "--json assets/results/realism-floor-test.json")
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
    return lines + realism_table(runs, not_yet("Today's generator against this floor", QUALITY_WITH_INSTRUMENTS))


def realism_table(runs: Runs, missing: list[str]) -> list[str]:
    return measured_table(
        "realism_fd", runs,
        ["| run | attribute | faces per set | FD edits / floor | KID edits / floor |", "|---|---|---:|---:|---:|"],
        lambda r: f"{r['realism_n']} | {r['realism_fd']:.2f} / {r['floor_fd']:.2f} | "
                  f"{r['realism_kid']:.4f} / {r['floor_kid']:.4f}", missing)


def discriminator_paragraph() -> list[str]:
    lines = ["### Real versus edited: the discriminator's AUC", "",
             "Can a logistic regression on the oracle's features, trained on the train split's edits and matched real "
             "faces, tell the test split's edits from real ones? Its floor is AUC 0.5 (it cannot); its train AUC far "
             "above its test AUC says it memorised.", ""]
    record = files.load(DISCRIMINATOR)
    if record is None:
        return lines + not_yet("The discriminator's AUC", *DISCRIMINATOR_COMMANDS)
    lines += [f"Test AUC {record['auc']:.3f} (train {record['train_auc']:.3f}; {record['n_train']} train and "
              f"{record['n_test']} test faces, half of them edited):", "", "```bash",
              *pairs_commands(record), record["command"], "```", ""]
    earlier = files.load(DISCRIMINATOR_CONE)
    if earlier is not None:
        lines += [f"The earlier cone walk's edits (margin 6; `{files.location(DISCRIMINATOR_CONE)}`): test AUC "
                  f"{earlier['auc']:.3f} (train {earlier['train_auc']:.3f}).", ""]
    return lines


def pairs_commands(record: dict) -> list[str]:
    """The ``scripts.figures.export_pairs`` commands of a discriminator run's pairs, with the generation
    options that make today's defaults the pairs' recorded ones (``pairs_counterfactual``; a run
    that recorded none had pairs of the earlier defaults, ``recourse.cli.EARLIER_GENERATION``)."""
    from recourse.generation import CounterfactualConfig

    recorded = record.get("pairs_counterfactual") or {}
    return [" ".join([command, *generation_arguments(recorded.get(split) or EARLIER_GENERATION, CounterfactualConfig(),
                                                     EXPORT_PAIRS_OPTIONS)])
            for split, command in DISCRIMINATOR_PAIRS.items()]
