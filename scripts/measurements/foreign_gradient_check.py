"""The black-box gradient checked on the float classifier, and its cost on the int8 ONNX model.

The black-box gradient (recourse.foreign.blackbox) is validated on the project's float
classifier, whose true gradient is known; its cost is measured on the ONNX Runtime int8 model.

    python -m scripts.measurements.foreign_gradient_check --data ../shared/data/celeba-hq-64 --faces 12 \
        --int8 out/foreign/ort-int8 --json assets/results/foreign-gradient-check.json

For ``--faces`` test faces and each of the four recourse attributes:

1. gradient quality — the logit's gradient with respect to the coefficients of the edit
   subspace (the top ``--k`` components of the generator's PCA face basis, the space the
   project's edits keep to), estimated from forward passes only with the subspace's basis
   (``2k`` passes) and with ``n`` random directions (``2n`` passes); cosine to the true gradient
   (autograd) of the same coefficients; and, in pixel space, the cosine of the 8×8 smooth-basis
   estimate (384 passes) to the raw pixel gradient;
2. recourse — a walk in the subspace, fixed L2 steps along the normalised gradient until the
   decision flips, once with the true gradient and once with the estimate (the same faces,
   the same steps): whether both flip, the cosine of the two edits, and their L2 costs;
3. cost on the black box — the same estimated walk on the ONNX Runtime int8 model: forward
   passes and seconds per counterfactual;
4. the audit's own recourse (``--recourse-k``: the subspace a black box's gradient is estimated
   in, ``recourse.foreign.pairs.BLACK_BOX_COMPONENTS`` by default): in pixel space, the cosine
   of the face-basis estimate to the gradient the walk actually follows (the true pixel gradient
   projected on all the generator's components), for each of ``--pixel-ks``; then the project's
   counterfactual method at the audit's settings (margin 0) guided once by the true gradient and
   once by :class:`~recourse.foreign.blackbox.ZerothOrderClassifier` around the same float model:
   validity, L1 cost (``recourse.metrics.recourse_cost``), the cosine of the two edits, forward
   passes and seconds per counterfactual; and the same recourse for the ONNX Runtime int8 black
   box as the audit runs it (``recourse.foreign.pairs``). ``--counterfactual-method`` picks the
   method (default: the audit's); the committed ``assets/results/foreign-gradient-check.json``
   was made when the audit's was the cone walk: its command in ``docs/foreign-models.md`` names
   ``--counterfactual-method pca-walk-cone``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from recourse import models
from recourse.audit.result import minimal_recourse
from recourse.checkpoints import load_classifier
from recourse.data import load_split, to_float_images
from recourse.foreign.adapter import ForeignClassifier
from recourse.foreign.blackbox import (DEFAULT_SIGMA, ZerothOrderClassifier, cosine, estimate_gradient, face_basis,
                                       lowres_basis)
from recourse.foreign.loaders import load_foreign
from recourse.foreign.pairs import BLACK_BOX_COMPONENTS, differentiable
from recourse.generation.models import PCAAutoencoder
from recourse.locations import checkpoints_dir
from recourse.names import ATTRIBUTES, COUNTERFACTUAL_METHODS, DEFAULT_ATTRIBUTES


def subspace_objective(model, faces: torch.Tensor, basis: torch.Tensor, column: int, signs: torch.Tensor):
    """``z (B, m, k)`` → the signed logit of ``faces + zᵀbasis`` (signed so that up is the target)."""

    def objective(z: torch.Tensor) -> torch.Tensor:
        b, m = z.shape[:2]
        images = faces.unsqueeze(1) + (z @ basis.flatten(1)).view(b, m, *faces.shape[1:])
        return model(images.reshape(b * m, *faces.shape[1:]))[:, column].reshape(b, m) * signs.view(b, 1)

    return objective


def true_gradient(objective, z: torch.Tensor) -> torch.Tensor:
    z = z.detach().clone().requires_grad_()
    objective(z.unsqueeze(1)).sum().backward()
    return z.grad


def walk(gradient_of, objective, k: int, batch: int, step: float, steps: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Fixed-length steps along the normalised gradient until the signed logit is > 0; returns
    the edits' coefficients, whether each flipped, and the forward passes the gradients took."""
    z = torch.zeros(batch, k)
    done = torch.zeros(batch, dtype=torch.bool)
    passes = 0
    for _ in range(steps):
        with torch.no_grad():
            done |= objective(z.unsqueeze(1)).squeeze(1) > 0
        if bool(done.all()):
            break
        g, used = gradient_of(z)
        passes += used
        direction = g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)
        z = torch.where(done.unsqueeze(1), z, z + step * direction)
    with torch.no_grad():
        done |= objective(z.unsqueeze(1)).squeeze(1) > 0
    return z, done, passes


