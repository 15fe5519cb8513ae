"""``recourse benchmark``: all variants against the classifier: Acc, VD, CRG, DirSim, cost, speed."""

from __future__ import annotations

import argparse
from pathlib import Path

from recourse.cli.common import (
    _cache, _command_line, _counterfactual_config, _model_dir, add_data_options, add_generation_options, finite_float,
)
from recourse.locations import variants_dir
from recourse.names import DEFAULT_ATTRIBUTES, HELD_OUT_ATTRIBUTES, METHODS, SPLITS

# recourse.benchmark.settings' ANALYSES, ANALYSIS and LEGACY_ANALYSIS, named here without importing
# torch (a test keeps them equal): every analysis version, the default and the first one
ANALYSES = ("v1", "v2", "v3")
ANALYSIS, LEGACY_ANALYSIS = "v3", "v1"


def register(commands) -> None:
    bench = commands.add_parser("benchmark", help="all variants against the classifier: Acc, VD, CRG, DirSim, cost, speed")
    add_data_options(bench)
    add_generation_options(bench)
    bench.add_argument("--split", choices=SPLITS, default="test")
    bench.add_argument("--n", "--tasks", dest="n", type=int, default=500,
                       help="recourse tasks (one per image, attributes in turn); under torchrun or accelerate "
                            "launch write --tasks, since their own parsers read --n as one of their options")
    bench.add_argument("--first-task", type=int, default=0,
                       help="task (image of the split) to start at: a second run on other faces starts at --tasks")
    bench.add_argument("--out", required=True, help="folder for benchmark.json, benchmark.md and the resumable cache")
    bench.add_argument("--keep-dir", help="keep the parts that hold no picture here (each row's per-task records, the "
                                          "teacher's without its counterfactuals): a folder small enough to commit, "
                                          "from which a run longer than a session goes on in the next")
    bench.add_argument("--variants", "--methods", dest="variants", nargs="+", default=list(METHODS),
                       help="variant folders of --variants-dir: method ids, seeds (-s1) and ablations "
                            "(default: one per method)")
    bench.add_argument("--attributes", nargs="+", default=list(DEFAULT_ATTRIBUTES + HELD_OUT_ATTRIBUTES),
                       help="the four of the recourse points (Smiling, Young, Male, Eyeglasses) are reported "
                            "apart from the others, which no method saw")
    bench.add_argument("--margins", nargs="*", type=finite_float, default=[],
                       help="margin sweep: VD, false acceptance and cost of the teacher's recourse at these margins")
    bench.add_argument("--noise-control", default="ptq-int4",
                       help="variant whose agreement the full-precision-plus-weight-noise control row matches "
                            "('none': no control)")
    bench.add_argument("--checkpoint", help="full-precision classifier (default checkpoints/classifier)")
    bench.add_argument("--variants-dir", help="folder of variant folders (default checkpoints/variants)")
    bench.add_argument("--chunk-size", type=int, default=20, help="tasks per cached chunk")
    bench.add_argument("--student-stop", choices=("decider", "twin"), default="decider",
                       help="where each student's own edit stops: on the model whose decisions are scored (default) "
                            "or on its float twin (the committed runs)")
    bench.add_argument("--noise-draws", type=int, default=3, help="noise controls, one per noise seed (default 3)")
    bench.add_argument("--matched-noise", nargs="*", default=[], metavar="VARIANT",
                       help="variants that each get a noise floor of their own: --noise-draws draws matched to that "
                            "variant's agreement (rows fp32-noise@VARIANT, fp32-noise-s1@VARIANT, ...), against which "
                            "its TOST is read instead of the noise control's (docs/metrics.md)")
    bench.add_argument("--noise-match-split", choices=("val", "train", "test", "tasks"), default="val",
                       help="faces the noise control's sigma is matched on (default val; 'tasks': the run's own "
                            "images, as the committed runs did)")
    bench.add_argument("--seed-level", choices=("parametric", "resample"), default="parametric",
                       help="the intervals' seed level: s/sqrt(k)·t(k-1) (default) or the seeds resampled")
    bench.add_argument("--task-weights", choices=("multinomial", "dirichlet"), default="multinomial",
                       help="the intervals' task level: the ordinary bootstrap (default) or the Bayesian one")
    bench.add_argument("--analysis", choices=ANALYSES, default=ANALYSIS,
                       help=f"the analysis version, how families are compared and claims counted: {ANALYSIS} "
                            "(default; v2 and each row placed in its matched-noise family and among the retrained "
                            "seeds), v2 (family means in either order, TOST inside the correction families) or "
                            f"{LEGACY_ANALYSIS} (seed k against seed k mod K, every test one family; a record that "
                            "names no analysis was made with it; docs/metrics.md, \"Analysis versions\")")
    bench.add_argument("--primary-family", metavar="FILE",
                       help="a registered primary family (assets/results/benchmark-primary.json): its claims are "
                            "read by Holm over exactly themselves and every other claim is secondary (docs/metrics.md)")
    bench.add_argument("--placement-family", metavar="FILE",
                       help="registered placement claims (assets/results/benchmark-placement.json): rows inside or "
                            "outside their matched-noise family or the retrained seeds, Holm over exactly those "
                            "claims; the run must be the one the file registered")
    bench.add_argument("--reference-models", nargs="*", default=[],
                       help="other full-precision classifier folders (independently retrained seeds), each a "
                            "reference row fp32-ref-<folder>, together the family fp32-ref: the bottom floor of "
                            "DirSim and CRG")
    bench.add_argument("--rerun-floor", action="store_true",
                       help="add the row fp32-rerun, the classifier's own recourse made again with fresh noise: "
                            "the top floor of DirSim and CRG (docs/metrics.md)")
    bench.add_argument("--models", nargs="*", default=[],
                       help="model cards (files or folders) of your own models, each a row against the classifier; "
                            "a quantized one is also timed against the float model of the same runtime given here "
                            "(docs/foreign-models.md)")
    bench.set_defaults(run=run)


