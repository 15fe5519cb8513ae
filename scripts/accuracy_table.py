"""Render ``python -m recourse evaluate --json`` reports as one Markdown table.

    python -m scripts.accuracy_table out/eval-classifier-test.json out/eval-oracle-test.json ...

One column per report, then the majority-class baseline of each distinct data set.
"""

import json
import sys


def main(paths: list[str]) -> None:
    reports = [json.loads(open(path).read()) for path in paths]
    baselines = {}
    for report in reports:
        baselines.setdefault((report["layout"], report["split"], report["n_images"]), report)
    headers = [f"{r['model']}: {r['layout']} {r['split']}" for r in reports]
    headers += [f"majority: {layout} {split}" for layout, split, _ in baselines]
    print("| attribute | " + " | ".join(headers) + " |")
    print("|---|" + "---:|" * len(headers))
    for attribute in reports[0]["per_attribute"]:
        values = [f"{r['per_attribute'][attribute]:.2f}" for r in reports]
        values += [f"{b['majority_baseline_per_attribute'][attribute]:.2f}" for b in baselines.values()]
        print(f"| {attribute} | " + " | ".join(values) + " |")
    means = [f"**{r['mean_accuracy']:.2f}**" for r in reports] + [f"{b['majority_baseline_mean']:.2f}" for b in baselines.values()]
    print("| **mean** | " + " | ".join(means) + " |")
    print("| images | " + " | ".join(str(r["n_images"]) for r in reports) + " |" + " |" * len(baselines))


if __name__ == "__main__":
    main(sys.argv[1:])
