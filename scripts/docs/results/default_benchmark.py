"""The first test run on the default (denoised) generator: its design, the run and its statistics.

The design in the order it is carried out: the margin chosen on validation, N chosen from a
power calculation, then one test run on faces no other run used (``section``, on
``docs/results/benchmark.md``), with its corrected claims (``statistics``, on a page of their
own). Drawn from the committed files only."""

from __future__ import annotations

from collections.abc import Callable

from recourse.benchmark import BenchmarkResult
from recourse.benchmark.rows import NOISE_CONTROL, family_of
from recourse.benchmark.sweep import NOISE_VD_LIMIT, SweepPoint, chosen_margin, noise_control_vd
from recourse.benchmark.wall_time import segment_seconds
from recourse.render.claims import claims_table, direction_table, equivalence_table, wilson_table
from recourse.render.sweep_curves import curve_charts

VAL_SWEEP = "val-sweep-denoised.json"
POWER = "power-26.json"
TEST_RUN = "benchmark-denoised.json"
# A run cut by a session's end and resumed from its cache: each segment's start, end and the
# minutes it was paused (the run's own "seconds" covers its last segment only).
SEGMENTS = "benchmark-denoised-segments.json"
MARGIN_REACHED = "margin-reached-denoised.json"  # recourse margin-reached on the test run's cache
CLAIMS_PAGE = "benchmark-first-run-claims.md"  # under docs/results/: the test run's statistics (``statistics``)
# The test run as launched (tasks 500–699 of the test split: faces no earlier run used).
TEST_COMMAND = (
    "OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 -m recourse benchmark --data ../shared/data/celeba-hq-64 "
    "--split test --first-task 500 --tasks 200 --margin 2 --noise-draws 3 --noise-match-split val "
    "--reference-models checkpoints/classifier-seed1 --seed-level parametric --chunk-size 6 --variants ptq-int8 ptq-int4 "
    "ptq-int4-ends8 gptq gptq-int3 gptq-int2 cf-ptq prune-quant mixedprec-qat mixedprec-qat-s1 mixedprec-qat-s2 cfq-qat "
    "cfq-qat-s1 cfq-qat-s2 cfq-qat-norecourse cfq-qat-norecourse-s1 cfq-qat-norecourse-s2 kd-quant kd-quant-s1 "
    "kd-quant-s2 cfq-qat-target cfq-qat-target-s1 cfq-qat-target-s2 mixedprec-qat-b3 mixedprec-qat-b3-s1 "
    "mixedprec-qat-b3-s2 cfq-qat-b3 cfq-qat-b3-s1 cfq-qat-b3-s2 mixedprec-qat-b2 mixedprec-qat-b2-s1 "
    "mixedprec-qat-b2-s2 cfq-qat-b2 cfq-qat-b2-s1 cfq-qat-b2-s2 --out out/bench26-test")

Loader = Callable[[str], "dict | None"]


def _cells(values: list[float | None], digits: int = 1) -> str:
    return " | ".join("—" if v is None else f"{v:.{digits}f}" for v in values)


def margin_choice(sweep: dict, used: float) -> list[str]:
    """The validation sweep, the noise draws' VD at each margin, the margin the rule picks and
    whether the test run (at ``used``) follows it."""
    points = [SweepPoint(**p) for p in sweep["sweep"]]
    margin = chosen_margin(points)
    draws = sorted(name for name in points[0].students if family_of(name) == NOISE_CONTROL)
    others = [name for name in points[0].students if family_of(name) != NOISE_CONTROL]
    strict = chosen_margin(points, every_draw=True)
    lines = ["### The margin, chosen on validation", "",
             f"{sweep['n']} {sweep['split']} tasks, {len(draws)} noise draws matched on "
             f"{sweep['settings'].get('noise_match_split', 'the tasks')} faces, "
             f"{sweep['seconds']:.0f} s on {sweep['processes']} processes:", "", "```bash", sweep["command"], "```", "",
             "| margin | " + " | ".join(f"{p.margin:g}" for p in points) + " |",
             "|---|" + "---:|" * len(points),
             f"| noise control VD %, mean of {len(draws)} draws | {_cells([noise_control_vd(p) for p in points])} |"]
    lines += [f"| {name} VD % | {_cells([p.students[name]['vd'] for p in points])} |" for name in draws + others]
    rule = (f"The rule fixed in advance (`docs/metrics.md`: the smallest margin at which the noise control's VD, "
            f"the mean of its draws, is at most {NOISE_VD_LIMIT:g}%)")
    if margin is None:  # no swept margin passes: the rule picks none, and the page says so
        lines += ["", f"{rule} picks **no margin**: none of the swept margins passes. "
                      f"**The test run uses margin {used:g}.**", ""]
    else:
        lines += ["", f"{rule} picks **margin {margin:g}**"
                  + (f" (margin {strict:g} if every draw had to pass)" if strict is not None and strict != margin else "")
                  + (". The test run uses it." if used == margin else f". **The test run uses margin {used:g}.**"), ""]
    charts = curve_charts(points)
    if charts:
        lines += ["The same sweep as curves: VD, FA¾ and the signed Δlogit (the student's logit minus the teacher's "
                  "at x'_f, mean over S, positive toward the target) at every swept margin, each row against the noise "
                  "draws' mean (dashed) and range (grey):", "", charts, ""]
    return lines


