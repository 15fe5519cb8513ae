"""What the commands share: the model folders, the help texts and defaults several commands
name, the option sets several commands take (data, the audited pair, the generation settings
in groups by method), and the helpers that turn parsed options into the library's settings.

Only light modules here: torch, diffusers and OpenCV are imported inside the functions that use
them, so that --help and argument errors answer at once."""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import replace
from pathlib import Path

from recourse.locations import (  # noqa: F401  shown: re-exported for the commands
    DEFAULT_CACHE, generator_dir, guide_dir, judge_dir, oracle_dir, shown, strong_judge_dir, teacher_dir,
)
from recourse.names import COUNTERFACTUAL_METHODS, STOP_SEARCHES
from recourse.validation import finite_float

MODEL_DIRS = {"classifier": teacher_dir, "oracle": oracle_dir, "judge": judge_dir, "guide": guide_dir,
              "strong-judge": strong_judge_dir}
# The single-face commands (audit, counterfactual, scan) and the app show each recourse at the
# visible stop and read per-image numbers at the benchmark's validated margin, both chosen on
# validation (recourse.audit.stops); --margin moves the picture. The dataset commands keep the
# generator's own default (CounterfactualConfig.margin, 10, chosen for the denoised method).
SINGLE_FACE_MARGIN = None  # the visible stop, read from the committed files
DATASET_MARGIN = 10.0
# The denoised method's defaults, named in the help without importing torch (a test keeps them
# equal to CounterfactualConfig's).
DENOISED_SIGMA = 1.0
DENOISED_EDIT_STEPS = 24
DENOISED_REGION_EDIT_STEPS = 48
MARGIN_NOTES = {DATASET_MARGIN: ", the dataset commands' setting; audit, counterfactual and the app show the visible "
                                "stop chosen on validation (recourse/audit/stops.py)"}
PICTURE_MARGIN_HELP = ("the stop the picture is shown at, in logits past the boundary (default: an edit inside a part's "
                       "space at its attribute's own visible stop, assets/results/visible-stop-space-val.json, any other at "
                       "the one chosen on validation, assets/results/visible-stop-val.json; a margin given is used as "
                       "given; 0 = the boundary)")
NUMBERS_AT_HELP = ("where per-image validity, CRG and DirSim are read on each edit: benchmark (default: the margin the "
                   "benchmark validated, where weight noise rarely decides) or boundary (margin 0: mostly noise)")
METHOD_HELP = ("region-space (the default): each model steers its edit inside a learned space of the face part "
               "(mouth, eyes, face; the pixel edit for other parts); denoised: each model edits through the face "
               "denoiser; pca-walk: steps in the PCA face basis; pca-walk-cone: the same turned towards a shared "
               "robust guide")


# --- models, data and outputs ------------------------------------------------------------
# Commands call these as ``common.load_classifier`` (not imported by name), so that a test that
# replaces them here replaces them for every command.


def load_classifier(directory):
    from recourse.checkpoints import load_classifier as load

    return load(directory)


def load_framed_split(*args, **kwargs):
    from recourse.data import load_framed_split as load

    return load(*args, **kwargs)


def load_images(args: argparse.Namespace, split: str, resolution: int) -> LabelledImages:  # noqa: F821
    from recourse.data import detect_layout
    from recourse.progress import progress_bar

    verb = "aligning" if detect_layout(args.data) == "celeba" else "loading"
    images = load_framed_split(Path(args.data), split, resolution, _cache(args), progress_bar(f"{verb} {split}"))
    if images.framing:
        print(images.framing)
    return images


def device_name(device: str) -> str:
    """What a training record says it ran on: "cpu", or the GPU's name."""
    import torch

    return torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"


def _command_line(args: argparse.Namespace) -> str:
    return "python -m recourse " + " ".join(shlex.quote(a) for a in args.argv)


def _cache(args: argparse.Namespace) -> Path | None:
    return None if args.no_cache else Path(args.cache_dir)


def _write_json(path: str | None, report: dict) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(report, indent=2) + "\n")


def _model_dir(args: argparse.Namespace, given: str | None, preset: str = "classifier") -> Path:
    return Path(given) if given else MODEL_DIRS[preset]()


