"""``recourse evaluate-counterfactuals``: FR, judge FR, oracle FR, MNAC, proximity, FD, time."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import recourse.cli.common as common
from recourse.cli.common import (
    _command_line, _counterfactual_config, _model_dir, _write_json, add_data_options, add_generation_options, shown,
)
from recourse.locations import assets_dir, strong_judge_dir
from recourse.names import QUALITY_ATTRIBUTES, SPLITS


def register(commands) -> None:
    quality = commands.add_parser("evaluate-counterfactuals", help="FR, judge FR, oracle FR, MNAC, proximity, FD, time")
    add_data_options(quality)
    add_generation_options(quality)
    quality.add_argument("--split", choices=SPLITS, default="test")
    quality.add_argument("--n", type=int, default=500)
    quality.add_argument("--attributes", nargs="+", default=list(QUALITY_ATTRIBUTES))
    quality.add_argument("--classifier", help="guiding classifier (default checkpoints/classifier)")
    quality.add_argument("--oracle", help="judging classifier (default checkpoints/oracle)")
    quality.add_argument("--judge", help="adversarially robust judge (default checkpoints/judge)")
    quality.add_argument("--strong-judge", help="the stronger robust judge (default checkpoints/strong-judge, if trained)")
    quality.add_argument("--no-identity", action="store_true", help="leave out FVA and FS (dlib's face descriptor)")
    quality.add_argument("--judges-file", help="the calibrated judges whose seen rates and shifts are reported "
                         "(default assets/results/independent-judges-test.json)")
    quality.add_argument("--no-independent-judges", action="store_true",
                         help="leave out the calibrated judges' verdicts")
    quality.add_argument("--save-counterfactuals", help="also write the counterfactuals here (.npz, float16), for "
                         "instruments trained later: scripts.measurements.rescore_judge")
    quality.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    quality.add_argument("--resume-dir", help="keep each batch made here; a rerun with the same folder and settings "
                         "makes only the missing ones")
    quality.add_argument("--json", help="write the report here")
    quality.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from recourse.generation import load_generator
    from recourse.generation.quality import evaluate_counterfactual_quality
    from recourse.instruments.identity import face_descriptor
    from recourse.progress import stage_bars
    from recourse.render.text import quality_lines

    config = _counterfactual_config(args)
    calibrated = _calibrated_judges(args)  # a missing judges file is said before any work
    if args.threads:
        torch.set_num_threads(args.threads)
    classifier = common.load_classifier(_model_dir(args, args.classifier))
    oracle = common.load_classifier(_model_dir(args, args.oracle, "oracle"))
    judge = common.load_classifier(_model_dir(args, args.judge, "judge"))
    strong_judge = _strong_judge(args)
    generator = load_generator(args.generator)
    images = common.load_images(args, args.split, classifier.config.resolution)
    subset = images.images[: args.n]
    bars = stage_bars("img")
    started = time.time()
    kept: dict[str, np.ndarray] = {}
    store = _batch_store(args, config) if args.resume_dir else None
    report = evaluate_counterfactual_quality(
        subset, images.images, classifier, oracle, generator, tuple(args.attributes), config,
        progress=lambda attribute, done, total: bars(f"counterfactuals {attribute}", done, total), judge=judge,
        identity=None if args.no_identity else face_descriptor(), reference_labels=images.labels,
        strong_judge=strong_judge, store=store, calibrated=calibrated,
        keep=(lambda attribute, counterfactuals: kept.__setitem__(attribute, counterfactuals.numpy().astype(np.float16)))
        if args.save_counterfactuals else None)
    if args.save_counterfactuals:
        Path(args.save_counterfactuals).parent.mkdir(parents=True, exist_ok=True)
        np.savez(args.save_counterfactuals, split=args.split, n=len(subset), **kept)
        print(f"counterfactuals (float16) saved to {shown(Path(args.save_counterfactuals))}")
    output = {"command": _command_line(args), "data": str(args.data), "split": args.split, "n": len(subset),
              "generator": str(args.generator), "seconds": round(time.time() - started, 1),
              "threads": torch.get_num_threads(), **report.to_dict()}
    _write_json(args.json, output)
    print("\n".join(quality_lines(report)))
    print(f"({len(subset)} images of split {args.split}; {time.time() - started:.0f} s)")
    return 0


def _strong_judge(args: argparse.Namespace):
    """The stronger robust judge, or None (said) where it is not trained or, unless named, not finished."""
    from recourse.models import training_unfinished

    strong = Path(args.strong_judge) if args.strong_judge else strong_judge_dir()
    strong_judge = common.load_classifier(strong) if strong.is_dir() else None  # not trained yet: left out, and said
    unfinished = training_unfinished(strong) if strong_judge is not None else None
    if unfinished and not args.strong_judge:  # an early epoch's checkpoint is not the judge fixed in advance
        strong_judge = None
    elif unfinished:  # named by the user: used, and said
        print(f"warning: the stronger judge at {shown(strong)} is {unfinished}")
    if strong_judge is None:
        print(f"no finished stronger judge at {shown(strong)}{f' ({unfinished})' if unfinished else ''}: "
              "its FR is left out")
    return strong_judge


def _calibrated_judges(args: argparse.Namespace):
    """The calibrated judges an evaluation reports (none with --no-independent-judges)."""
    from recourse.instruments.readings import CALIBRATIONS, calibrations

    if args.no_independent_judges:
        return ()
    path = Path(args.judges_file) if args.judges_file else assets_dir() / CALIBRATIONS
    if not path.is_file():
        raise ValueError(f"no calibrated judges at {shown(path)}: run scripts.measurements.calibrate_judges, or pass "
                         "--no-independent-judges")
    return calibrations(path)


def _batch_store(args: argparse.Namespace, config):
    """The resumable folder of an evaluation: it belongs to one run, named by everything that
    decides its pictures (settings, split, guiding classifier and generator weights). Not ``n``:
    a batch is keyed by its faces, so a shorter run reads the longer one's first batches."""
    from dataclasses import asdict

    from recourse.checkpoints import file_digest
    from recourse.generation.batch_store import BatchStore

    run = {"settings": asdict(config), "data": Path(args.data).name, "split": args.split,
           "classifier": file_digest(_model_dir(args, args.classifier)), "generator": file_digest(Path(args.generator))}
    store = BatchStore(args.resume_dir, run)
    if store.made():
        print(f"resuming: {store.made()} batches already made in {shown(Path(args.resume_dir))}")
    return store