def _benchmark_settings(args: argparse.Namespace):
    """The BenchmarkSettings of a parsed ``benchmark`` command."""
    from recourse.benchmark import BenchmarkSettings
    from recourse.benchmark.placement_claims import RegisteredPlacements
    from recourse.benchmark.semantic import RegisteredFamily

    return BenchmarkSettings(n=args.n, first_task=args.first_task, attributes=tuple(args.attributes),
                             chunk_size=args.chunk_size,
                             counterfactual=_counterfactual_config(args),
                             seen_attributes=tuple(a for a in DEFAULT_ATTRIBUTES if a in args.attributes),
                             margins=tuple(args.margins),
                             noise_control=None if args.noise_control == "none" else args.noise_control,
                             student_stop=args.student_stop, noise_draws=args.noise_draws,
                             matched_noise=tuple(args.matched_noise),
                             noise_match_split=None if args.noise_match_split == "tasks" else args.noise_match_split,
                             seed_level=args.seed_level, task_weights=args.task_weights, analysis=args.analysis,
                             primary_family=RegisteredFamily.from_file(args.primary_family)
                             if args.primary_family else None,
                             placement_family=RegisteredPlacements.from_file(args.placement_family)
                             if getattr(args, "placement_family", None) else None)


def run(args: argparse.Namespace) -> int:
    from recourse.benchmark import BenchmarkConfig, run_benchmark
    from recourse.progress import stage_bars
    from recourse.render.benchmark import markdown_table, write_markdown

    settings = _benchmark_settings(args)
    config = BenchmarkConfig(
        data=Path(args.data), out=Path(args.out), split=args.split, settings=settings, variants=tuple(args.variants),
        checkpoint=_model_dir(args, args.checkpoint), variants_dir=Path(args.variants_dir or variants_dir()),
        generator=args.generator, image_cache=_cache(args), command=_command_line(args),
        reference_models=tuple(Path(folder) for folder in args.reference_models),
        models=tuple(Path(card) for card in args.models), rerun_floor=args.rerun_floor,
        kept=Path(args.keep_dir) if args.keep_dir else None)
    for registration in (args.primary_family, args.placement_family):
        if registration:
            _refuse_unregistered_run(registration, config)
    result = run_benchmark(config, stage_bars("task"))
    if result is not None:
        write_markdown(result, config.out)
        print(markdown_table(list(result.rows)))
        from recourse.benchmark.claims import missing_claims

        missing = missing_claims(list(result.claims), settings.primary_family)
        if missing:  # registered before the run: a row it lacks is said, never dropped
            print(f"{len(missing)} registered claims could not be tested (no such row, or no judged task): "
                  + ", ".join(f"{c.family} {c.kind}" for c in missing))
        print(f"wrote {config.out / 'benchmark.json'} and {config.out / 'benchmark.md'} in {result.seconds:.0f} s")
    return 0


def _refuse_unregistered_run(path: str, config) -> None:
    """A run that reads registered claims must be the registered run (its file's run block)."""
    from recourse.benchmark.registration import deviations, registered_run

    settings = config.settings
    try:
        found = deviations(registered_run(path), split=config.split, first_task=settings.first_task, tasks=settings.n,
                           attributes=settings.attributes, margin=settings.counterfactual.margin,
                           variants=config.variants, generator=config.generator, noise_draws=settings.noise_draws,
                           matched_noise=settings.matched_noise, rerun_floor=config.rerun_floor,
                           reference_models=len(config.reference_models))
    except ValueError as error:
        raise SystemExit(f"error: {error}")
    if found:
        raise SystemExit(f"error: this run is not the one {path} registered: " + "; ".join(found)
                         + ". Run the registered settings, or drop --primary-family and --placement-family for an "
                           "exploratory run.")

