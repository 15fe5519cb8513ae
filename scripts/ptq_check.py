"""Accuracy, twin/integer agreement and batch-32 latency of the variants built so far.

    python -m scripts.ptq_check --data ../shared/data/celeba-hq-64

A stop-gap until the benchmark command exists: calibrates on the first 512 training
images, evaluates on the whole test split, times batch 32 (median of 15 runs).
"""

import argparse
import statistics
import time

import torch

from recourse.checkpoints import load_classifier
from recourse.data import load_split
from recourse.evaluation import to_float_images
from recourse.metrics import agreement, decisions, mean_accuracy
from recourse.quantization import PruneQuantConfig, PTQInt4Config, PTQInt8Config, quantize


@torch.no_grad()
def all_logits(model: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    return torch.cat([model(images[i:i + 250]) for i in range(0, len(images), 250)])


@torch.no_grad()
def median_seconds(model: torch.nn.Module, batch: torch.Tensor, repeats: int = 15) -> float:
    model(batch)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        model(batch)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--checkpoint", default="checkpoints/classifier")
    args = parser.parse_args()
    model = load_classifier(args.checkpoint)
    calibration = to_float_images(load_split(args.data, "train", 64, ".cache").images[:512])
    test = load_split(args.data, "test", 64, ".cache")
    images, labels = to_float_images(test.images), torch.as_tensor(test.labels).long()
    full = decisions(all_logits(model, images))
    print(f"fp32: test accuracy {mean_accuracy(full, labels):.2f}")
    batch = images[:32].contiguous(memory_format=torch.channels_last)
    for config in (PTQInt8Config(), PTQInt4Config(), PruneQuantConfig()):
        variant = quantize(model, config, calibration)
        twin = decisions(all_logits(variant.twin, images))
        line = (f"{config.method}: made in {variant.seconds:.1f} s; twin accuracy {mean_accuracy(twin, labels):.2f}, "
                f"agreement with fp32 {agreement(full, twin):.2f}")
        if variant.integer is not None:
            integer = decisions(all_logits(variant.integer, images))
            fp_time, int_time = median_seconds(model, batch), median_seconds(variant.integer, batch)
            line += (f"; integer accuracy {mean_accuracy(integer, labels):.2f}, twin/integer agreement "
                     f"{agreement(twin, integer):.2f}; batch 32: fp32 {fp_time * 1000:.1f} ms, int8 "
                     f"{int_time * 1000:.1f} ms ({fp_time / int_time:.2f}x)")
        print(line)


if __name__ == "__main__":
    main()
