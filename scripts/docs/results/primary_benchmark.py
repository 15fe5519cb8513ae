"""The registered benchmark: does compression make a model's recourse less of a change
a person sees? The registration, committed before the run; the run's answer (the registered
claims); what each judge saw; the directions between their floors; VD as a curve; and how every
claim is recomputed from the committed per-task columns. Drawn from the committed files only."""

from __future__ import annotations

from collections.abc import Callable

from recourse.benchmark import BenchmarkResult
from recourse.benchmark.judged_shares import shares_by_attribute
from recourse.benchmark.saved_columns import read_columns
from recourse.benchmark.sweep import SweepPoint, family_curves, noise_band, outside_band
from recourse.benchmark.wall_time import segment_seconds
from recourse.render.claims import correction_name, held_claims, statistics_report
from recourse.render.semantic import judges_table, registered_summary, registered_table
from recourse.render.sweep_curves import CURVE_LABELS, curve_charts
from scripts.docs.results import files

REGISTRATION = "benchmark-primary.json"
RUN_FOLDER = "benchmark-primary-run"  # under assets/results/: the run's record, markdown and columns as written
RUN = f"{RUN_FOLDER}/benchmark.json"
# The run spans sessions: each segment's start, end and minutes paused (the record's "seconds" is its last segment's)
SEGMENTS = f"{RUN_FOLDER}/segments.json"
# The same command again from an empty cache and keep-dir, alone on the cores (tests beside it paused it):
# its segments, and its parts and record compared with the committed ones
RERUN_SEGMENTS = f"{RUN_FOLDER}/rerun-segments.json"
RERUN_COMPARED = f"{RUN_FOLDER}/rerun-compared.json"
PARTS = "assets/results/benchmark-primary-parts"
SWEEPS = ("val-sweep-primary/benchmark.json", "val-sweep-denoised.json")  # the VD curve: the newest sweep there is
RUN_COMMAND = (
    "OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 -m recourse benchmark --data ../shared/data/celeba-hq-64 "
    "--split test --first-task 700 --tasks 120 --attributes Smiling Young Male Mouth_Slightly_Open --margin 2 "
    "--variants ptq-int8 ptq-int4 gptq cf-ptq cfq-qat mixedprec-qat kd-quant prune-quant gptq-int2 cfq-qat-b2 "
    "mixedprec-qat-b2 --matched-noise ptq-int8 ptq-int4 gptq-int2 --rerun-floor --reference-models "
    "checkpoints/classifier-seed1 checkpoints/classifier-seed2 checkpoints/classifier-seed3 "
    f"--primary-family assets/results/{REGISTRATION} --out out/bench-primary --keep-dir {PARTS}")
RECOMPUTE = f"python -m recourse recompute-claims assets/results/{RUN}"

Loader = Callable[[str], "dict | None"]
Tables = Callable[[str, str, dict], list[str]]


def registration(record: dict) -> list[str]:
    """What was fixed before the run: the question, the metric and its judges, the rule, α, the
    claims, the power calculation and every amendment (each made before any result)."""
    metric, run, power = record["metric"], record["run"], record["power"]
    rows = list(dict.fromkeys(c["row"] for c in record["claims"]))
    kinds = sorted({c["kind"] for c in record["claims"]})
    lines = ["### Registered before the run", "",
             f"`assets/results/{REGISTRATION}` (`{record['command']}`, {record['registered']}) was committed before "
             f"the run began: `git log --format='%h %ci %s' -- assets/results/{REGISTRATION} {PARTS}` lists its "
             "commits before the first of the run's kept parts (`tests/test_primary_benchmark_doc.py` checks the "
             "order).", "",
             f"- **Question.** {record['question']}",
             f"- **Per task.** {metric['per_task']}.",
             "- **Judges** (trained on other faces): " + "; ".join(f"{a}: {j}" for a, j in metric["judges"].items())
             + ".",
             f"- **Claims.** {len(record['claims'])}: {' and '.join(kinds)} for each of {len(rows)} rows "
             f"({', '.join(rows)}) against the teacher.",
             f"- **Rule.** {record['rule']}",
             f"- **α** {record['alpha']:g}; TOST margin ±{record['equivalence_margin_points']:g} points; "
             f"{run['tasks']} {run['split']} tasks from {run['first_task']}, margin {run['margin']:g}.",
             f"- **Power** (from `{power['from']}`, {power['tasks']} tasks, α {power['alpha_per_claim']:.4g} per "
             "claim): " + "; ".join(
                 f"discordance {p['discordance']:g}: "
                 + (f"a {p['detectable_difference_points']:g}-point difference at {power['target_power']:.0%}"
                    if p["detectable_difference_points"] is not None else "no detectable difference")
                 + f", TOST power {p['equivalence_power_at_zero']:.2f} at no difference"
                 for p in power["by_discordance"]) + f". {power['note'].capitalize()}."]
    for amendment in record.get("amendments", []):
        when = "before any result" if amendment.get("before_any_result") else "after results"
        lines.append(f"- **Amended {amendment['date']}, {when}:** {amendment['changed']}. Why: {amendment['why']}. "
                     f"Unchanged: {amendment['unchanged']}. {amendment['consequence'][:1].upper()}{amendment['consequence'][1:]}")
    return lines + [""]


