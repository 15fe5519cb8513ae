"""``recourse evaluate``: per-attribute accuracy of a classifier."""

from __future__ import annotations

import argparse
import time

import recourse.cli.common as common
from recourse.cli.common import MODEL_DIRS, _model_dir, _write_json, add_data_options, shown
from recourse.names import SPLITS


def register(commands) -> None:
    evaluate = commands.add_parser("evaluate", help="per-attribute accuracy of a classifier")
    add_data_options(evaluate)
    evaluate.add_argument("--split", choices=SPLITS, default="test")
    evaluate.add_argument("--model", choices=sorted(MODEL_DIRS), default="classifier")
    evaluate.add_argument("--checkpoint", help="checkpoint folder (default checkpoints/<model>)")
    evaluate.add_argument("--json", help="write the report here")
    evaluate.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from recourse.checkpoints import read_config
    from recourse.data import detect_layout
    from recourse.evaluation import evaluate_accuracy
    from recourse.render.text import accuracy_lines

    checkpoint = _model_dir(args, args.checkpoint, args.model)
    model = common.load_classifier(checkpoint)
    images = common.load_images(args, args.split, model.config.resolution)
    started = time.time()
    result = evaluate_accuracy(model, images.images, images.labels)
    report = {
        "model": args.model, "checkpoint": args.checkpoint or shown(checkpoint), "data": str(args.data),
        "layout": detect_layout(args.data), "split": args.split, **result.to_dict(),
        "seconds": round(time.time() - started, 1), "recorded_test_accuracy": read_config(checkpoint).get("test_accuracy"),
    }
    _write_json(args.json, report)
    print("\n".join(accuracy_lines(result, args.model, args.split)))
    return 0
