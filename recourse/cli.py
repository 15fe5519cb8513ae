"""Command line: ``recourse <command> ...`` (or ``python -m recourse``). Argument parsing only:
each command turns its arguments into the library's config and calls the library."""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

# Only light modules here: torch, diffusers and OpenCV are imported inside the commands
# that use them, so that --help and argument errors answer at once.
from recourse import __version__
from recourse.names import (
    COUNTERFACTUAL_METHODS, DEFAULT_ATTRIBUTES, HELD_OUT_ATTRIBUTES, METHODS, QUALITY_ATTRIBUTES, SPLITS, STOP_SEARCHES,
)
from recourse.paths import (
    DEFAULT_CACHE, assets_dir, checkpoints_dir, generator_dir, guide_dir, home_message, judge_dir, oracle_dir, require_checkpoints,
    shown, strong_judge_dir, teacher_dir, variants_dir,
)
from recourse.validation import check_outputs, finite_float

MODEL_DIRS = {"classifier": teacher_dir, "oracle": oracle_dir, "judge": judge_dir, "guide": guide_dir,
              "strong-judge": strong_judge_dir}
# The single-face commands (audit, counterfactual, scan) and the app show each recourse at the
# visible stop and read per-image numbers at the benchmark's validated margin, both chosen on
# validation (recourse.stops); --margin moves the picture. The dataset commands keep the
# generator's own default (CounterfactualConfig.margin, 10, chosen for the denoised method).
SINGLE_FACE_MARGIN = None  # the visible stop, read from the committed files
DATASET_MARGIN = 10.0
# The denoised method's defaults, named in the help without importing torch (a test keeps them
# equal to CounterfactualConfig's).
DENOISED_SIGMA = 1.0
DENOISED_EDIT_STEPS = 24
MARGIN_NOTES = {DATASET_MARGIN: ", the dataset commands' setting; audit, counterfactual and the app show the visible "
                                "stop chosen on validation (recourse/stops.py)"}
PICTURE_MARGIN_HELP = ("the stop the picture is shown at, in logits past the boundary (default: the visible stop chosen "
                       "on validation, assets/results/visible-stop-val.json; 0 = the boundary)")
NUMBERS_AT_HELP = ("where per-image validity, CRG and DirSim are read on each edit: benchmark (default: the margin the "
                   "benchmark validated, where weight noise rarely decides) or boundary (margin 0: mostly noise)")
METHOD_HELP = ("denoised (the default): each model edits through the face denoiser; pca-walk: steps in the PCA face "
               "basis; pca-walk-cone: the same turned towards a shared robust guide")

# --- the commands that reproduce recorded runs -------------------------------------------
# A result file or a variant records the command that made it; rerun today, the command takes
# today's defaults. ``reproduction`` adds the options that bring back the recorded settings
# where today's defaults differ, so that the command shown beside a number still makes it.
#
# The generation settings of a run that recorded none (a variant's recourse points) or no
# method (runs made before there was a choice): the dataset commands' defaults until the
# denoised method became the default, the cone walk at margin 6.
EARLIER_GENERATION = {"method": "pca-walk-cone", "margin": 6.0}
# CounterfactualConfig field -> the dataset commands' option (add_generation_options)
GENERATION_OPTIONS = {"method": "--counterfactual-method", "margin": "--margin", "seed": "--seed",
                      "steps": "--steps", "noise_level": "--noise-level", "guidance_scale": "--guidance-scale",
                      "cone_degrees": "--cone-degrees", "finish_steps": "--finish-steps",
                      "finish_learning_rate": "--finish-learning-rate", "stop_search": "--stop-search",
                      "sigma": "--sigma", "edit_steps": "--edit-steps", "region_mask": "--region-mask",
                      "adaptive_share": "--adaptive-share"}
# The fields each counterfactual method reads besides method, margin and seed: a recorded value
# of another method's field (a walk's recorded sigma) changes nothing and is not repeated.
_WALK_SETTINGS = ("steps", "noise_level", "guidance_scale", "proximity_weight", "preserve_weight", "finish_steps",
                  "finish_learning_rate", "stop_search")
