"""Command line: ``python -m recourse <command> ...``."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch
from tqdm import tqdm

from recourse import __version__
from recourse.checkpoints import CheckpointError, load_classifier, read_config, update_config
from recourse.classifier import ClassifierConfig
from recourse.data import SPLITS, DatasetError, detect_layout, load_split
from recourse.quantization import CONFIGS as QUANTIZATION_CONFIGS
from recourse.training import TrainConfig

DEFAULT_CACHE = Path(".cache")
CHECKPOINT_DIRS = {"classifier": Path("checkpoints/classifier"), "oracle": Path("checkpoints/oracle")}
GENERATOR_DIR = Path("checkpoints/generator")
VARIANTS_DIR = Path("checkpoints/variants")

# The oracle differs from the audited classifier in width, activation, seed and augmentation,
# so that a counterfactual tuned against one is not automatically accepted by the other.
PRESETS: dict[str, tuple[ClassifierConfig, TrainConfig]] = {
    "classifier": (ClassifierConfig(), TrainConfig()),
    "oracle": (
        ClassifierConfig(widths=(32, 64, 128, 256), activation="silu", dropout=0.2),
        TrainConfig(epochs=16, seed=1, augmentation="flip-shift-color", max_shift=3),
    ),
}


def _progress_bar(description: str, unit: str = "img"):
    """A ``progress(done, total)`` callback whose bar appears only once work starts."""
    bars: list[tqdm] = []

    def update(done: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(desc=description, total=total, unit=unit, mininterval=2))
        bars[0].update(done - bars[0].n)
        if done == total:
            bars[0].close()

    return update


def _stage_progress(unit: str = "it"):
    """A ``progress(stage, done, total)`` callback: one bar per stage."""
    bars: dict[str, object] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in bars:
            bars[stage] = _progress_bar(stage, unit)
        bars[stage](done, total)

    return update


def _command_line(args: argparse.Namespace) -> str:
    return "python -m recourse " + " ".join(shlex.quote(a) for a in args.argv)


def _cache(args: argparse.Namespace) -> Path | None:
    return None if args.no_cache else Path(args.cache_dir)


def _write_json(path: str | None, report: dict) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(report, indent=2) + "\n")


def load_images(data: Path, split: str, resolution: int, cache_dir: Path | None):
    """Load a split; original-CelebA photos are aligned to the CelebA-HQ framing first."""
    if detect_layout(data) != "celeba":
        return load_split(data, split, resolution, cache_dir, None, _progress_bar(f"loading {split}"))
    from recourse.faces import CelebAFramer

    framer = CelebAFramer()
    images = load_split(data, split, resolution, cache_dir, framer, _progress_bar(f"aligning {split}"))
    if framer.detected or framer.fallbacks:
        print(f"aligned {framer.detected} photos by face detection; {framer.fallbacks} without a detected face "
              f"took the Align&Cropped layout's fixed crop")
    return images


def command_train_classifier(args: argparse.Namespace) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    model_config, train_config = PRESETS[args.preset]
    overrides = {k: v for k, v in (("epochs", args.epochs), ("seed", args.seed)) if v is not None}
    train_config = replace(train_config, **overrides)
    out = Path(args.out or CHECKPOINT_DIRS[args.preset])
    state = Path(args.state or DEFAULT_CACHE / f"train-{args.preset}.pt")
    train = load_images(Path(args.data), "train", model_config.resolution, _cache(args))
    val = load_images(Path(args.data), "val", model_config.resolution, _cache(args))
    from recourse.training import train_classifier

    command = _command_line(args)
    result = train_classifier(train, val, out, model_config, train_config, state, metadata={
        "role": args.preset, "training_command": command, "recourse_version": __version__,
        "data_split": {"train": "CelebA-HQ ids 0-23999", "val": "24000-26999", "test": "27000-29999"},
        "threads": torch.get_num_threads(),
    })
    test = load_images(Path(args.data), "test", model_config.resolution, _cache(args))
    from recourse.evaluation import evaluate_accuracy

    test_result = evaluate_accuracy(load_classifier(out), test.images, test.labels)
    update_config(out, training_seconds=round(result.seconds, 1), history=result.history,
                  test_accuracy=test_result.mean, test_accuracy_per_attribute=test_result.per_attribute)
    print(f"best epoch {result.best_epoch}: val {result.best_val_accuracy:.2f}%, "
          f"test {test_result.mean:.2f}% (majority {test_result.baseline_mean:.2f}%), "
          f"{result.seconds / 60:.1f} min of training; saved to {out}")
    return 0


def command_evaluate(args: argparse.Namespace) -> int:
    checkpoint = Path(args.checkpoint or CHECKPOINT_DIRS[args.model])
    model = load_classifier(checkpoint)
    data = Path(args.data)
    images = load_images(data, args.split, model.config.resolution, _cache(args))
    from recourse.evaluation import evaluate_accuracy

    started = time.time()
    result = evaluate_accuracy(model, images.images, images.labels)
    report = {
        "model": args.model, "checkpoint": str(checkpoint), "data": str(data), "layout": detect_layout(data),
        "split": args.split, **result.to_dict(), "seconds": round(time.time() - started, 1),
        "recorded_test_accuracy": read_config(checkpoint).get("test_accuracy"),
    }
    _write_json(args.json, report)
    width = max(len(a) for a in result.per_attribute)
    print(f"{'attribute':{width}s}  accuracy  majority")
    for name, value in result.per_attribute.items():
        print(f"{name:{width}s}  {value:8.2f}  {result.baseline_per_attribute[name]:8.2f}")
    print(f"{'MEAN':{width}s}  {result.mean:8.2f}  {result.baseline_mean:8.2f}   ({result.n_images} images, "
          f"{args.model}, split {args.split})")
    return 0


def command_train_generator(args: argparse.Namespace) -> int:
    from recourse.generator_training import GeneratorTrainConfig, train_generator

    config = GeneratorTrainConfig(**{k: v for k, v in (("steps", args.steps), ("seed", args.seed)) if v is not None})
    train = load_images(Path(args.data), "train", args.resolution, _cache(args))
    val = load_images(Path(args.data), "val", args.resolution, _cache(args))
    command = _command_line(args)
    result = train_generator(train.images, val.images, args.out, config, Path(args.state_dir), metadata={
        "training_command": command, "recourse_version": __version__, "data_split": "CelebA-HQ train ids 0-23999"})
    print(f"denoiser loss {result.final_loss:.4f}; basis reconstruction error on val {result.reconstruction_error:.4f}; "
          f"{result.seconds / 60:.1f} min of denoiser training; saved to {args.out}")
    return 0


def _counterfactual_config(args: argparse.Namespace):
    from recourse.counterfactual import CounterfactualConfig

    values = {k: getattr(args, k) for k in ("steps", "noise_level", "guidance_scale", "seed", "margin")
              if getattr(args, k, None) is not None}
    return CounterfactualConfig(**values)


def command_evaluate_counterfactuals(args: argparse.Namespace) -> int:
    from recourse.counterfactual import load_generator
    from recourse.counterfactual_quality import evaluate_counterfactual_quality

    classifier = load_classifier(args.classifier)
    oracle = load_classifier(args.oracle)
    generator = load_generator(args.generator)
    images = load_images(Path(args.data), args.split, classifier.config.resolution, _cache(args))
    subset = images.images[: args.n]
    stages = _stage_progress("img")

    def progress(attribute: str, done: int, total: int) -> None:
        stages(f"counterfactuals {attribute}", done, total)

    started = time.time()
    report = evaluate_counterfactual_quality(subset, images.images, classifier, oracle, generator,
                                             tuple(args.attributes), _counterfactual_config(args), progress=progress)
    output = {"command": _command_line(args),
              "data": str(args.data), "split": args.split, "n": len(subset), "generator": str(args.generator),
              "seconds": round(time.time() - started, 1), "threads": torch.get_num_threads(), **report.to_dict()}
    _write_json(args.json, output)
    print(f"{'attribute':12s} {'FR %':>6s} {'oracle FR %':>11s} {'(to 1 / to 0)':>15s} {'MNAC':>6s} {'proximity':>9s} "
          f"{'oracle FD':>9s} {'s/CF':>6s}")
    for r in report.results:
        print(f"{r.attribute:12s} {r.flip_rate:6.1f} {r.oracle_flip_rate:11.1f} {r.oracle_flip_rate_to_1:7.1f} / "
              f"{r.oracle_flip_rate_to_0:5.1f} {r.mnac:6.2f} {r.proximity:9.4f} {r.oracle_fd:9.2f} {r.median_seconds:6.3f}")
    print(f"({len(subset)} images of split {args.split}; {time.time() - started:.0f} s)")
    return 0


def command_counterfactual(args: argparse.Namespace) -> int:
    from recourse.counterfactual import attribute_index, generate, load_generator
    from recourse.data import resize_square
    from recourse.evaluation import to_float_images
    from recourse.faces import align_face, load_photo
    from recourse.visualise import side_by_side

    index = attribute_index(args.attribute)
    model = load_classifier(args.checkpoint or CHECKPOINT_DIRS["classifier"])
    resolution = model.config.resolution
    if args.no_align:
        image = resize_square(load_photo(args.image), resolution)
    else:
        aligned = align_face(args.image, resolution)
        print(aligned.message)
        image = aligned.image
    x = to_float_images(image[None])
    generator = load_generator(args.generator)
    with torch.no_grad():
        before = torch.sigmoid(model(x))[0, index].item()
    target = args.target if args.target is not None else int(before < 0.5)
    result = generate(x, model, args.attribute, target, _counterfactual_config(args), generator)
    side_by_side(result.originals[0], result.images[0]).save(args.out)
    print(f"{args.attribute}: p = {before:.3f} → {result.probability_after.item():.3f} (target {target}, "
          f"{'valid' if result.valid.item() else 'NOT valid'}), cost {result.cost.item():.4f}, "
          f"{result.seconds:.2f} s; wrote {args.out}")
    return 0


def teacher_recourse_points(args: argparse.Namespace, model, train, count: int):
    """The teacher's counterfactuals on the first ``count`` training images, cached by the
    teacher's and the generator's content and the generation settings."""
    import hashlib

    from recourse.counterfactual import load_generator
    from recourse.recourse_points import cached_recourse_points, make_recourse_points

    config = _counterfactual_config(args)
    key = hashlib.sha256(f"{_file_digest(Path(args.checkpoint) / 'model.safetensors')} "
                         f"{_file_digest(Path(args.generator))} {config}".encode()).hexdigest()[:16]
    path = Path(args.cache_dir) / f"recourse-points-{key}-{count}.safetensors"
    images = train.images[:count]
    return cached_recourse_points(path, lambda: make_recourse_points(
        model, torch.as_tensor(images), config=config, generator=load_generator(args.generator),
        progress=_stage_progress()))


def command_quantize(args: argparse.Namespace) -> int:
    from recourse.quantization import quantize, save_variant

    model = load_classifier(args.checkpoint)
    config_class = QUANTIZATION_CONFIGS[args.method]
    options = {"calibration_images": args.calibration_images}
    for flag, option in (("sparsity", "sparsity"), ("fine-tuning-steps", "steps"), ("budget", "budget")):
        value = getattr(args, flag.replace("-", "_"))
        if value is not None:
            if option not in config_class.__dataclass_fields__:
                raise ValueError(f"--{flag} does not apply to --method {args.method}")
            options[option] = value
    config = config_class(**options)
    train = load_images(Path(args.data), "train", model.config.resolution, _cache(args))
    points = teacher_recourse_points(args, model, train, args.recourse_points) if config.needs_recourse_points else None
    variant = quantize(model, config, torch.as_tensor(train.images), torch.as_tensor(train.labels), points,
                       progress=_stage_progress())
    out = Path(args.out or VARIANTS_DIR / args.method)
    save_variant(variant, model, out, {"command": _command_line(args), "base_checkpoint": str(args.checkpoint),
                                       "calibration_split": "train", "recourse_version": __version__})
    print(f"{args.method}: made in {variant.seconds:.1f} s; {variant.bits_per_weight:.3g} bits per weight; "
          f"saved to {out}")
    return 0


def command_audit(args: argparse.Namespace) -> int:
    from recourse.audit import AuditSettings, audit_image

    settings = AuditSettings(counterfactual=_counterfactual_config(args))
    result = audit_image(Path(args.image), args.variant, args.attribute, args.target, settings)
    report = {"command": _command_line(args), "image": str(args.image), **result.to_dict()}
    _write_json(args.json, report)
    r = result.recourse
    print(f"{args.attribute}, target {result.predictions.target}, variant {args.variant}: "
          f"V_f(x'_f)={int(r.teacher_valid)} V_g(x'_f)={int(r.student_accepts_teacher)} V_g(x'_g)={int(r.student_valid)} "
          f"CRG_i={'-' if r.crg is None else f'{r.crg:.3f}'} DirSim_i={'-' if r.dirsim is None else f'{r.dirsim:.1f}'}"
          f"{f' ({r.reason})' if r.reason else ''}")
    print(result.verdict)
    if args.json:
        print(f"wrote {args.json}")
    return 0


def _finite(value):
    """JSON has no NaN: an undefined metric (empty S or B) is written as null."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _folder_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


