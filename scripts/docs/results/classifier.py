"""The classifier-and-variants page: the classifier's accuracy per attribute and each compressed variant."""

from __future__ import annotations

from scripts.docs.results import default_benchmark, files

ACCURACY = ("eval-classifier-test.json", "eval-oracle-test.json", "eval-classifier-aligned.json")
ACCURACY_COMMANDS = (
    "python -m recourse evaluate --data ../shared/data/celeba-hq-64 --split test --json assets/results/eval-classifier-test.json",
    "python -m recourse evaluate --data ../shared/data/celeba-hq-64 --split test --model oracle --json assets/results/eval-oracle-test.json",
    "python -m recourse evaluate --data ../shared/data/celeba-aligned-dev --split all --no-cache --json assets/results/eval-classifier-aligned.json",
)


def accuracy_section() -> list[str]:
    reports = [r for r in map(files.load, ACCURACY) if r is not None]
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


def variants(record: dict) -> list[dict]:
    """The full-precision row and each compressed variant's (fewer than 32 bits per weight)."""
    return [row for row in record["rows"] if row["method"] == "fp32" or row["bits_per_weight"] < 32]


def variants_section() -> list[str]:
    """Each compressed variant's size, accuracy and agreement, as the benchmark's test run measured them."""
    lines = ["## The compressed variants", ""]
    record = files.load(default_benchmark.TEST_RUN)
    if record is None:
        return lines + ["_The benchmark's test run: not finished yet._ Its table lists every variant.", ""]
    lines += [f"Each variant the benchmark compares with the full-precision classifier (`fp32`), as its test run "
              f"measured them (`{files.location(default_benchmark.TEST_RUN)}`; accuracy on {record['accuracy_images']} "
              f"{record['split']} images, agreement with the classifier's decisions, latency of one face on the run's "
              "machine). How each is made: `docs/guide.md`; what each does to the recourse: "
              "[the benchmark](benchmark.md).", "",
              "| variant | bits/weight | size MB | Acc % | agreement % | batch-1 ms |",
              "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {row['method']} | {row['bits_per_weight']:.2f} | {row['size_mb']:.2f} | {row['acc']:.2f} | "
              f"{row['agreement']:.2f} | {row['latency_batch1_ms']:.2f} |" for row in variants(record)]
    return lines + [""]


def page() -> list[str]:
    return [*accuracy_section(), *variants_section()]


def headline() -> str:
    """The classifier's mean test accuracy, and how many variants at how many bits per weight."""
    parts = []
    evaluated = files.load(ACCURACY[0])
    if evaluated is not None:
        parts.append(f"{evaluated['mean_accuracy']:.2f}% mean {evaluated['split']} accuracy over "
                     f"{len(evaluated['per_attribute'])} attributes (majority rate "
                     f"{evaluated['majority_baseline_mean']:.2f}%)")
    record = files.load(default_benchmark.TEST_RUN)
    if record is not None:
        bits = [row["bits_per_weight"] for row in variants(record) if row["method"] != "fp32"]
        parts.append(f"{len(bits)} variants at {min(bits):.2f}–{max(bits):.2f} bits per weight")
    return "; ".join(parts) or "not measured yet"