def answer(result: BenchmarkResult) -> list[str]:
    """The registered claims read by their rule, and the teacher's own rate beside each row's."""
    return ["### The answer: the registered claims", "",
            "Each row's own recourse (its edit stopped on its own decisions) against the teacher's own, on the same "
            "judged tasks; the difference's 95% interval, its family-wise (Bonferroni over the registered claims) "
            "interval, and Holm's p over the registered family for the difference and the TOST. "
            f"Readings: {registered_summary(result)}.", "", registered_table(result), ""]


def judges(record_path: str, result: BenchmarkResult) -> list[str]:
    """Each judge's seen rate and shift of every model's own recourse, attribute by attribute."""
    path = files.found(record_path).parent / result.columns["file"]
    saved = read_columns(path)
    shares = shares_by_attribute(saved.attributes, saved.rows, saved.semantic)
    return ["### What each judge saw of each model's own recourse", "",
            "Per attribute: the share of its judged tasks whose own recourse is valid for the model and seen by the "
            "attribute's judge (semantic validity, %), and the judge's mean shift toward the target (the score's "
            "change over the gap between the real classes' means; 1 is the whole gap). The floors' rows "
            "(`fp32-rerun`, `fp32-ref-…`, `fp32-noise…`) say how far the same question moves without compression. "
            f"From `{files.location(record_path).rsplit('/', 1)[0]}/{result.columns['file']}`.", "",
            judges_table(shares), ""]


def vd_curve(load: Loader) -> list[str]:
    """VD, FA¾ and the signed Δlogit over the swept margins beside the noise draws', from the
    newest validation sweep, with the generator it was made with said plainly."""
    name = next((n for n in SWEEPS if load(n) is not None), None)
    if name is None:
        return ["### VD as a curve", "", "No validation sweep is committed.", ""]
    sweep = load(name)
    points = [SweepPoint(**p) for p in sweep["sweep"]]
    settings = sweep["settings"]["counterfactual"]
    regions = settings.get("region_mask")
    generator = ("the default generator (each edit confined to its attribute's face region)" if regions else
                 "edits over the whole frame (no region mask): the curve at the run's own generator settings is not "
                 "measured")
    noise = sweep["settings"]
    draws = (f"the {noise['noise_draws']} noise draws matched to `{noise['noise_control']}`'s agreement"
             if noise.get("noise_control") and noise.get("noise_draws") else "the noise draws")
    return ["### VD as a curve", "",
            f"VD, FA¾ and the signed Δlogit at each swept margin, each row against {draws}: their mean (dashed) and "
            f"range (grey); {sweep['n']} {sweep['split']} tasks of `{files.location(name)}`, made with {generator}. "
            "At the run's margin 2 the noise draws' VD is near 0 by the margin rule's design, so one margin's VD "
            "cannot tell a 3- or 4-bit method from noise; the curve shows where each row leaves its draws.", "",
            "```bash", files.current_paths(sweep["command"]), "```", "", curve_charts(points), "",
            *band_reading(points)]


def band_reading(points: list[SweepPoint], metrics: tuple[str, ...] = ("vd", "logit_lean")) -> list[str]:
    """Where each row's curve leaves its noise draws' range, for each of ``metrics``, read from the sweep."""
    lines = []
    for metric in metrics:
        band = noise_band(points, metric)
        if band is None:
            return []
        readings = []
        for curve in family_curves(points, metric):
            left = outside_band(curve, band)
            where = ", ".join(f"{margin:g} ({'above' if side > 0 else 'below'})" for margin, side in left)
            readings.append(f"`{curve.name}` {'outside it at margins ' + where if left else 'inside it at every margin'}")
        lines += [f"Against the draws' range of {CURVE_LABELS[metric][0]} (min–max of {len(band.draws)}, not a test): "
                  + "; ".join(readings) + ".", ""]
    return lines


