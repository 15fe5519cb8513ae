"""Build the compressed variants the app and the benchmark use, one after another, resumably.

A variant whose folder already holds a ``config.json`` is kept (``--force`` remakes it). Each
variant records its own command and wall-clock in its ``config.json``.

The plan: one variant per method under the method's id (the app's variants), and for the
benchmark: every fine-tuned method at three fine-tuning seeds (``-s1``, ``-s2``), cfq-qat's
no-recourse twin (``-norecourse``) and the first version's objective (``-target``), fair
post-training baselines (8-bit first and last layers, GPTQ) and budgets of 3 and 2 mean
bits per weight (``-b3``, ``-b2``).

The counterfactual-aware methods (cf-ptq, cfq-qat) make the teacher's recourse points with
the generator; the committed variants' points were made with the cone walk at margin 6 (the
dataset commands' default then: ``recourse.cli.EARLIER_GENERATION``), so the plan passes
``--counterfactual-method pca-walk-cone --margin 6`` to them and a rebuilt variant is the
committed one, whatever today's default method.

    python -m scripts.chores.make_variants --data ../shared/data/celeba-hq-64 [--only ID ...] [--force]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from recourse.locations import variants_dir

SEEDS = (0, 1, 2)


def _seeded(variant: str, method: str, options: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {(variant if seed == 0 else f"{variant}-s{seed}"): ("--method", method, *options, "--fine-tuning-seed", str(seed))
            for seed in SEEDS}


def plan() -> dict[str, tuple[str, ...]]:
    """Variant id → ``recourse quantize`` options, in the order they are built."""
    low_bits = ("--bit-choices", "2", "3", "4", "5", "6", "8")
    steps: dict[str, tuple[str, ...]] = {
        "ptq-int8": ("--method", "ptq-int8"),
        "ptq-int4": ("--method", "ptq-int4"),
        "ptq-int4-ends8": ("--method", "ptq-int4", "--ends-bits", "8"),
        "gptq": ("--method", "gptq", "--bits", "4"),
        "cf-ptq": ("--method", "cf-ptq"),
        "prune-quant": ("--method", "prune-quant"),
    }
    for seed in SEEDS:  # seed by seed, so that a partial build has every method once first
        for variant, method, options in (
                ("mixedprec-qat", "mixedprec-qat", ()), ("cfq-qat", "cfq-qat", ()),
                ("cfq-qat-norecourse", "cfq-qat", ("--recourse-weight", "0")), ("kd-quant", "kd-quant", ())):
            name = variant if seed == 0 else f"{variant}-s{seed}"
            steps[name] = _seeded(variant, method, options)[name]
    for seed in SEEDS:
        name = "cfq-qat-target" if seed == 0 else f"cfq-qat-target-s{seed}"
        steps[name] = _seeded("cfq-qat-target", "cfq-qat", ("--recourse-objective", "target"))[name]
    steps["gptq-int3"] = ("--method", "gptq", "--bits", "3")
    steps["gptq-int2"] = ("--method", "gptq", "--bits", "2")
    for budget, extra in (("3", ()), ("2", low_bits)):
        for seed in SEEDS:
            for variant, method in (("mixedprec-qat", "mixedprec-qat"), ("cfq-qat", "cfq-qat")):
                base = f"{variant}-b{budget}"
                name = base if seed == 0 else f"{base}-s{seed}"
                steps[name] = _seeded(base, method, ("--budget", budget, *extra))[name]
    return {name: (*options, *committed_generation(options[1])) for name, options in steps.items()}


def committed_generation(method: str) -> tuple[str, ...]:
    """The generation options of a committed ``method`` variant's recourse points (none for a
    method without them): the committed variants recorded no generation settings, so theirs
    are the earlier defaults (``recourse.cli.reproduction``)."""
    from recourse.cli import _uses_recourse_points, generation_arguments
    from recourse.generation import CounterfactualConfig

    return tuple(generation_arguments(None, CounterfactualConfig())) if _uses_recourse_points(method) else ()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a CelebA-HQ or original CelebA folder")
    parser.add_argument("--out", default=str(variants_dir()), help="folder of variant folders")
    parser.add_argument("--only", nargs="+", help="variant ids to build (default: the whole plan)")
    parser.add_argument("--force", action="store_true", help="remake variants that exist")
    args = parser.parse_args(argv)
    steps = plan()
    unknown = sorted(set(args.only or ()) - set(steps))
    if unknown:
        parser.error(f"unknown variant ids: {', '.join(unknown)}; the plan has {', '.join(steps)}")
    for variant, options in steps.items():
        if args.only and variant not in args.only:
            continue
        out = Path(args.out) / variant
        if (out / "config.json").is_file() and not args.force:
            print(f"{variant}: exists, kept", flush=True)
            continue
        started = time.perf_counter()
        command = [sys.executable, "-m", "recourse", "quantize", *options, "--data", args.data, "--out", str(out)]
        print(f"{variant}: {' '.join(command[1:])}", flush=True)
        subprocess.run(command, check=True)
        print(f"{variant}: done in {time.perf_counter() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