def expected_errors() -> tuple[type[Exception], ...]:
    """The errors a command reports in one line (exit 2) rather than as a traceback."""
    from recourse.checkpoints import CheckpointError
    from recourse.data import DatasetError
    from recourse.faces import FaceDetectorError

    return DatasetError, CheckpointError, FaceDetectorError, ValueError


def always(args: argparse.Namespace) -> bool:
    """``uses_committed_models`` of a command that reads ``checkpoints/`` whatever its options."""
    return True


# --- option sets -------------------------------------------------------------------------


def on_off(text: str) -> bool:
    """An argparse type: a switch written on/off (or true/false, as a recorded setting is)."""
    words = {"on": True, "true": True, "off": False, "false": False}
    if text.lower() not in words:
        raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")
    return words[text.lower()]


def add_data_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--data", required=True, help="a CelebA-HQ or original CelebA folder")
    sub.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="where decoded images are cached")
    sub.add_argument("--no-cache", action="store_true", help="decode images without reading or writing a cache")


def add_pair_options(command: argparse.ArgumentParser) -> None:
    """The pair audit and scan compare, and the attribute: a committed variant or an auditor's own cards."""
    command.add_argument("--variant", required=True,
                         help="compressed variant id, e.g. ptq-int8, or the model card (file or folder) of your own "
                              "compressed model (recourse/foreign/cards.py)")
    command.add_argument("--model", help="the model card of your own full-precision model, audited against --variant "
                                         "(default: the committed classifier)")
    command.add_argument("--attribute", required=True, help="one of the 40 CelebA attribute names, e.g. Smiling")


def add_denoised_options(sub: argparse.ArgumentParser) -> None:
    """The denoised method's settings, in their own group of the help."""
    group = sub.add_argument_group("denoised options", "with --counterfactual-method denoised (and region-space's "
                                                       "attributes without a face-part space: hair, ...)")
    group.add_argument("--sigma", type=finite_float,
                       help=f"denoised: noise level of the smoothing, [-1, 1] units (default {DENOISED_SIGMA:g})")
    group.add_argument("--edit-steps", type=int,
                       help=f"denoised: optimiser steps on the edit (default {DENOISED_EDIT_STEPS})")
    group.add_argument("--region-mask", type=on_off, metavar="on|off",
                       help="denoised: confine each model's edit to its attribute's face region, from the "
                            "face's landmarks (default on; the whole-face attributes stay over the frame)")
    group.add_argument("--whole-face-region", type=on_off, metavar="on|off",
                       help="denoised: confine the whole-face attributes (Young, Male, ...) to the face too "
                            "(default off)")
    group.add_argument("--region-edit-steps", type=int,
                       help=f"denoised: optimiser steps on a region-confined edit (default {DENOISED_REGION_EDIT_STEPS})")
    group.add_argument("--adaptive-share", type=finite_float,
                       help="denoised: cut the edited region to this share of it where the model's own "
                            "gradient is largest, 0-1 (MaskDiME's adaptive mask; default 1: no cut)")


def add_space_options(sub: argparse.ArgumentParser) -> None:
    """The region-space method's settings, in their own group of the help."""
    group = sub.add_argument_group("face-part options", "with --counterfactual-method region-space (the default)")
    group.add_argument("--space-steps", type=int, help="region-space: optimiser steps on the part's coefficients "
                                                       "(default 40)")
    group.add_argument("--space-prior-weight", type=finite_float,
                       help="region-space: weight of the part's prior around the target class (default 3)")
    group.add_argument("--space-box", type=finite_float,
                       help="region-space: the coefficients stay within this many standard deviations (default 3)")