def power_choice(power: dict, n: int) -> list[str]:
    """The power table behind N and which claims N tasks can carry."""
    claims = power["claims"]
    carried = [c["label"] for c in claims if c["tasks"] <= n]
    not_carried = [c["label"] for c in claims if c["tasks"] > n]
    lines = ["### How many tasks", "",
             f"Tasks each claim needs for {power['power']:.0%} power at two-sided α {power['alpha']:g} divided by "
             f"the {power['family_size']:,} claims of the corrected family (Holm's first step), from effects and "
             "spreads measured on validation (the directions at margin 10, the only validation run with these rows; "
             "the test run reports the same differences at its own margin):", "", "```bash", power["command"], "```", "",
             "| claim | kind | effect | assumption | tasks needed |", "|---|---|---:|---|---:|"]
    lines += [f"| {c['label']} | {c['kind']} | {c['effect']:+.3g} | {c['assumption']} | {c['tasks']:,} |" for c in claims]
    lines += ["", f"N = {n} tasks carries {len(carried)} of these {len(claims)}"
              + (f": {'; '.join(carried)}" if carried else "") + "."
              + (f" Underpowered at N = {n} (reported, not claimed unless the corrected test holds anyway): "
                 f"{'; '.join(not_carried)}." if not_carried else ""), ""]
    return lines


def wall_time(result: BenchmarkResult, sweep_seconds: float | None, segments: dict | None) -> list[str]:
    """The whole benchmark's wall time from an empty cache: the validation sweep and the test run."""
    if sweep_seconds is None:
        return []
    if segments is None:
        run, how = result.seconds, "the test run"
    else:
        run = segment_seconds(segments)
        count = len(segments["segments"])
        how = (f"the test run{f' in {count} segments' if count > 1 else ''} ({segments['how']}; "
               f"`assets/results/{SEGMENTS}`)")
    return [f"Wall time from an empty cache: the validation sweep {sweep_seconds:.0f} s + {how} {run:.0f} s = "
            f"{(sweep_seconds + run) / 3600:.2f} h on 2 cores (target ≤ 4 h).", ""]


def margin_line(reached: dict | None) -> list[str]:
    """Whether the teacher's recourse reached the stated margin, and how tightly it stopped."""
    if reached is None:
        return []
    return [f"The teacher's recourse reaches margin {reached['margin']:g} on {reached['reached']} of its "
            f"{reached['valid']} valid tasks; its logit at x'_f, signed towards the target, runs "
            f"{reached['minimum']:.3f}–{reached['maximum']:.3f} (median {reached['median']:.3f}): "
            f"`{reached['command']}`.", ""]


def test_run(record: dict, tables: Callable[[str, str, dict], list[str]], sweep_seconds: float | None,
             segments: dict | None = None, reached: dict | None = None) -> list[str]:
    """The run's table, its wall time and whether the teacher's recourse reached the margin."""
    result = BenchmarkResult.from_dict(record)
    first = record["settings"].get("first_task", 0)
    lines = tables(f"The test run: tasks {first}–{first + result.n - 1}", TEST_RUN, record)
    return lines + wall_time(result, sweep_seconds, segments) + margin_line(reached)


def statistics(load: Loader) -> list[str]:
    """The test run's statistics: directions with zero-length edits apart, Wilson intervals,
    TOST against the floor rows and the claims that survive correction."""
    record = load(TEST_RUN)
    lines = ["## The first test run's statistics", ""]
    if record is None:
        return lines + ["_The test run: not finished yet._ It comes from:", "", "```bash", TEST_COMMAND, "```", ""]
    result = BenchmarkResult.from_dict(record)
    first = record["settings"].get("first_task", 0)
    return lines + [f"### The test run: tasks {first}–{first + result.n - 1}", "",
                    "Its table, settings and command: [the benchmark](benchmark.md).", "",
                    "#### Directions, zero-length recourses apart", "", direction_table(result), "",
                    "#### Shares with Wilson intervals (never [0, 0])", "", wilson_table(list(result.families)), "",
                    "#### On the floor? TOST against the noise draws and the second full-precision seed", "",
                    equivalence_table(result), "",
                    "#### The claims that hold after correction (all attributes)", "", claims_table(result), ""]


def section(load: Loader, tables: Callable[[str, str, dict], list[str]]) -> list[str]:
    lines = ["## Benchmark on the default generator", "",
             "Every variant against the full-precision classifier, each model editing through the face denoiser on "
             "its own. The settings were chosen on validation only; the test run is the only one on its faces.", ""]
    sweep, power, record = load(VAL_SWEEP), load(POWER), load(TEST_RUN)
    if sweep is not None:
        used = record["settings"]["counterfactual"]["margin"] if record else float(_planned("--margin"))
        lines += margin_choice(sweep, used)
    if power is not None:
        lines += power_choice(power, record["n"] if record else int(_planned("--tasks")))
    if record is None:
        return lines + ["_The test run: not finished yet._ It comes from:", "", "```bash", TEST_COMMAND, "```", ""]
    return lines + test_run(record, tables, sweep["seconds"] if sweep else None, load(SEGMENTS), load(MARGIN_REACHED)) + [
        "Its directions with zero-length recourses apart, Wilson intervals, equivalence tests and corrected claims: "
        f"[the test run's statistics]({CLAIMS_PAGE}).", ""]


def _planned(option: str) -> str:
    """An option's value in the launched test command."""
    words = TEST_COMMAND.split()
    return words[words.index(option) + 1]