METHOD_SETTINGS = {
    "pca-walk": _WALK_SETTINGS, "pca-walk-cone": (*_WALK_SETTINGS, "cone_degrees"),
    "denoised": ("proximity_weight", "preserve_weight", "sigma", "edit_steps", "edit_learning_rate", "edit_resolution",
                 "overshoot", "mask_threshold", "mask_dilation", "inpaint_sigma", "inpaint_steps", "denoised_output",
                 "output_draws", "region_mask", "adaptive_share"),
}
# BenchmarkSettings field -> benchmark's option; ``counterfactual`` takes GENERATION_OPTIONS
BENCHMARK_OPTIONS = {"n": "--tasks", "first_task": "--first-task", "attributes": "--attributes", "margins": "--margins",
                     "noise_control": "--noise-control", "chunk_size": "--chunk-size", "student_stop": "--student-stop",
                     "noise_draws": "--noise-draws", "noise_match_split": "--noise-match-split",
                     "seed_level": "--seed-level", "task_weights": "--task-weights"}
# Settings benchmark has no option for that a run may lack: the TOST margins only add the
# equivalence tests to a run made before them; seen_attributes follow --attributes.
_BENCHMARK_ADDED = ("equivalence_margins", "seen_attributes")


def load_classifier(directory):
    from recourse.checkpoints import load_classifier as load

    return load(directory)


def load_framed_split(*args, **kwargs):
    from recourse.data import load_framed_split as load

    return load(*args, **kwargs)


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


def load_images(args: argparse.Namespace, split: str, resolution: int) -> LabelledImages:
    from recourse.data import detect_layout
    from recourse.progress import progress_bar

    verb = "aligning" if detect_layout(args.data) == "celeba" else "loading"
    images = load_framed_split(Path(args.data), split, resolution, _cache(args), progress_bar(f"{verb} {split}"))
    if images.framing:
        print(images.framing)
    return images


def command_train_classifier(args: argparse.Namespace) -> int:
    import torch

    from recourse.checkpoints import update_config
    from recourse.evaluation import evaluate_accuracy
    from recourse.training import PRESETS, train_classifier

    if args.threads:
        torch.set_num_threads(args.threads)
    model_config, train_config = PRESETS[args.preset]
    overrides = {k: v for k, v in (("epochs", args.epochs), ("seed", args.seed),
                                   ("adversarial_radius", args.adversarial_radius)) if v is not None}
    train_config = replace(train_config, **overrides)
    out = Path(args.out) if args.out else checkpoints_dir() / args.preset
    state = Path(args.state or DEFAULT_CACHE / f"train-{args.preset}.pt")
    train = load_images(args, "train", model_config.resolution)
    val = load_images(args, "val", model_config.resolution)
    result = train_classifier(train, val, out, model_config, train_config, state, metadata={
        "role": args.preset, "training_command": _command_line(args), "recourse_version": __version__,
        "data_split": {"train": "CelebA-HQ ids 0-23999", "val": "24000-26999", "test": "27000-29999"},
        "threads": torch.get_num_threads(),
    })
    test = load_images(args, "test", model_config.resolution)
    test_result = evaluate_accuracy(load_classifier(out), test.images, test.labels)
    update_config(out, training_seconds=round(result.seconds, 1), history=result.history,
                  test_accuracy=test_result.mean, test_accuracy_per_attribute=test_result.per_attribute)
    print(f"best epoch {result.best_epoch}: val {result.best_val_accuracy:.2f}%, "
          f"test {test_result.mean:.2f}% (majority {test_result.baseline_mean:.2f}%), "
          f"{result.seconds / 60:.1f} min of training; saved to {out}")
    return 0


def command_evaluate(args: argparse.Namespace) -> int:
    from recourse.checkpoints import read_config
    from recourse.data import detect_layout
    from recourse.evaluation import evaluate_accuracy
    from recourse.render.text import accuracy_lines

    checkpoint = _model_dir(args, args.checkpoint, args.model)
    model = load_classifier(checkpoint)
    images = load_images(args, args.split, model.config.resolution)
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


def command_train_generator(args: argparse.Namespace) -> int:
    from recourse.generation.training import GeneratorTrainConfig, train_generator

    config = GeneratorTrainConfig(**{k: v for k, v in (("steps", args.steps), ("seed", args.seed)) if v is not None})
    train = load_images(args, "train", args.resolution)
    val = load_images(args, "val", args.resolution)
    result = train_generator(train.images, val.images, args.out, config, Path(args.state_dir), metadata={
        "training_command": _command_line(args), "recourse_version": __version__,
        "data_split": "CelebA-HQ train ids 0-23999"})
    print(f"denoiser loss {result.final_loss:.4f}; basis reconstruction error on val {result.reconstruction_error:.4f}; "
          f"{result.seconds / 60:.1f} min of denoiser training; saved to {args.out}")
    return 0