def wall_time(segments: dict | None, rerun: dict | None = None, compared: dict | None = None,
              limit_hours: float = 3.0) -> list[str]:
    """The run's wall time over its segments against the benchmark's limit; then, where it was
    made, the same command's again from an empty cache with nothing beside it, and whether
    it reproduced the run."""
    if segments is None:
        return []
    hours = segment_seconds(segments) / 3600
    lines = [f"Wall time: {hours:.2f} h on 2 cores in {len(segments['segments'])} segments, pauses left out "
             f"({'within' if hours <= limit_hours else 'over'} the {limit_hours:g} h the benchmark is allowed): "
             f"{segments['how']} (`{files.location(SEGMENTS)}`).", ""]
    if rerun is not None:
        again = segment_seconds(rerun) / 3600
        paused = sum(s.get("paused_minutes", 0.0) for s in rerun["segments"])
        lines += [f"The same command again, from an empty cache and keep-dir: {again:.2f} h on 2 cores in "
                  f"{len(rerun['segments'])} segment(s), {paused:.0f} min of pauses left out "
                  f"({'within' if again <= limit_hours else 'over'} the {limit_hours:g} h): {rerun['how']} "
                  f"(`{files.location(RERUN_SEGMENTS)}`).", ""]
    if compared is not None:
        parts, largest = compared["parts"], compared["largest_difference"]
        differences = compared.get("record_differences", [])
        verdict = "it reproduced the run" if compared["identical"] else "it did **not** reproduce the run"
        lines += [f"Against the committed run, {verdict}: {parts['teacher']} teacher and {parts['student']} other "
                  f"parts compared, largest difference {max(largest.values()):g}; "
                  f"{len(differences)} values of the record differ, clock readings left out"
                  + (f" ({', '.join(differences[:5])}{' …' if len(differences) > 5 else ''})" if differences else "")
                  + f" (`{files.location(RERUN_COMPARED)}`):", "", "```bash", files.current_paths(compared["command"]), "```", ""]
    return lines


def recompute_line() -> list[str]:
    return ["Every number of the run, its claims included, recomputes from the committed per-task columns alone "
            "(no model, face or cache; the columns' SHA-256 is checked against the record's):", "",
            "```bash", RECOMPUTE, "```", ""]


def section(load: Loader, tables: Tables) -> list[str]:
    lines = ["## The registered benchmark: does compression keep recourse a change a person sees?", ""]
    registered = load(REGISTRATION)
    if registered is not None:
        lines += registration(registered)
    record = load(RUN)
    if record is None:
        return lines + ["_The registered run: not finished yet._ It comes from:", "", "```bash", RUN_COMMAND, "```",
                        "", *vd_curve(load)]
    result = BenchmarkResult.from_dict(record)
    return lines + [*answer(result), *judges(RUN, result), *vd_curve(load),
                    *tables(f"The run: tasks {result.settings.get('first_task', 0)}–"
                            f"{result.settings.get('first_task', 0) + result.n - 1}", RUN, record),
                    *wall_time(load(SEGMENTS), load(RERUN_SEGMENTS), load(RERUN_COMPARED)), *recompute_line(),
                    "Every other claim of the run is secondary (Benjamini–Hochberg within its family): "
                    "[the statistics](benchmark-claims.md).", ""]


def statistics(load: Loader) -> list[str]:
    """The run's directions with zero-length edits apart, Wilson intervals, equivalence tests and
    every claim, each correction family by its own correction."""
    record = load(RUN)
    lines = ["## The registered run's statistics", ""]
    if record is None:
        return lines + ["_Not finished yet._", ""]
    result = BenchmarkResult.from_dict(record)
    return lines + ["Its table, settings and command: [the benchmark](benchmark.md); the registered claims are "
                    "read there, every other one here is secondary.", "", statistics_report(result)]


def headline(load: Loader) -> str | None:
    """The run's size and how many claims of each correction family hold; None before the run."""
    record = load(RUN)
    if record is None:
        return None
    result = BenchmarkResult.from_dict(record)
    held = held_claims(list(result.claims))
    return (f"N = {result.n} test tasks, registered: {registered_summary(result)}; " + ", ".join(
        f"{done:,} of {tested:,} {name} claims hold after {correction_name(name)}'s correction"
        for name, (done, tested) in held.items()))
