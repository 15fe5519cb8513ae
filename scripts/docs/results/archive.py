"""The archive pages: runs superseded by today's defaults, kept for comparison, their files under assets/archive/."""

from __future__ import annotations

from scripts.docs.results import files, instruments, quality, stability
from scripts.docs.results.benchmark import METRIC_NAMES, benchmark_tables
from scripts.docs.results.files import not_yet, rate

BENCHMARKS = (("test", "benchmark.json"), ("test, a second run on other faces", "benchmark-second.json"),
              ("validation: the margin sweep that chose the table's margin", "benchmark-val-sweep.json"),
              ("test, the two-model floor (a second full-precision classifier)", "benchmark-reference.json"))
REPLICATION = "benchmark-replication.json"
REFERENCE_BENCHMARK = ("python -m recourse benchmark --data ../shared/data/celeba-hq-64 --split test --tasks 180 --margin 2 "
                       "--variants ptq-int4 gptq --reference-models checkpoints/classifier-seed1 --out out/bench-reference")
CONE_WALK = ("made with the earlier default generator (the PCA walk turned towards a shared robust guide, "
             "`--counterfactual-method pca-walk-cone`)")


def page() -> list[str]:
    """archive.md: what is here and why, the earlier quality and stability runs, the instruments on them."""
    return ["Runs superseded by today's defaults, kept for comparison: " + CONE_WALK + ", its ablation without the "
            "guide (`pca-walk`), or the denoised generator at its earlier σ. Their files lie under `assets/archive/`; "
            "a command recorded in one names the file where it was written then (and the script where it was then), "
            "and is shown here naming where each lies now. Today's results: [the index](README.md).", "",
            "- [The cone walk's benchmark](archive-benchmark.md): its test run, the validation margin sweep and the "
            "two-model floor.",
            "- [The cone walk's second benchmark run](archive-benchmark-second.md), on other faces, and how well it "
            "reproduces the first.", "",
            "## Counterfactual quality of the earlier generators", "",
            "Measured as on [the quality page](quality.md), which defines each column.", "",
            *files.sections(quality.EARLIER, quality.quality_table),
            "## Stability of per-image numbers on the earlier cone walk", "",
            "Made with the earlier cone walk (`--method pca-walk-cone`), at the margins they name.", "",
            *files.sections(stability.EARLIER, stability.stability_table),
            *earlier_instruments(), *divergence_paragraph()]


def earlier_instruments() -> list[str]:
    """The instruments' readings of the earlier quality runs (their floors: the quality page)."""
    return ["## The instruments on the earlier runs", "",
            "Each instrument's definition and floor: [the quality page](quality.md), \"Instruments and their "
            "floors\".", "",
            "### Identity: FVA and FS", "", *instruments.fva_table(quality.EARLIER, ["_None measured._", ""]),
            "### The two judges: judge FR at radius 1 and at radius 3", "",
            *instruments.judge_fr_table(quality.EARLIER, ["_None measured._", ""]),
            "### Realism: oracle-feature FD and KID", "",
            *instruments.realism_table(quality.EARLIER, ["_None measured._", ""])]


def benchmark_page() -> list[str]:
    """archive-benchmark.md: the cone walk's first test run, its margin sweep and the two-model floor."""
    return ["## Earlier benchmark runs, on the cone walk", "",
            "Every variant against the full-precision classifier (VD = Validity Drop; definitions in "
            "`docs/metrics.md`), " + CONE_WALK + ", which forced the models' recourse directions together: "
            "superseded by [the benchmark on the default generator](benchmark.md), kept for comparison. The app's "
            "Benchmark tab reads the same files. The second run on other faces: "
            "[its page](archive-benchmark-second.md).", "",
            *files.sections(BENCHMARKS[:1] + BENCHMARKS[2:], benchmark_tables)]


def second_page() -> list[str]:
    """archive-benchmark-second.md: the cone walk's second test run and the replication of the first."""
    return ["## The cone walk's benchmark, a second run on other faces", "",
            "The same benchmark as [the first run](archive-benchmark.md) (" + CONE_WALK + "), on the next tasks of "
            "the test split; superseded by [the benchmark on the default generator](benchmark.md), kept for "
            "comparison.", "",
            *files.sections(BENCHMARKS[1:2], benchmark_tables), *replication_section()]


def divergence_paragraph() -> list[str]:
    lines = ["### The two-model divergence floor", "",
             "How different are two good models' recourses? A second full-precision classifier, the same recipe with "
             "another seed, takes a variant's place in the benchmark (row `fp32-ref-<folder>`): its VD, CRG and DirSim "
             "against the teacher are what an independently trained model gives, the reference a variant's must be "
             "read against (with the noise control), never 0 and 100.", ""]
    found = []
    for title, name in BENCHMARKS:
        record = files.load(name)
        found += [(title, row) for row in (record or {}).get("rows", []) if row["method"].startswith("fp32-ref-")]
    if not found:
        return lines + not_yet("The two-model floor (the seed-1 classifier is being trained into "
                               "`out/classifier-seed1`)", REFERENCE_BENCHMARK)
    lines += ["| run | row | VD % | CRG | DirSim |", "|---|---|---:|---:|---:|"]
    lines += [f"| {title} | {row['method']} | {rate(row.get('vd'))} | "
              f"{'—' if row.get('crg') is None else format(row['crg'], '.3f')} | {rate(row.get('dirsim'))} |"
              for title, row in found]
    return lines + [""]


def _claim(value: list[float], digits: int) -> str:
    return f"{value[0]:+.{digits}f} [{value[1]:.{digits}f}, {value[2]:.{digits}f}]"


def replication_section() -> list[str]:
    record = files.load(REPLICATION)
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
