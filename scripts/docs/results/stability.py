"""The stability-and-speed page: per-image numbers under a one-pixel nudge, and seconds per counterfactual."""

from __future__ import annotations

from scripts.docs.results import files

# The stability runs of the default generator, each under its title.
STABILITY = (("The default generator (denoised, σ 1.0, margin 10, the bisected stop)", "stability-test-denoised.json"),
             ("The default generator: the same pixels in another layout, batch and order",
              "stability-test-denoised-layout.json"))
SPEED = "method-speed-val.json"


def stability_section() -> list[str]:
    return ["## Stability of per-image numbers", "",
            "The default generator's records.", "",
            *files.sections(STABILITY, stability_table)]


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



def speed_section() -> list[str]:
    """Seconds per counterfactual of the default generator, one face at a time."""
    record = files.load(SPEED)
    lines = ["## Seconds per counterfactual", ""]
    if record is None:
        return lines + files.not_yet("The default generator's speed", "python -m recourse method-speed --data "
                                     f"../shared/data/celeba-hq-64 --n 6 --methods denoised --json assets/results/{SPEED}")
    runs = [record[key] for key in record if key.startswith("margin_")]
    lines += [f"The full-precision model, one face at a time ({record['conditions']}; `{files.location(SPEED)}`):", "",
              "```bash", *(record[f"command_margin_{run['margin']:g}"] for run in runs), "```", "",
              "| method | margin | counterfactuals | median s | min s | max s |", "|---|---:|---:|---:|---:|---:|"]
    for run in runs:
        for method, timing in run["methods"].items():
            seconds = timing["seconds"]
            lines.append(f"| {method} | {run['margin']:g} | {len(seconds)} | {timing['median_s']:.2f} | "
                         f"{min(seconds):.2f} | {max(seconds):.2f} |")
    return lines + ["", "The quality runs' seconds per counterfactual, attribute by attribute, are on the "
                        "[quality page](quality.md); the benchmark's wall time on [the benchmark](benchmark.md).", ""]


def page() -> list[str]:
    return [*stability_section(), *speed_section()]


def headline() -> str:
    """How often a one-pixel nudge leaves CRG within its bound, and the median seconds per counterfactual."""
    parts = []
    record = files.load(STABILITY[0][1])
    if record is not None and "share_crg_within_0.05" in record:
        parts.append(f"a one-pixel nudge moves CRG_i by at most 0.05 on {record['share_crg_within_0.05']:.1f}% of "
                     f"{record['tasks']} tasks")
    speed = files.load(SPEED)
    if speed is not None:
        run = next(speed[key] for key in speed if key.startswith("margin_"))
        method, timing = next(iter(run["methods"].items()))
        parts.append(f"median {timing['median_s']:.2f} s per counterfactual (`{method}`, margin {run['margin']:g})")
    return "; ".join(parts) or "not measured yet"