def command_benchmark(args: argparse.Namespace) -> int:
    import datetime
    from dataclasses import asdict

    from accelerate import PartialState
    from accelerate.utils import gather_object

    from recourse.benchmark import (BenchmarkSettings, Student, benchmark_rows, markdown_report, markdown_table,
                                    task_records)
    from recourse.counterfactual import load_generator
    from recourse.quantization import load_variant

    started = time.perf_counter()
    state = PartialState(cpu=True)
    settings = BenchmarkSettings(n=args.n, attributes=tuple(args.attributes), chunk_size=args.chunk_size,
                                 counterfactual=_counterfactual_config(args))
    teacher = load_classifier(args.checkpoint)
    variants_dir = Path(args.variants_dir)
    students = {}
    for method in args.methods:
        directory = variants_dir / method
        if not (directory / "config.json").is_file():
            raise CheckpointError(f"{directory}: variant not found; make it with "
                                  f"python -m recourse quantize --method {method} --data PATH --out {directory}")
        variant = load_variant(directory)
        details = {k: variant.details[k] for k in ("budget", "sparsity", "layer_bits", "layer_clip", "fine_tuning")
                   if k in variant.details}
        students[method] = Student(method, variant.twin, variant.fastest, variant.integer is not None,
                                   variant.bits_per_weight, variant.seconds, _folder_bytes(directory), details)
    generator = load_generator(args.generator)
    with state.main_process_first():  # one process decodes and caches the images
        split = load_images(Path(args.data), args.split, teacher.config.resolution, _cache(args))
    images, labels = torch.as_tensor(split.images), torch.as_tensor(split.labels)
    teacher_inputs = {"fp32": _file_digest(Path(args.checkpoint) / "model.safetensors"),
                      "generator": _file_digest(Path(args.generator)), "split": args.split,
                      "data": str(Path(args.data).resolve())}
    fingerprints = {"fp32": settings.fingerprint(teacher_inputs)}
    for method in args.methods:
        fingerprints[method] = settings.fingerprint(
            {**teacher_inputs, method: _file_digest(variants_dir / method / "model.safetensors")})
    out = Path(args.out)
    progress = _progress_bar(f"benchmark tasks (process {state.process_index + 1}/{state.num_processes})")
    records = task_records(images, teacher, students, settings, generator, out / "cache", fingerprints,
                           state.process_index, state.num_processes,
                           lambda done, total: progress(done * settings.chunk_size, total * settings.chunk_size))
    records = gather_object(records) if state.num_processes > 1 else records
    if state.is_main_process:
        train_seconds = float(read_config(args.checkpoint).get("training_seconds", 0.0))
        rows = benchmark_rows(records, teacher, students, images, labels, train_seconds,
                              _folder_bytes(Path(args.checkpoint)), settings)
        report = {
            "date": datetime.date.today().isoformat(), "command": _command_line(args),
            "split": args.split, "n": len(records), "attributes": list(settings.attributes),
            "accuracy_images": len(images), "processes": state.num_processes,
            "seconds": round(time.perf_counter() - started, 1), "settings": asdict(settings),
            "definitions": "shared/docs/metrics.md (VD = Validity Drop)",
            "rows": [asdict(row) for row in rows],
        }
        out.mkdir(parents=True, exist_ok=True)
        _write_json(str(out / "benchmark.json"), _finite(report))
        (out / "benchmark.md").write_text(markdown_report(
            rows, f"Benchmark on {args.split} ({report['date']}): `{report['command']}`; N = {len(records)} recourse "
                  f"tasks, attributes {', '.join(settings.attributes)}; accuracy on all {len(images)} images; "
                  f"{state.num_processes} process(es), {report['seconds']:.0f} s."))
        print(markdown_table(rows))
        print(f"wrote {out / 'benchmark.json'} and {out / 'benchmark.md'} in {report['seconds']:.0f} s")
    state.wait_for_everyone()
    return 0