def pixel_gradient_check(classifier, generator, faces: torch.Tensor, column: int, signs: torch.Tensor,
                         ks: list[int], sigma: float) -> dict:
    """Part 4a: in pixel space, the face-basis estimate against the gradient the walk follows."""
    pixels = faces.clone().requires_grad_()
    (classifier(pixels)[:, column] * signs).sum().backward()
    followed = generator.project(pixels.grad)  # the walk projects each step on all the components

    def objective(points: torch.Tensor) -> torch.Tensor:
        b, m = points.shape[:2]
        return classifier(points.reshape(b * m, *points.shape[2:]))[:, column].reshape(b, m) * signs.view(b, 1)

    rows = {}
    for k in ks:
        basis = face_basis(generator.autoencoder.components, k, generator.resolution)
        estimate = estimate_gradient(objective, faces, basis=basis, sigma=sigma)
        rows[str(k)] = {"passes_per_gradient": 2 * k,
                        "cosine_to_followed_gradient_median": float(cosine(estimate.gradient, followed).median()),
                        "cosine_to_raw_pixel_gradient_median": float(cosine(estimate.gradient, pixels.grad).median())}
    return rows


def recourse_check(classifier, generator, faces: torch.Tensor, attribute: str, ks: list[int], default_k: int,
                   estimator_model=None, black_box=None, method: str | None = None) -> dict:
    """Part 4b: the audit's recourse guided by the true gradient and by the estimate in the
    ``k`` leading face-basis components, for each of ``ks``; the estimate's forward passes go
    to ``estimator_model`` (default ``classifier``; the same function in a faster runtime).
    ``method``: the counterfactual method (default the audit's)."""
    from dataclasses import replace

    from recourse.audit.paired import Student, flip_targets, own_recourse

    config = minimal_recourse() if method is None else replace(minimal_recourse(), method=method)
    targets = flip_targets(classifier, faces, attribute)
    true = own_recourse(faces, attribute, targets, Student("fp32", classifier, classifier), config, generator)
    rows: dict = {"faces": len(faces), "valid_true_gradient": int(true.valid.sum()),
                  "seconds_per_counterfactual_true_gradient": true.seconds / len(faces), "k": {}}
    for k in ks:
        basis = face_basis(generator.autoencoder.components, k, generator.resolution)
        estimator = ZerothOrderClassifier(estimator_model or classifier, basis=basis, sigma=DEFAULT_SIGMA, seed=1)
        started = time.perf_counter()
        estimated = own_recourse(faces, attribute, targets, Student("fp32-zo", estimator, classifier), config,
                                 generator)
        seconds = time.perf_counter() - started
        both = true.valid & estimated.valid
        rows["k"][str(k)] = {
            "valid_estimate": int(estimated.valid.sum()),
            "edit_cosine_median": float(cosine(estimated.images[both] - faces[both], true.images[both] - faces[both])
                                        .median()) if both.any() else None,
            "cost_true_median": float(true.cost[both].median()) if both.any() else None,
            "cost_estimate_median": float(estimated.cost[both].median()) if both.any() else None,
            "cost_ratio_median": float((estimated.cost[both] / true.cost[both]).median()) if both.any() else None,
            "forward_passes_per_counterfactual": estimator.forward_passes / len(faces),
            "gradients_per_counterfactual": estimator.estimates / len(faces),
            "seconds_per_counterfactual": seconds / len(faces)}
    if black_box is not None:
        basis = face_basis(generator.autoencoder.components, default_k, generator.resolution)
        twin = differentiable(black_box, basis, seed=1)
        targets = flip_targets(black_box, faces, attribute)
        started = time.perf_counter()
        own = own_recourse(faces, attribute, targets, Student("black-box", twin, black_box), config, generator)
        seconds = time.perf_counter() - started
        rows["black_box"] = {"k": default_k, "valid": int(own.valid.sum()),
                             "cost_median": float(own.cost[own.valid].median()) if own.valid.any() else None,
                             "forward_passes_per_counterfactual": twin.forward_passes / len(faces),
                             "gradients_per_counterfactual": twin.estimates / len(faces),
                             "seconds_per_counterfactual": seconds / len(faces)}
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/celeba-hq-64")
    parser.add_argument("--faces", type=int, default=12)
    parser.add_argument("--k", type=int, default=64, help="components of the face basis to edit in")
    parser.add_argument("--directions", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--sigma", type=float, default=0.5)
    parser.add_argument("--step", type=float, default=0.5, help="L2 length of one walk step (pixels in [0, 1])")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--int8", default=None, help="a card folder of a black box to time the walk on")
    parser.add_argument("--recourse-k", type=int, default=BLACK_BOX_COMPONENTS,
                        help="face-basis components the audit's black-box recourse estimates its gradient in")
    parser.add_argument("--recourse-ks", type=int, nargs="+", default=None,
                        help="subspaces to compare the float model's estimated recourse in (default --recourse-k)")
    parser.add_argument("--estimator-onnx", default=None,
                        help="a card of the float classifier exported to ONNX: the estimate's forward passes run "
                             "there (the same function, faster on a CPU); the true gradient stays torch's")
    parser.add_argument("--pixel-ks", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument("--recourse-faces", type=int, default=None,
                        help="faces for part 4b (default --faces): the project's recourse is the slow part")
    parser.add_argument("--attributes", nargs="+", default=list(DEFAULT_ATTRIBUTES))
    parser.add_argument("--counterfactual-method", choices=COUNTERFACTUAL_METHODS, default=None,
                        help="the recourse's counterfactual method (default: the audit's; the committed file's was "
                             "pca-walk-cone)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    classifier = load_classifier(checkpoints_dir() / "classifier").requires_grad_(False)
    pca = PCAAutoencoder.from_pretrained(checkpoints_dir() / "generator" / "autoencoder", low_cpu_mem_usage=False).float()
    basis = pca.components[:args.k].view(args.k, 3, 64, 64).clone()  # orthonormal rows, pixel units
    test = load_split(args.data, "test", 64, cache_dir=".cache")
    pick = np.sort(np.random.default_rng(1).choice(len(test.images), args.faces, replace=False))
    faces = to_float_images(test.images[pick])
    pixel_basis = lowres_basis((3, 64, 64), grid=8)
    black_box = ForeignClassifier(load_foreign(args.int8)) if args.int8 else None
    estimator_model = ForeignClassifier(load_foreign(args.estimator_onnx)) if args.estimator_onnx else None
    generator = models.load_generator()  # the committed one, checked against its manifest
    recourse_faces = faces[:args.recourse_faces or args.faces]
    report: dict = {"command": "python -m scripts.measurements.foreign_gradient_check "
                               + " ".join(sys.argv[1:] if argv is None else argv),
                    "faces": args.faces, "k": args.k, "sigma": args.sigma, "step": args.step,
                    "recourse_faces": len(recourse_faces), "recourse_k": args.recourse_k,
                    "estimator_onnx": args.estimator_onnx,
                    "recourse_sigma": DEFAULT_SIGMA, "threads": args.threads,
                    "recourse_method": args.counterfactual_method or minimal_recourse().method, "attributes": {}}
    for attribute in args.attributes:
        column = ATTRIBUTES.index(attribute)
        with torch.no_grad():
            signs = torch.where(classifier(faces)[:, column] >= 0, -1.0, 1.0)  # towards the other decision
        objective = subspace_objective(classifier, faces, basis, column, signs)
        z0 = torch.zeros(args.faces, args.k)
        true = true_gradient(objective, z0)
        row: dict = {}
        full = estimate_gradient(objective, z0, basis=torch.eye(args.k), sigma=args.sigma)
        row["basis"] = {"passes_per_gradient": 2 * args.k,
                        "cosine_median": float(cosine(full.gradient, true).median())}
        for n in args.directions:
            est = estimate_gradient(objective, z0, basis=torch.eye(args.k), directions=n, sigma=args.sigma, seed=0)
            row[f"random-{n}"] = {"passes_per_gradient": 2 * n,
                                  "cosine_median": float(cosine(est.gradient, true).median())}

        def pixel_objective(points: torch.Tensor) -> torch.Tensor:
            b, m = points.shape[:2]
            return classifier(points.reshape(b * m, 3, 64, 64))[:, column].reshape(b, m)

        pixels = faces.clone().requires_grad_()
        classifier(pixels)[:, column].sum().backward()
        pixel = estimate_gradient(pixel_objective, faces, basis=pixel_basis, sigma=args.sigma)
        row["pixel-8x8"] = {"passes_per_gradient": 2 * 192,
                            "cosine_to_raw_pixel_gradient_median": float(cosine(pixel.gradient, pixels.grad).median())}

        def exact(z):
            return true_gradient(objective, z), 0

        def estimated(z, objective=objective):
            result = estimate_gradient(objective, z, basis=torch.eye(args.k), sigma=args.sigma)
            return result.gradient, result.forward_passes

        z_true, flip_true, _ = walk(exact, objective, args.k, args.faces, args.step, args.steps)
        z_est, flip_est, passes = walk(estimated, objective, args.k, args.faces, args.step, args.steps)
        both = flip_true & flip_est
        row["recourse"] = {
            "flipped_true_gradient": int(flip_true.sum()), "flipped_estimate": int(flip_est.sum()),
            "edit_cosine_median": float(cosine(z_est[both], z_true[both]).median()) if both.any() else None,
            "cost_true_median": float(z_true[both].norm(dim=1).median()) if both.any() else None,
            "cost_estimate_median": float(z_est[both].norm(dim=1).median()) if both.any() else None,
            "forward_passes_per_counterfactual_fp32": passes / args.faces}
        if black_box is not None:
            with torch.no_grad():
                bb_signs = torch.where(black_box(faces)[:, column] >= 0, -1.0, 1.0)
            bb_objective = subspace_objective(black_box, faces, basis, column, bb_signs)
            start = time.perf_counter()
            z_bb, flip_bb, bb_passes = walk(lambda z: estimated(z, bb_objective), bb_objective, args.k, args.faces,
                                            args.step, args.steps)
            seconds = time.perf_counter() - start
            row["black_box"] = {"card": str(args.int8), "flipped": int(flip_bb.sum()),
                                "forward_passes_per_counterfactual": bb_passes / args.faces,
                                "seconds_per_counterfactual": seconds / args.faces,
                                "cost_median": float(z_bb[flip_bb].norm(dim=1).median()) if flip_bb.any() else None}
        row["pixel_face_basis"] = pixel_gradient_check(classifier, generator, faces, column, signs, args.pixel_ks,
                                                       DEFAULT_SIGMA)
        row["audit_recourse"] = recourse_check(classifier, generator, recourse_faces, attribute,
                                               args.recourse_ks or [args.recourse_k], args.recourse_k,
                                               estimator_model, black_box, args.counterfactual_method)
        report["attributes"][attribute] = row
        print(attribute, json.dumps(row))
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
