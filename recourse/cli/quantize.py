"""``recourse quantize``: make one compressed variant of the classifier."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from recourse import __version__
import recourse.cli.common as common
from recourse.cli.common import (
    _command_line, _counterfactual_config, _model_dir, add_data_options, add_generation_options, finite_float, shown,
)
from recourse.locations import variants_dir
from recourse.names import METHODS

# the method's settings: its config field -> the option that sets it
METHOD_OPTIONS = (("sparsity", "--sparsity"), ("steps", "--fine-tuning-steps"), ("budget", "--budget"),
                  ("seed", "--fine-tuning-seed"), ("recourse_objective", "--recourse-objective"),
                  ("recourse_weight", "--recourse-weight"), ("bits", "--bits"), ("ends_bits", "--ends-bits"),
                  ("bit_choices", "--bit-choices"))


def register(commands) -> None:
    quantize = commands.add_parser("quantize", help="make one compressed variant of the classifier")
    add_data_options(quantize)
    quantize.add_argument("--method", required=True, choices=METHODS)
    add_generation_options(quantize)  # for the recourse points of the counterfactual-aware methods
    quantize.add_argument("--sparsity", type=finite_float,
                          help="prune-quant: share of weights set to zero (default 0.3)")
    quantize.add_argument("--fine-tuning-steps", type=int, help="QAT methods: fine-tuning steps (default 300)")
    quantize.add_argument("--fine-tuning-seed", type=int, help="QAT methods: seed of the batches and dropout (default 0)")
    quantize.add_argument("--recourse-objective", choices=("match", "target"),
                          help="cfq-qat: match the teacher's logits at its recourse points and partial edits "
                               "(default), or the first version's BCE to the target (an ablation)")
    quantize.add_argument("--recourse-weight", type=finite_float,
                          help="cf-ptq, cfq-qat: weight of the recourse term (default 1; cfq-qat with 0 is its "
                               "no-recourse twin)")
    quantize.add_argument("--budget", type=finite_float,
                          help="mixed-precision methods: mean bits per weight (default 4.0)")
    quantize.add_argument("--bit-choices", type=int, nargs="+",
                          help="mixed-precision methods: the widths a layer may get (default 3 4 5 6 8; 2 allowed)")
    quantize.add_argument("--bits", type=int, help="gptq: weight bits of every layer but the ends (default 4)")
    quantize.add_argument("--ends-bits", type=int,
                          help="ptq-int4, gptq: weight bits of the first convolution and the head "
                               "(default: 4 for ptq-int4, 8 for gptq)")
    quantize.add_argument("--recourse-points", type=int, default=512,
                          help="cf-ptq, cfq-qat: training images to make the teacher's recourse points from")
    quantize.add_argument("--checkpoint", help="full-precision classifier (default checkpoints/classifier)")
    quantize.add_argument("--calibration-images", type=int, default=512)
    quantize.add_argument("--out", help="variant folder (default checkpoints/variants/<method>)")
    quantize.set_defaults(run=run)


def _method_config(args: argparse.Namespace):
    """The method's config from the options given; an option of another method is refused."""
    from recourse.compression import config_classes, make_config

    options = {"sparsity": args.sparsity, "steps": args.fine_tuning_steps, "budget": args.budget,
               "seed": args.fine_tuning_seed, "recourse_objective": args.recourse_objective,
               "recourse_weight": args.recourse_weight, "bits": args.bits, "ends_bits": args.ends_bits,
               "bit_choices": tuple(args.bit_choices) if args.bit_choices is not None else None}
    for option, flag in METHOD_OPTIONS:
        if options[option] is not None and option not in config_classes()[args.method].__dataclass_fields__:
            raise ValueError(f"{flag} does not apply to --method {args.method}")
    return make_config(args.method, calibration_images=args.calibration_images, **options)


def run(args: argparse.Namespace) -> int:
    import torch

    from recourse.compression import quantize, save_variant
    from recourse.compression.recourse_points import teacher_recourse_points
    from recourse.progress import stage_bars

    checkpoint = _model_dir(args, args.checkpoint)
    model = common.load_classifier(checkpoint)
    config = _method_config(args)
    train = common.load_images(args, "train", model.config.resolution)
    points, generation = None, {}
    if config.needs_recourse_points:
        counterfactual = _counterfactual_config(args)
        points = teacher_recourse_points(model, checkpoint / "model.safetensors", args.generator,
                                         torch.as_tensor(train.images[: args.recourse_points]),
                                         counterfactual, Path(args.cache_dir), stage_bars())
        # what the points were made with, so that reproduction() can name it once defaults change
        generation = {"counterfactual": asdict(counterfactual)}
    variant = quantize(model, config, torch.as_tensor(train.images), torch.as_tensor(train.labels), points,
                       progress=stage_bars())
    out = Path(args.out) if args.out else variants_dir() / args.method
    save_variant(variant, model, out, {"command": _command_line(args), "base_checkpoint": args.checkpoint or shown(checkpoint),
                                       "calibration_split": "train", "recourse_version": __version__, **generation})
    print(f"{args.method}: made in {variant.seconds:.1f} s; {variant.bits_per_weight:.3g} bits per weight; "
          f"saved to {out}")
    return 0