def command_train_denoiser(args: argparse.Namespace) -> int:
    import torch

    from recourse.generation.denoiser_training import DenoiserTrainConfig, pinned_config, train_denoiser
    from recourse.generation.generators import FACE_DENOISER_FOLDER

    if args.threads:
        torch.set_num_threads(args.threads)
    given = {k: v for k, v in (("steps", args.steps), ("seed", args.seed), ("batch_size", args.batch_size),
                               ("fold", args.fold), ("block_out_channels", args.channels and tuple(args.channels)),
                               ("attention_levels", args.attention and tuple(bool(a) for a in args.attention)),
                               ("sigma_max", args.sigma_max)) if v is not None}
    try:
        config = pinned_config(args.state_dir, DenoiserTrainConfig(**given), given)
    except (TypeError, ValueError) as error:
        raise SystemExit(f"error: {error}")
    train = load_images(args, "train", 64)
    val = load_images(args, "val", 64)
    stop_requested = []  # SIGTERM (a session's end, `kill`): save this step's state and leave
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.append(True))
    ema = train_denoiser(train.images, val.images[:256], Path(args.state_dir), config, init_from=args.init_from,
                         metadata={"training_command": _command_line(args), "recourse_version": __version__,
                                   "data_split": "CelebA-HQ train ids 0-23999; curve on val ids 24000-24255"},
                         max_minutes=args.max_minutes, should_stop=lambda: bool(stop_requested))
    print(f"EMA weights in {ema}; copy them to {generator_dir() / FACE_DENOISER_FOLDER} to commit them")
    return 0


def _single_face_settings(args: argparse.Namespace):
    """An audit's or a scan's settings: the generator's options given, the picture at --margin
    (default the visible stop), the numbers at --numbers-at."""
    from recourse.audit import product_settings
    from recourse.generation import CounterfactualConfig

    counterfactual = _counterfactual_config(args, CounterfactualConfig())
    return product_settings(args.margin, getattr(args, "numbers_at", "benchmark"),
                            replace(counterfactual, margin=CounterfactualConfig().margin))


def _counterfactual_config(args: argparse.Namespace, base=None):
    """The generation settings: ``base`` (default: ``CounterfactualConfig()``) with the options given."""
    from recourse.generation import CounterfactualConfig

    names = ("steps", "noise_level", "guidance_scale", "seed", "margin", "cone_degrees", "finish_steps",
             "finish_learning_rate", "stop_search", "sigma", "edit_steps", "region_mask", "adaptive_share")
    values = {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}
    if getattr(args, "counterfactual_method", None) is not None:
        values["method"] = args.counterfactual_method
    return replace(base if base is not None else CounterfactualConfig(), **values)


def on_off(text: str) -> bool:
    """An argparse type: a switch written on/off (or true/false, as a recorded setting is)."""
    words = {"on": True, "true": True, "off": False, "false": False}
    if text.lower() not in words:
        raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")
    return words[text.lower()]


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


def command_evaluate_counterfactuals(args: argparse.Namespace) -> int:
    import torch

    from recourse.progress import stage_bars
    from recourse.generation import load_generator
    from recourse.generation.quality import evaluate_counterfactual_quality
    from recourse.instruments.identity import face_descriptor
    from recourse.render.text import quality_lines

    import numpy as np

    config = _counterfactual_config(args)
    calibrated = _calibrated_judges(args)  # a missing judges file is said before any work
    if args.threads:
        torch.set_num_threads(args.threads)
    classifier = load_classifier(_model_dir(args, args.classifier))
    oracle = load_classifier(_model_dir(args, args.oracle, "oracle"))
    judge = load_classifier(_model_dir(args, args.judge, "judge"))
    strong = Path(args.strong_judge) if args.strong_judge else strong_judge_dir()
    strong_judge = load_classifier(strong) if strong.is_dir() else None  # not trained yet: left out, and said
    from recourse.models import training_unfinished

    unfinished = training_unfinished(strong) if strong_judge is not None else None
    if unfinished and not args.strong_judge:  # an early epoch's checkpoint is not the judge fixed in advance
        strong_judge = None
    elif unfinished:  # named by the user: used, and said
        print(f"warning: the stronger judge at {shown(strong)} is {unfinished}")
    if strong_judge is None:
        print(f"no finished stronger judge at {shown(strong)}{f' ({unfinished})' if unfinished else ''}: "
              "its FR is left out")
    generator = load_generator(args.generator)
    images = load_images(args, args.split, classifier.config.resolution)
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