def _file_digest(path: Path) -> str:
    """Content digest of a file, or of every file in a folder (a hub id digests as its name)."""
    import hashlib

    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path] if path.is_file() else []
    for file in files:
        digest.update(file.read_bytes())
    digest.update(str(path).encode() if not files else b"")
    return digest.hexdigest()[:16]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m recourse", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True)

    def add_data_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--data", required=True, help="a CelebA-HQ or original CelebA folder")
        sub.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="where decoded images are cached")
        sub.add_argument("--no-cache", action="store_true", help="decode images without reading or writing a cache")

    train = commands.add_parser("train-classifier", help="train the classifier or the oracle")
    add_data_options(train)
    train.add_argument("--preset", choices=sorted(PRESETS), default="classifier")
    train.add_argument("--out", help="checkpoint folder (default checkpoints/<preset>)")
    train.add_argument("--epochs", type=int)
    train.add_argument("--seed", type=int)
    train.add_argument("--state", help="resumable training state file (default .cache/train-<preset>.pt)")
    train.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    train.set_defaults(run=command_train_classifier)

    evaluate = commands.add_parser("evaluate", help="per-attribute accuracy of a classifier")
    add_data_options(evaluate)
    evaluate.add_argument("--split", choices=SPLITS, default="test")
    evaluate.add_argument("--model", choices=sorted(CHECKPOINT_DIRS), default="classifier")
    evaluate.add_argument("--checkpoint", help="checkpoint folder (default checkpoints/<model>)")
    evaluate.add_argument("--json", help="write the report here")
    evaluate.set_defaults(run=command_evaluate)

    def add_generation_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--generator", default=str(GENERATOR_DIR), help="generator folder, or a diffusers pipeline folder or hub id")
        sub.add_argument("--steps", type=int, help="DDIM steps over the whole schedule")
        sub.add_argument("--noise-level", type=float, help="fraction of the schedule to noise to (0-1]")
        sub.add_argument("--guidance-scale", type=float)
        sub.add_argument("--margin", type=float,
                         help="guide until the target logit is this far past the decision boundary (default 3)")
        sub.add_argument("--seed", type=int)

    quantize = commands.add_parser("quantize", help="make one compressed variant of the classifier")
    add_data_options(quantize)
    quantize.add_argument("--method", required=True, choices=sorted(QUANTIZATION_CONFIGS))
    add_generation_options(quantize)  # for the recourse points of cf-ptq and cfq-qat
    quantize.add_argument("--sparsity", type=float, help="prune-quant: share of weights set to zero (default 0.3)")
    quantize.add_argument("--fine-tuning-steps", type=int, help="QAT methods: fine-tuning steps (default 300)")
    quantize.add_argument("--budget", type=float, help="mixed-precision methods: mean bits per weight (default 4.0)")
    quantize.add_argument("--recourse-points", type=int, default=512,
                          help="cf-ptq, cfq-qat: training images to make the teacher's recourse points from")
    quantize.add_argument("--checkpoint", default=str(CHECKPOINT_DIRS["classifier"]), help="full-precision classifier")
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
    bench.add_argument("--out", required=True, help="folder for benchmark.json, benchmark.md and the resumable cache")
    bench.add_argument("--methods", nargs="+", default=list(QUANTIZATION_CONFIGS), choices=list(QUANTIZATION_CONFIGS))
    bench.add_argument("--attributes", nargs="+", default=["Smiling", "Young", "Male", "Eyeglasses"])
    bench.add_argument("--checkpoint", default=str(CHECKPOINT_DIRS["classifier"]), help="full-precision classifier")
    bench.add_argument("--variants-dir", default=str(VARIANTS_DIR))
    bench.add_argument("--chunk-size", type=int, default=20, help="tasks per cached chunk")
    bench.set_defaults(run=command_benchmark)

    train_generator = commands.add_parser("train-generator", help="train the latent diffusion face generator")
    add_data_options(train_generator)
    train_generator.add_argument("--out", default=str(GENERATOR_DIR))
    train_generator.add_argument("--steps", type=int, help="denoiser training steps")
    train_generator.add_argument("--seed", type=int)
    train_generator.add_argument("--resolution", type=int, default=64)
    train_generator.add_argument("--state-dir", default=str(DEFAULT_CACHE / "generator-state"))
    train_generator.set_defaults(run=command_train_generator)

    quality = commands.add_parser("evaluate-counterfactuals", help="FR, oracle FR, MNAC, proximity, FD, time")
    add_data_options(quality)
    add_generation_options(quality)
    quality.add_argument("--split", choices=SPLITS, default="test")
    quality.add_argument("--n", type=int, default=500)
    quality.add_argument("--attributes", nargs="+", default=["Smiling", "Young", "Male", "Eyeglasses"])
    quality.add_argument("--classifier", default=str(CHECKPOINT_DIRS["classifier"]))
    quality.add_argument("--oracle", default=str(CHECKPOINT_DIRS["oracle"]))
    quality.add_argument("--json", help="write the report here")
    quality.set_defaults(run=command_evaluate_counterfactuals)

    single = commands.add_parser("counterfactual", help="write original | counterfactual | difference for one photo")
    single.add_argument("image")
    single.add_argument("--attribute", required=True)
    single.add_argument("--target", type=int, choices=(0, 1), help="default: flip the classifier's decision")
    single.add_argument("--out", required=True, help="PNG to write")
    single.add_argument("--checkpoint", help="guiding classifier (default checkpoints/classifier)")
    single.add_argument("--no-align", action="store_true", help="the photo is already a CelebA-HQ-framed face")
    add_generation_options(single)
    single.set_defaults(run=command_counterfactual)

    audit = commands.add_parser("audit", help="per-image recourse audit of a compressed variant against the classifier")
    audit.add_argument("image", help="a photo (aligned automatically)")
    audit.add_argument("--variant", required=True, help="compressed variant id, e.g. ptq-int8")
    audit.add_argument("--attribute", required=True, help="one of the 40 CelebA attribute names, e.g. Smiling")
    audit.add_argument("--target", type=int, choices=(0, 1), help="default: flip the classifier's decision")
    audit.add_argument("--steps", type=int, help="DDIM steps over the whole schedule")
    audit.add_argument("--guidance-scale", type=float)
    audit.add_argument("--seed", type=int)
    audit.add_argument("--json", help="write the whole audit here")
    audit.set_defaults(run=command_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return args.run(args)
    except (DatasetError, CheckpointError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
