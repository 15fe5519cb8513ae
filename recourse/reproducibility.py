"""Do per-image numbers reproduce? A 1/255 change of one pixel, and other memory layouts.

``recourse stability``: for each of ``--n`` test tasks (faces in order, the default attributes
in turn), the per-image CRG and DirSim of a variant against the classifier are computed twice:
on the face, and on the face with one pixel (chosen by a seeded draw) moved by 1/255. The
distribution of |ΔCRG_i| and |ΔDirSim_i| is printed and written as JSON, with the largest pixel
difference between counterfactuals of the same pixels in another memory layout, batch
composition and order.

    recourse stability --data ../shared/data/celeba-hq-64 --variant ptq-int4 --n 200 \\
        --json assets/archive/stability-test.json
"""

from __future__ import annotations

import statistics
import time

import torch

from recourse.audit.paired import flip_targets, paired_recourse
from recourse.data import DEFAULT_ATTRIBUTES
from recourse.generation import generate
from recourse.names import STABILITY_CHECKS as CHECKS


def nudge_one_pixel(images: torch.Tensor, seed: int) -> torch.Tensor:
    """Each image with one pixel of one channel moved by 1/255 (down if it would leave [0, 1])."""
    nudged = images.clone()
    generator = torch.Generator().manual_seed(seed)
    for i in range(len(images)):
        c, y, x = (int(torch.randint(0, size, (1,), generator=generator)) for size in images.shape[1:])
        value = float(nudged[i, c, y, x])
        nudged[i, c, y, x] = value + 1 / 255 if value + 1 / 255 <= 1 else value - 1 / 255
    return nudged


def per_task(images, attribute, teacher, student, config, generator, first):
    targets = flip_targets(teacher, images, attribute)
    seeds = tuple(range(first, first + len(images)))
    paired = paired_recourse(images, attribute, targets, teacher, student, config, generator, seeds)
    return [paired.columns.image(i) for i in range(len(images))], paired


def quantiles(values: list[float]) -> dict:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"median": statistics.median(ordered), "p90": pick(0.9), "max": ordered[-1]}


def layout_difference(images, attribute, teacher, config, generator, first, made=None) -> float:
    """Largest pixel difference between the teacher's counterfactuals of ``images`` (``made``, or
    made here) and those of the same pixels and seeds in channels-last memory, reversed order
    and half the batch. Each image keeps its task's seed: a method that draws noise (the
    denoised one) would otherwise draw other noise."""
    targets, seeds, half = flip_targets(teacher, images, attribute), tuple(range(first, first + len(images))), \
        len(images) // 2 or 1
    if made is None:
        made = generate(images, teacher, attribute, targets, config, generator, seeds=seeds).images
    reordered = generate(images.flip(0).contiguous(memory_format=torch.channels_last), teacher, attribute,
                         targets.flip(0), config, generator, seeds=seeds[::-1]).images.flip(0)
    halved = generate(images[:half], teacher, attribute, targets[:half], config, generator, seeds=seeds[:half]).images
    return max(float((reordered - made).abs().max()), float((halved - made[:half]).abs().max()))


def measure(faces: torch.Tensor, teacher, student, config, generator, checks=CHECKS, n: int | None = None,
            started: float | None = None) -> dict:
    """The checks on the first ``n`` of ``faces`` (all by default), the default attributes in
    turn: the nudge's |ΔCRG_i| and |ΔDirSim_i| quantiles and the layout's largest pixel
    difference, as the report's entries; one progress line per attribute."""
    started = time.time() if started is None else started
    n = len(faces) if n is None else n
    crg, dirsim, undefined = [], [], 0
    per_attribute = -(-n // len(DEFAULT_ATTRIBUTES))
    largest = 0.0
    for k, attribute in enumerate(DEFAULT_ATTRIBUTES):
        first = k * per_attribute
        images = faces[first:first + per_attribute]
        if not len(images):
            continue
        made = None
        if "nudge" in checks:
            before, paired = per_task(images, attribute, teacher, student, config, generator, first)
            after, _ = per_task(nudge_one_pixel(images, seed=k), attribute, teacher, student, config, generator, first)
            made = paired.teacher.images
            for a, b in zip(before, after):
                if None in (a.crg, b.crg, a.dirsim, b.dirsim):
                    undefined += 1
                    continue
                crg.append(abs(a.crg - b.crg))
                dirsim.append(abs(a.dirsim - b.dirsim))
        if "layout" in checks:
            largest = max(largest, layout_difference(images, attribute, teacher, config, generator, first, made))
        print(f"{attribute}: {len(images)} tasks done ({time.time() - started:.0f} s)", flush=True)
    report: dict = {}
    if "nudge" in checks:
        report |= {"defined_both_times": len(crg), "undefined": undefined,
                   "crg_change": quantiles(crg), "dirsim_change": quantiles(dirsim),
                   "share_crg_within_0.05": round(100 * sum(v <= 0.05 for v in crg) / max(1, len(crg)), 1),
                   "share_dirsim_within_5": round(100 * sum(v <= 5 for v in dirsim) / max(1, len(dirsim)), 1)}
    if "layout" in checks:
        report["largest_pixel_difference_same_pixels"] = largest
    return report