def _calibrated_judges(args: argparse.Namespace):
    """The calibrated judges an evaluation reports (none with --no-independent-judges)."""
    from recourse.instruments.readings import CALIBRATIONS, calibrations

    if args.no_independent_judges:
        return ()
    path = Path(args.judges_file) if args.judges_file else assets_dir() / CALIBRATIONS
    if not path.is_file():
        raise ValueError(f"no calibrated judges at {shown(path)}: run scripts.calibrate_judges, or pass "
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


def _guiding_model(args: argparse.Namespace):
    """The model a counterfactual is made for, as a :class:`recourse.paired.Student`, and its
    input size: a committed variant (``--variant``), a variant folder or a classifier folder
    (``--checkpoint``). A variant's twin guides and its decider stops, as in an audit; a
    classifier does both."""
    from recourse.checkpoints import read_config
    from recourse.compression import load_variant
    from recourse.paired import Student

    if args.variant is not None:
        from recourse import models

        student = models.load_student(args.variant)
        return student, int(read_config(variants_dir() / args.variant)["classifier"]["resolution"])
    directory = _model_dir(args, args.checkpoint)
    record = read_config(directory)
    if "method" in record:  # a compressed variant's folder
        return Student.from_variant(directory.name, load_variant(directory)), int(record["classifier"]["resolution"])
    model = load_classifier(directory)
    return Student(shown(directory), model, model), model.config.resolution


def command_counterfactual(args: argparse.Namespace) -> int:
    from recourse.data import attribute_index, resize_square, to_float_images
    from recourse.faces import align_face, load_photo
    from recourse.generation import load_generator
    from recourse.paired import flip_targets, own_recourse
    from recourse.render.pictures import side_by_side

    attribute_index(args.attribute)  # an unknown attribute is refused before any photo is read
    if args.variant is not None and args.checkpoint is not None:
        raise ValueError("give --variant or --checkpoint, not both")
    import torch

    from recourse.generation import CounterfactualConfig
    from recourse.paired import stop_on_paths
    from recourse.stops import stops_for

    stops = stops_for(args.margin)
    config = replace(_counterfactual_config(args, CounterfactualConfig()), margin=stops.edit)
    student, resolution = _guiding_model(args)
    if args.no_align:
        image = resize_square(load_photo(args.image), resolution)
    else:
        aligned = align_face(args.image, resolution)
        print(aligned.message)
        image = aligned.image
    x = to_float_images(image[None])
    target = args.target if args.target is not None else int(flip_targets(student.decider, x, args.attribute)[0])
    result = own_recourse(x, args.attribute, target, student, config, load_generator(args.generator))
    # the picture: the first point of the whole edit where the deciding model is past the stop
    picture = stop_on_paths(x, result.edits, student.decider, args.attribute, torch.tensor([target]), stops.visible)
    side_by_side(result.originals[0], picture[0]).save(args.out)
    with torch.no_grad():
        after = float(torch.sigmoid(student.decider(picture)[0, attribute_index(args.attribute)]))
    guided = ("its fake-quantized twin guided, its integer model decided" if student.kind == "integer"
              else "it guided and decided")
    print(f"{student.name} ({guided}), shown at margin {stops.visible:g} ({stops.visible_source}) of an edit aimed "
          f"past {stops.edit:g}: {args.attribute} p = {result.probability_before.item():.3f} → {after:.3f} "
          f"(decides {int(after >= 0.5)}; target {target}, {'valid' if (after >= 0.5) == bool(target) else 'NOT valid'}), "
          f"cost {float((picture - x).abs().mean()):.4f}, {result.seconds:.2f} s; wrote {args.out}")
    return 0


def command_quantize(args: argparse.Namespace) -> int:
    import torch

    from recourse.progress import stage_bars
    from recourse.compression import config_classes, make_config, quantize, save_variant
    from recourse.compression.recourse_points import teacher_recourse_points

    checkpoint = _model_dir(args, args.checkpoint)
    model = load_classifier(checkpoint)
    options = {"sparsity": args.sparsity, "steps": args.fine_tuning_steps, "budget": args.budget,
               "seed": args.fine_tuning_seed, "recourse_objective": args.recourse_objective,
               "recourse_weight": args.recourse_weight, "bits": args.bits, "ends_bits": args.ends_bits,
               "bit_choices": tuple(args.bit_choices) if args.bit_choices is not None else None}
    for option, flag in (("sparsity", "--sparsity"), ("steps", "--fine-tuning-steps"), ("budget", "--budget"),
                         ("seed", "--fine-tuning-seed"), ("recourse_objective", "--recourse-objective"),
                         ("recourse_weight", "--recourse-weight"), ("bits", "--bits"), ("ends_bits", "--ends-bits"),
                         ("bit_choices", "--bit-choices")):
        if options[option] is not None and option not in config_classes()[args.method].__dataclass_fields__:
            raise ValueError(f"{flag} does not apply to --method {args.method}")
    config = make_config(args.method, calibration_images=args.calibration_images, **options)
    train = load_images(args, "train", model.config.resolution)
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


def command_audit(args: argparse.Namespace) -> int:
    from recourse.audit import audit_image
    from recourse.render.audit_html import audit_record
    from recourse.render.text import audit_line

    settings = _single_face_settings(args)
    name, teacher, student, black_box = _audited_pair(args)  # committed, or an auditor's own by their cards
    result = audit_image(Path(args.image), name, args.attribute, args.target, settings, teacher=teacher,
                         student=student)
    if black_box is not None:
        print(f"{name} is a black box: {black_box.forward_passes} forward passes "
              f"({black_box.estimates} zeroth-order gradients)")
    _write_json(args.json, {"command": _command_line(args), "image": str(args.image), **audit_record(result)})
    print(audit_line(result))
    print(result.verdict)
    if args.json:
        print(f"wrote {args.json}")
    return 0


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


def command_scan(args: argparse.Namespace) -> int:
    from recourse.audit import model_resolution
    from recourse.progress import stage_bars
    from recourse.scan import read_folder, scan_images

    settings = _single_face_settings(args)
    name, teacher, student, black_box = _audited_pair(args)
    if teacher is None:
        from recourse import models

        teacher = models.load_teacher()
    names, images = read_folder(args.folder, args.split, args.count, model_resolution(teacher))
    bars = stage_bars("face")
    cases = []
    for done, total, cases in scan_images(names, images, name, args.attribute, settings, teacher=teacher,
                                          student=student):
        bars("scan", done, total)
    lines = [f"{'rank':>4}  {'file':<16} {'target':>6}  {'divergence':<20} V_f(x'_f) V_g(x'_f) V_g(x'_g)  CRG_i  DirSim_i"]
    for rank, case in enumerate(cases, 1):
        r = case.recourse
        crg = f"{r.crg:.3f}" if r.crg is not None and case.compared else "-"
        dirsim = f"{r.dirsim:.1f}" if r.dirsim is not None and case.compared else "-"
        lines.append(f"{rank:>4}  {case.filename:<16} {case.target:>6}  {str(case.score_label):<20} "
                     f"{r.teacher_valid!s:<9} {r.student_accepts_teacher!s:<9} {r.student_valid!s:<9}  {crg:>5}  {dirsim:>8}")
    print(f"{len(cases)} faces of {args.folder} ({args.split}) ranked for {name}, {args.attribute}, margin "
          f"{settings.counterfactual.margin:g}, worst first:")
    print("\n".join(lines))
    if black_box is not None:
        print(f"{name} is a black box: {black_box.forward_passes} forward passes "
              f"({black_box.estimates} zeroth-order gradients)")
    _write_json(args.json, {
        "command": _command_line(args), "variant": name, "attribute": args.attribute, "split": args.split,
        "settings": settings.to_dict(),
        "black_box_forward_passes": None if black_box is None else black_box.forward_passes,
        "cases": [{"rank": rank, "file": c.filename, "target": c.target, "divergence": c.divergence,
                   "score": c.score_label, "face_logit": c.face_logit, **c.recourse.to_dict(),
                   "judge": None if c.judge is None else {"on_face": c.judge.on_face,
                                                          "on_teacher_counterfactual": c.judge.on_teacher_counterfactual,
                                                          "on_student_counterfactual": c.judge.on_student_counterfactual}}
                  for rank, c in enumerate(cases, 1)]})
    if args.json:
        print(f"wrote {args.json}")
    return 0


def _benchmark_settings(args: argparse.Namespace):
    """The BenchmarkSettings of a parsed ``benchmark`` command."""
    from recourse.benchmark import BenchmarkSettings

    return BenchmarkSettings(n=args.n, first_task=args.first_task, attributes=tuple(args.attributes),
                             chunk_size=args.chunk_size,
                             counterfactual=_counterfactual_config(args),
                             seen_attributes=tuple(a for a in DEFAULT_ATTRIBUTES if a in args.attributes),
                             margins=tuple(args.margins),
                             noise_control=None if args.noise_control == "none" else args.noise_control,
                             student_stop=args.student_stop, noise_draws=args.noise_draws,
                             noise_match_split=None if args.noise_match_split == "tasks" else args.noise_match_split,
                             seed_level=args.seed_level, task_weights=args.task_weights)


def command_benchmark(args: argparse.Namespace) -> int:
    from recourse.benchmark import BenchmarkConfig, run_benchmark
    from recourse.progress import stage_bars
    from recourse.render.benchmark import markdown_table, write_markdown

    settings = _benchmark_settings(args)
    config = BenchmarkConfig(
        data=Path(args.data), out=Path(args.out), split=args.split, settings=settings, variants=tuple(args.variants),
        checkpoint=_model_dir(args, args.checkpoint), variants_dir=Path(args.variants_dir or variants_dir()),
        generator=args.generator, image_cache=_cache(args), command=_command_line(args),
        reference_models=tuple(Path(folder) for folder in args.reference_models),
        models=tuple(Path(card) for card in args.models))
    result = run_benchmark(config, stage_bars("task"))
    if result is not None:
        write_markdown(result, config.out)
        print(markdown_table(list(result.rows)))
        print(f"wrote {config.out / 'benchmark.json'} and {config.out / 'benchmark.md'} in {result.seconds:.0f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="recourse", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True)

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
        sub.add_argument("--sigma", type=finite_float,
                         help=f"denoised: noise level of the smoothing, [-1, 1] units (default {DENOISED_SIGMA:g})")
        sub.add_argument("--edit-steps", type=int,
                         help=f"denoised: optimiser steps on the edit (default {DENOISED_EDIT_STEPS})")
        sub.add_argument("--region-mask", type=on_off, metavar="on|off",
                         help="denoised: confine each model's edit to its attribute's face region, from the "
                              "face's landmarks (default off)")
        sub.add_argument("--adaptive-share", type=finite_float,
                         help="denoised: cut the edited region to this share of it where the model's own "
                              "gradient is largest, 0-1 (MaskDiME's adaptive mask; default 1: no cut)")

    def add_generation_options(sub: argparse.ArgumentParser, margin: float | None = DATASET_MARGIN) -> None:
        sub.add_argument("--generator", default=str(generator_dir()),
                         help="generator folder, or a diffusers pipeline folder or hub id")
        sub.add_argument("--counterfactual-method", choices=COUNTERFACTUAL_METHODS, help=METHOD_HELP)
        add_denoised_options(sub)
        sub.add_argument("--steps", type=int, help="walks: DDIM steps over the whole schedule (DDIM stage)")
        sub.add_argument("--noise-level", type=finite_float,
                         help="walks: fraction of the schedule to noise to, 0-1 (default 0: no DDIM stage)")
        sub.add_argument("--guidance-scale", type=finite_float, help="walks: DDIM stage")
        sub.add_argument("--margin", type=finite_float,
                         help=PICTURE_MARGIN_HELP if margin is None else
                         f"edit until the target logit is this far past the decision boundary (default "
                         f"{margin:g}{MARGIN_NOTES[margin]})")
        sub.add_argument("--cone-degrees", type=finite_float,
                         help="pca-walk-cone: largest angle between an edit step and the robust guide's gradient "
                              "(default 15)")
        sub.add_argument("--finish-steps", type=int, help="walks: most editing steps (default 120)")
        sub.add_argument("--finish-learning-rate", type=finite_float,
                         help="walks: L2 length of one editing step in [0, 1] pixel units (default 0.3)")
        sub.add_argument("--stop-search", choices=STOP_SEARCHES,
                         help="walks: how the margin crossing between the last two steps is found (default "
                              "interpolate; denoised bisects)")
        sub.add_argument("--seed", type=int)

    train = commands.add_parser("train-classifier", help="train the classifier, the oracle, the robust judge or the robust guide")
    add_data_options(train)
    train.add_argument("--preset", choices=sorted(MODEL_DIRS), default="classifier")
    train.add_argument("--out", help="checkpoint folder (default checkpoints/<preset>)")
    train.add_argument("--epochs", type=int)
    train.add_argument("--seed", type=int)
    train.add_argument("--adversarial-radius", type=finite_float,
                       help="L2 radius of the adversarial training in [0, 1] pixel units (default: the preset's)")
    train.add_argument("--state", help="resumable training state file (default .cache/train-<preset>.pt)")
    train.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    train.set_defaults(run=command_train_classifier)

    evaluate = commands.add_parser("evaluate", help="per-attribute accuracy of a classifier")
    add_data_options(evaluate)
    evaluate.add_argument("--split", choices=SPLITS, default="test")
    evaluate.add_argument("--model", choices=sorted(MODEL_DIRS), default="classifier")
    evaluate.add_argument("--checkpoint", help="checkpoint folder (default checkpoints/<model>)")
    evaluate.add_argument("--json", help="write the report here")
    evaluate.set_defaults(run=command_evaluate)

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
    quantize.set_defaults(run=command_quantize)

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
    bench.add_argument("--noise-match-split", choices=("val", "train", "test", "tasks"), default="val",
                       help="faces the noise control's sigma is matched on (default val; 'tasks': the run's own "
                            "images, as the committed runs did)")
    bench.add_argument("--seed-level", choices=("parametric", "resample"), default="parametric",
                       help="the intervals' seed level: s/sqrt(k)·t(k-1) (default) or the seeds resampled")
    bench.add_argument("--task-weights", choices=("multinomial", "dirichlet"), default="multinomial",
                       help="the intervals' task level: the ordinary bootstrap (default) or the Bayesian one")
    bench.add_argument("--reference-models", nargs="*", default=[],
                       help="other full-precision classifier folders, each a reference row fp32-ref-<folder>")
    bench.add_argument("--models", nargs="*", default=[],
                       help="model cards (files or folders) of your own models, each a row against the classifier; "
                            "a quantized one is also timed against the float model of the same runtime given here "
                            "(docs/foreign-models.md)")
    bench.set_defaults(run=command_benchmark)

    train_generator = commands.add_parser("train-generator", help="train the latent diffusion face generator")
    add_data_options(train_generator)
    train_generator.add_argument("--out", default=str(generator_dir()))
    train_generator.add_argument("--steps", type=int, help="denoiser training steps")
    train_generator.add_argument("--seed", type=int)
    train_generator.add_argument("--resolution", type=int, default=64)
    train_generator.add_argument("--state-dir", default=str(DEFAULT_CACHE / "generator-state"))
    train_generator.set_defaults(run=command_train_generator)

    denoiser = commands.add_parser("train-denoiser", help="train the face denoiser D(x, sigma), resumable")
    add_data_options(denoiser)
    denoiser.add_argument("--state-dir", default=str(DEFAULT_CACHE / "denoiser-state"),
                          help="resumable state, learning curve and the latest EMA weights")
    denoiser.add_argument("--init-from", help="start from these saved weights when the state folder is empty")
    denoiser.add_argument("--steps", type=int, help="total optimiser steps (default 200000)")
    denoiser.add_argument("--batch-size", type=int)
    denoiser.add_argument("--seed", type=int)
    denoiser.add_argument("--fold", type=int, help="pixel-unshuffle factor before the UNet (default 4; 2 draws at "
                                                   "twice the resolution, at about twice the cost)")
    denoiser.add_argument("--channels", type=int, nargs="+", help="the UNet's channels per level (default 128 192 256)")
    denoiser.add_argument("--attention", type=int, nargs="+", choices=(0, 1),
                          help="1 where a level has attention, one per level (default 0 1 0)")
    denoiser.add_argument("--sigma-max", type=finite_float, help="the largest training noise level (default 1.0)")
    denoiser.add_argument("--max-minutes", type=finite_float, help="stop (saving) once this much training is done in all")
    denoiser.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    denoiser.set_defaults(run=command_train_denoiser)

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
                         "instruments trained later: scripts.rescore_judge")
    quality.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    quality.add_argument("--resume-dir", help="keep each batch made here; a rerun with the same folder and settings "
                         "makes only the missing ones")
    quality.add_argument("--json", help="write the report here")
    quality.set_defaults(run=command_evaluate_counterfactuals)

    single = commands.add_parser("counterfactual", help="write original | counterfactual | difference for one photo")
    single.add_argument("image")
    single.add_argument("--attribute", required=True)
    single.add_argument("--target", type=int, choices=(0, 1), help="default: flip the classifier's decision")
    single.add_argument("--out", required=True, help="PNG to write")
    single.add_argument("--variant",
                        help="a committed compressed variant (any folder of checkpoints/variants, e.g. ptq-int8 or "
                             "gptq-int2): its fake-quantized twin guides the edit and its integer model decides where "
                             "it stops, as in audit")
    single.add_argument("--checkpoint", help="a classifier folder or a compressed variant's folder "
                                             "(default checkpoints/classifier, the full-precision model)")
    single.add_argument("--no-align", action="store_true", help="the photo is already a CelebA-HQ-framed face")
    add_generation_options(single, SINGLE_FACE_MARGIN)
    single.set_defaults(run=command_counterfactual)

    audit = commands.add_parser("audit", help="per-image recourse audit of a compressed variant against the classifier")
    audit.add_argument("image", help="a photo (aligned automatically)")
    add_pair_options(audit)
    audit.add_argument("--target", type=int, choices=(0, 1), help="default: flip the classifier's decision")
    audit.add_argument("--counterfactual-method", choices=COUNTERFACTUAL_METHODS, help=METHOD_HELP)
    add_denoised_options(audit)
    audit.add_argument("--steps", type=int, help="walks: DDIM steps over the whole schedule")
    audit.add_argument("--guidance-scale", type=finite_float, help="walks: DDIM stage")
    audit.add_argument("--margin", type=finite_float, help=PICTURE_MARGIN_HELP)
    audit.add_argument("--numbers-at", choices=("benchmark", "boundary"), default="benchmark", help=NUMBERS_AT_HELP)
    audit.add_argument("--seed", type=int)
    audit.add_argument("--json", help="write the whole audit here")
    audit.set_defaults(run=command_audit)

    scan = commands.add_parser("scan", help="rank a folder's faces by how far a variant's recourse departs from "
                                            "the classifier's (the failure finder)")
    scan.add_argument("folder", help="a CelebA-HQ or original CelebA folder")
    add_pair_options(scan)
    scan.add_argument("--split", choices=SPLITS, default="test")
    scan.add_argument("--count", type=int, default=16, help="faces to rank (the first usable ones of the split)")
    scan.add_argument("--counterfactual-method", choices=COUNTERFACTUAL_METHODS, help=METHOD_HELP)
    add_denoised_options(scan)
    scan.add_argument("--finish-steps", type=int, help="walks: most editing steps (default 120)")
    scan.add_argument("--margin", type=finite_float, help=PICTURE_MARGIN_HELP)
    scan.add_argument("--numbers-at", choices=("benchmark", "boundary"), default="benchmark", help=NUMBERS_AT_HELP)
    scan.add_argument("--seed", type=int)
    scan.add_argument("--json", help="write the ranking here")
    scan.set_defaults(run=command_scan)
    return parser


def _is_card(value: str | None) -> bool:
    """Whether --variant names a model card rather than a committed variant id (light: --help
    and the id path import nothing of recourse.foreign)."""
    if value is None or not ("/" in value or value.endswith((".json", ".toml"))):
        return False
    from recourse.foreign.pairs import is_card

    return is_card(value)


def _uses_committed_models(args: argparse.Namespace) -> bool:
    """Whether the command reads ``checkpoints/`` whatever its options: then a missing folder
    is said in one line naming RECOURSE_HOME before anything else is loaded."""
    if args.command in ("audit", "scan"):
        return True
    if args.command == "counterfactual":
        return args.variant is not None or args.checkpoint is None or args.generator == str(generator_dir())
    return False


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        check_outputs(args)
        if _uses_committed_models(args):
            require_checkpoints()
        return args.run(args)
    except Exception as error:  # noqa: BLE001  the expected kinds are told apart below
        from recourse.checkpoints import CheckpointError
        from recourse.data import DatasetError
        from recourse.faces import FaceDetectorError

        if not isinstance(error, (DatasetError, CheckpointError, FaceDetectorError, ValueError)):
            raise
        if isinstance(error, CheckpointError) and not checkpoints_dir().is_dir():
            error = home_message()  # a default model path, read where there are no checkpoints
        print(f"error: {error}", file=sys.stderr)
        return 2
