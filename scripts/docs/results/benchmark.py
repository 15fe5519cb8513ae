"""The benchmark pages: the default generator's run, its statistics and the tables every run shares."""

from __future__ import annotations

from recourse.benchmark import BenchmarkResult
from recourse.benchmark.settings import BenchmarkSettings
from recourse.cli import reproduction
from recourse.render.benchmark import (
    PAIRED_REFERENCES, families_table, family_paired_table, first_of_each_family, markdown_table, paired_table,
    sweep_table,
)
from recourse.render.claims import correction_name, held_claims
from recourse.render.floors import floors_section
from recourse.render.sweep_curves import curve_charts
from scripts.docs.results import default_benchmark, files, placement_benchmark, primary_benchmark

METRIC_NAMES = {"vd": ("VD", "lower", 1), "fa_75": ("FA¾", "lower", 1), "logit_gap": ("|Δlogit|", "lower", 2),
                "crg": ("CRG", "lower", 3), "dirsim": ("DirSim", "higher", 1)}
DIRECTIONS = "dirsim-references-val.json"
SWEEP_CHARTS = ("The sweep as curves: VD, FA¾ and the signed Δlogit (the student's logit minus the teacher's at x'_f, "
                "mean over S, positive toward the target) at every swept margin, each family's mean over its seeds "
                "against the noise draws' mean (dashed) and range (grey); the values: `benchmark.md` beside the "
                "run's record.")


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


def held_out_attributes(result: BenchmarkResult) -> list[str]:
    """The run's attributes that no recourse point was made on, in the run's order: its held-out
    group, as the run itself split its tasks (a run may hold eight of them, or only one)."""
    seen = BenchmarkSettings.from_record(result.settings).seen_attributes
    return [attribute for attribute in result.attributes if attribute not in seen]


def held_out_heading(held_out: list[str]) -> str:
    noun = "attribute" if len(held_out) == 1 else "attributes"
    return f"On the {len(held_out)} held-out {noun} only ({', '.join(held_out)}):"


def benchmark_tables(title: str, name: str, record: dict) -> list[str]:
    result = BenchmarkResult.from_dict(record)
    margin = result.settings.get("counterfactual", {}).get("margin")
    lines = [f"### {title}", "", f"`{reproduction(result.command, record['settings'])}` ({result.date}, "
             f"{result.seconds:.0f} s, N = {result.n} "
             f"tasks, attributes {', '.join(result.attributes)}, margin {margin}; "
             f"`{files.location(name.replace('.json', '.md'))}` adds intervals and per-attribute values)", "",
             markdown_table(list(result.rows)), ""]
    families = list(result.families)
    floors = floors_section(list(result.rows), families)  # a run with both floors only
    if floors:
        lines += [floors, ""]
    if families:
        lines += ["Each method over its fine-tuning seeds: mean ± sd across seeds [95% interval, bootstrap over "
                  "seeds and tasks].", "", families_table(families), ""]
        if any("held_out" in f.metrics for f in families):
            lines += [held_out_heading(held_out_attributes(result)), "", families_table(families, "held_out"), ""]
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
        names = first_of_each_family(list(result.rows))
        lines += ["Margin sweep: the teacher's recourse made to each margin; VD % [95% interval over tasks, where "
                  "recorded] / FA¾ % of each model:", "",
                  sweep_table(list(result.sweep), names), ""]
        charts = curve_charts(list(result.sweep))  # a sweep of two noise draws or more only
        if charts:
            lines += [SWEEP_CHARTS, "", charts, ""]
    return lines



def _interval(row: dict, metric: str, digits: int) -> str:
    value, (low, high) = row.get(metric), row["intervals"].get(metric, [None, None])
    if value is None:
        return "—"
    return f"{value:.{digits}f}" + ("" if low is None else f" [{low:.{digits}f}, {high:.{digits}f}]")


def direction_section() -> list[str]:
    """DirSim and CRG on the default generator beside a second full-precision classifier."""
    record = files.load(DIRECTIONS)
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
    return lines + ["", "Zero-length edits (the model already decides the target on the face) are counted apart and "
                        f"left out of DirSim (`dirsim_moved`; here {zero or 'none'}). A second full-precision classifier "
                        "of another seed (`fp32-ref-…`) is the reference a variant's direction is read against.",
                    ""]


EARLIER_RUNS = ("The runs below came before the registered one: the recourse directions on validation, and the "
                "first test run on the default generator (tasks 500–699), which has no registered family, no judges "
                "and not the floors on both sides that the registered run above is read between.")


def page() -> list[str]:
    return [*placement_benchmark.section(files.load), *primary_benchmark.section(files.load, benchmark_tables),
            "## Earlier runs on the default generator", "",
            EARLIER_RUNS, "",
            *direction_section(), *default_benchmark.section(files.load, benchmark_tables)]


def claims_page() -> list[str]:
    """The registered run's statistics (its registered claims are read on the benchmark page)."""
    return [*primary_benchmark.statistics(files.load),
            f"The first test run's statistics: [their page]({default_benchmark.CLAIMS_PAGE}).", ""]


def first_run_claims_page() -> list[str]:
    return default_benchmark.statistics(files.load)


def headline() -> str:
    """The test run's size and how many of its claims hold after correction: each correction
    family by its own (a newer run's primary by Holm, secondary by Benjamini–Hochberg); the
    committed runs' one family of paired differences by Holm."""
    primary = primary_benchmark.headline(files.load)
    if primary is not None:
        return primary
    record = files.load(default_benchmark.TEST_RUN)
    if record is None:
        return "the test run: not finished yet"
    result = BenchmarkResult.from_dict(record)
    held = held_claims(list(result.claims))
    if set(held) == {""}:
        done, tested = held[""]
        return f"N = {result.n} test tasks; {done:,} of {tested:,} paired differences hold after Holm's correction"
    return f"N = {result.n} test tasks; " + ", ".join(
        f"{done:,} of {tested:,} {name} claims hold after {correction_name(name)}'s correction"
        for name, (done, tested) in held.items())