def walk_options(sub: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The group of the help the walks' settings go in (each command adds those it takes)."""
    return sub.add_argument_group("pca-walk / cone walk options",
                                  "with --counterfactual-method pca-walk or pca-walk-cone")


def add_generation_options(sub: argparse.ArgumentParser, margin: float | None = DATASET_MARGIN) -> None:
    """The generator and its settings: the ones every method reads, then a group per method."""
    sub.add_argument("--generator", default=str(generator_dir()),
                     help="generator folder, or a diffusers pipeline folder or hub id")
    sub.add_argument("--counterfactual-method", choices=COUNTERFACTUAL_METHODS, help=METHOD_HELP)
    sub.add_argument("--margin", type=finite_float,
                     help=PICTURE_MARGIN_HELP if margin is None else
                     f"edit until the target logit is this far past the decision boundary (default "
                     f"{margin:g}{MARGIN_NOTES[margin]})")
    sub.add_argument("--seed", type=int)
    sub.add_argument("--keep-monochrome", type=on_off, metavar="on|off",
                     help="a black-and-white photo's edit changes its luminance only, whatever the method (default on)")
    add_space_options(sub)
    add_denoised_options(sub)
    walks = walk_options(sub)
    walks.add_argument("--steps", type=int, help="walks: DDIM steps over the whole schedule (DDIM stage)")
    walks.add_argument("--noise-level", type=finite_float,
                       help="walks: fraction of the schedule to noise to, 0-1 (default 0: no DDIM stage)")
    walks.add_argument("--guidance-scale", type=finite_float, help="walks: DDIM stage")
    walks.add_argument("--cone-degrees", type=finite_float,
                       help="pca-walk-cone: largest angle between an edit step and the robust guide's gradient "
                            "(default 15)")
    walks.add_argument("--finish-steps", type=int, help="walks: most editing steps (default 120)")
    walks.add_argument("--finish-learning-rate", type=finite_float,
                       help="walks: L2 length of one editing step in [0, 1] pixel units (default 0.3)")
    walks.add_argument("--stop-search", choices=STOP_SEARCHES,
                       help="walks: how the margin crossing between the last two steps is found (default "
                            "interpolate; denoised bisects)")


# --- parsed options -> the library's settings --------------------------------------------


def _counterfactual_config(args: argparse.Namespace, base=None):
    """The generation settings: ``base`` (default: ``CounterfactualConfig()``) with the options given."""
    from recourse.generation import CounterfactualConfig

    names = ("steps", "noise_level", "guidance_scale", "seed", "margin", "cone_degrees", "finish_steps",
             "finish_learning_rate", "stop_search", "sigma", "edit_steps", "region_mask", "whole_face_region",
             "region_edit_steps", "adaptive_share", "keep_monochrome", "space_steps", "space_prior_weight", "space_box")
    values = {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}
    if "edit_steps" in values and "region_edit_steps" not in values:  # as the app's slider: 24 → 48 in a region
        from recourse.generation.guidance import region_steps_for

        values["region_edit_steps"] = region_steps_for(values["edit_steps"])
    if getattr(args, "counterfactual_method", None) is not None:
        values["method"] = args.counterfactual_method
    return replace(base if base is not None else CounterfactualConfig(), **values)


def _single_face_settings(args: argparse.Namespace):
    """An audit's or a scan's settings: the generator's options given, the picture at --margin
    (default the visible stop), the numbers at --numbers-at."""
    from recourse.audit.result import product_settings
    from recourse.generation import CounterfactualConfig

    counterfactual = _counterfactual_config(args, CounterfactualConfig())
    return product_settings(args.margin, getattr(args, "numbers_at", "benchmark"),
                            replace(counterfactual, margin=CounterfactualConfig().margin))


def _is_card(value: str | None) -> bool:
    """Whether --variant names a model card rather than a committed variant id (light: --help
    and the id path import nothing of recourse.foreign)."""
    if value is None or not ("/" in value or value.endswith((".json", ".toml"))):
        return False
    from recourse.foreign.pairs import is_card

    return is_card(value)


def _audited_pair(args: argparse.Namespace):
    """``(variant name, teacher, student, black box)`` of an audit or scan: the committed pair
    (``None``s: the library loads them) or, where ``--variant`` (and ``--model``) are model
    cards, an auditor's own models (recourse.foreign.pairs)."""
    if args.model is None and not _is_card(args.variant):
        return args.variant, None, None, None
    if not _is_card(args.variant):
        raise ValueError(f"--model needs --variant to be a model card too, got {args.variant!r}: a committed "
                         "variant is audited against the committed classifier")
    from recourse.foreign.pairs import foreign_pair

    pair = foreign_pair(args.model, args.variant, args.attribute)
    return pair.name, pair.teacher, pair.student, pair.black_box


def black_box_line(name: str, forward_passes: int, estimates: int) -> str:
    return f"{name} is a black box: {forward_passes} forward passes ({estimates} zeroth-order gradients)"
