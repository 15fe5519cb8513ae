"""The commands that reproduce recorded runs.

A result file or a variant records the command that made it; rerun today, the command takes
today's defaults. ``reproduction`` adds the options that bring back the recorded settings
where today's defaults differ, so that the command shown beside a number still makes it."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import asdict, replace

from recourse.cli.benchmark import _benchmark_settings
from recourse.cli.common import _counterfactual_config
from recourse.names import DEFAULT_ATTRIBUTES

# The generation settings of a run that recorded none (a variant's recourse points) or no
# method (runs made before there was a choice): the dataset commands' defaults until the
# denoised method became the default, the cone walk at margin 6; and edits over the whole frame
# (a run made before region masks became the default recorded none).
# A run made before black-and-white photos kept their chroma recorded no keep_monochrome.
EARLIER_GENERATION = {"method": "pca-walk-cone", "margin": 6.0, "region_mask": False, "keep_monochrome": False}
# CounterfactualConfig field -> the dataset commands' option (add_generation_options)
GENERATION_OPTIONS = {"method": "--counterfactual-method", "margin": "--margin", "seed": "--seed",
                      "steps": "--steps", "noise_level": "--noise-level", "guidance_scale": "--guidance-scale",
                      "cone_degrees": "--cone-degrees", "finish_steps": "--finish-steps",
                      "finish_learning_rate": "--finish-learning-rate", "stop_search": "--stop-search",
                      "sigma": "--sigma", "edit_steps": "--edit-steps", "region_mask": "--region-mask",
                      "whole_face_region": "--whole-face-region", "region_edit_steps": "--region-edit-steps",
                      "adaptive_share": "--adaptive-share", "keep_monochrome": "--keep-monochrome",
                      "space_steps": "--space-steps", "space_prior_weight": "--space-prior-weight",
                      "space_box": "--space-box"}
# The fields each counterfactual method reads besides method, margin and seed: a recorded value
# of another method's field (a walk's recorded sigma) changes nothing and is not repeated.
_WALK_SETTINGS = ("steps", "noise_level", "guidance_scale", "proximity_weight", "preserve_weight", "finish_steps",
                  "finish_learning_rate", "stop_search")
_DENOISED_SETTINGS = ("proximity_weight", "preserve_weight", "sigma", "edit_steps", "edit_learning_rate",
                      "edit_resolution", "overshoot", "mask_threshold", "mask_dilation", "inpaint_sigma", "inpaint_steps",
                      "denoised_output", "output_draws", "region_mask", "whole_face_region", "region_edit_steps",
                      "region_edit_learning_rate", "adaptive_share", "keep_monochrome")
METHOD_SETTINGS = {
    "pca-walk": (*_WALK_SETTINGS, "keep_monochrome"), "pca-walk-cone": (*_WALK_SETTINGS, "cone_degrees", "keep_monochrome"),
    "denoised": _DENOISED_SETTINGS,
    # region-space reads the denoised settings where no space models the attribute's part
    "region-space": (*_DENOISED_SETTINGS, "space_steps", "space_learning_rate", "space_prior_weight",
                     "space_class_prior", "space_box", "face_frozen_modes", "space_drop_residual",
                     "space_luminance_only"),
}
# BenchmarkSettings field -> benchmark's option; ``counterfactual`` takes GENERATION_OPTIONS. A
# run that recorded no ``analysis`` was made with LEGACY_ANALYSIS (from_record), so its command
# gets --analysis v1, which brings back its numbers; a record's dated spelling of a version
# (recourse.benchmark.settings.DATED_ANALYSES) is shown as the version.
BENCHMARK_OPTIONS = {"n": "--tasks", "first_task": "--first-task", "attributes": "--attributes", "margins": "--margins",
                     "noise_control": "--noise-control", "chunk_size": "--chunk-size", "student_stop": "--student-stop",
                     "noise_draws": "--noise-draws", "noise_match_split": "--noise-match-split",
                     "matched_noise": "--matched-noise",
                     "seed_level": "--seed-level", "task_weights": "--task-weights", "analysis": "--analysis"}
# Settings benchmark has no option for that a run may lack: the TOST margins only add the
# equivalence tests to a run made before them; seen_attributes follow --attributes.
_BENCHMARK_ADDED = ("equivalence_margins", "seen_attributes")


def _option_value(value) -> list[str]:
    """A setting as the command line writes it."""
    if isinstance(value, (tuple, list)):
        return [word for item in value for word in _option_value(item)]
    if isinstance(value, bool):
        return ["on" if value else "off"]
    if isinstance(value, float):
        return [f"{value:g}"]
    return [str(value)]


def generation_arguments(recorded: dict | None, today, options: dict[str, str] = GENERATION_OPTIONS) -> list[str]:
    """The options (``options``: field -> flag) that turn ``today``, the CounterfactualConfig a
    command makes now, into the ``recorded`` generation settings (an ``asdict`` of the config
    a run used; a field it lacks took the value of :data:`EARLIER_GENERATION` or, for fields added
    later with the behaviour of then, today's default). Only the fields the recorded method
    reads count; a difference no option can set is a ValueError."""
    from recourse.generation import CounterfactualConfig

    settings = replace(CounterfactualConfig(), **{**EARLIER_GENERATION, **(recorded or {})})
    arguments = []
    for field in ("method", "margin", "seed", *METHOD_SETTINGS[settings.method]):
        value = getattr(settings, field)
        if value == getattr(today, field):
            continue
        if field not in options:
            raise ValueError(f"the recorded {field} {value!r} (today {getattr(today, field)!r}) has no option here: "
                             "the command cannot reproduce the run")
        arguments += [options[field], *_option_value(value)]
    return arguments


def _benchmark_arguments(args: argparse.Namespace, recorded: dict | None) -> list[str]:
    """The options that make a parsed ``benchmark`` command use the ``recorded`` settings
    (BenchmarkSettings.from_record: a setting a run lacks did not exist yet and had its value
    of then)."""
    from recourse.benchmark import BenchmarkSettings

    if recorded is None:
        raise ValueError("a benchmark command is reproduced from its run's recorded settings")
    settings, today = BenchmarkSettings.from_record(recorded), _benchmark_settings(args)
    arguments = []
    for field in BenchmarkSettings.__dataclass_fields__:
        value, now = getattr(settings, field), getattr(today, field)
        if field == "counterfactual":
            arguments += generation_arguments(asdict(value), now)
        elif field == "seen_attributes":
            if value != tuple(a for a in DEFAULT_ATTRIBUTES if a in settings.attributes):
                raise ValueError(f"the recorded seen_attributes {value!r} are not those of its attributes")
        elif value != now and field not in _BENCHMARK_ADDED:
            if field not in BENCHMARK_OPTIONS:
                raise ValueError(f"the recorded {field} {value!r} (today {now!r}) has no option: the command "
                                 "cannot reproduce the run")
            shown_value = {"noise_control": "none", "noise_match_split": "tasks"}[field] if value is None else value
            arguments += [BENCHMARK_OPTIONS[field], *_option_value(shown_value)]
    return arguments


def reproduction(command: str, recorded: dict | None = None) -> str:
    """``command``, a recorded ``python -m recourse ...`` line, with the options that make it,
    run today, use the ``recorded`` settings where today's defaults differ: a benchmark's
    ``settings`` (its report's), evaluate-counterfactuals' generation ``settings``, quantize's
    recourse-point generation settings (a variant's ``counterfactual``; none recorded: those of
    :data:`EARLIER_GENERATION`). Another program's command is returned as it is (its defaults
    are its own)."""
    from recourse.cli.commands import build_parser

    words = shlex.split(command)
    if words[:3] != ["python", "-m", "recourse"] or len(words) < 4:
        return command
    try:
        args = build_parser().parse_args(words[3:])
    except SystemExit:  # argparse has printed why
        raise ValueError(f"today's command line does not read the recorded command {command!r}") from None
    if args.command == "benchmark":
        extra = _benchmark_arguments(args, recorded)
    elif args.command == "evaluate-counterfactuals" or (args.command == "quantize" and _uses_recourse_points(args.method)):
        extra = generation_arguments(recorded, _counterfactual_config(args))
    else:
        return command
    return " ".join([command, *map(shlex.quote, extra)])


def _uses_recourse_points(method: str) -> bool:
    from recourse.compression import config_classes

    return config_classes()[method].needs_recourse_points
