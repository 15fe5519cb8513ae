"""Is the face denoiser a better prior than the linear ones? The gate before it is used.

On validation faces, each denoiser gets the same noisy faces ``x + σε`` (σ in [−1, 1]
units) and is scored by PSNR against ``x``:

* the face denoiser ``D(·, σ)``;
* the PCA basis's projection (the committed generator's 512 components);
* the Wiener filter of a Gaussian face model in that basis: each coefficient shrunk by
  ``λ / (λ + s²)`` (``λ`` its variance, ``s = σ/2`` the noise in [0, 1] units) — the best
  linear denoiser for Gaussian faces.

σ = 1.0, the guidance's level, is scored too. And where ``D``'s own image reaches a picture,
it must keep identity: FVA and FS of the round trip ``D(x + σε)`` against ``x`` (dlib's
descriptor) at the inpainting's σ (``denoised_output="inpaint"`` re-draws the mask from there).
The default output carries only ``D``'s change, ``D(x + δ + σε) − D(x + σε)``, in which the
round trip cancels; its identity at the guidance's σ is reported, not gated.

    python -m scripts.measurements.denoiser_gate --data ../shared/data/celeba-hq-64 --denoiser checkpoints/generator/face-denoiser \\
        --n 500 --json assets/results/denoiser-gate-val.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from recourse.data import load_split, to_float_images
from recourse.generation.face_denoiser import psnr
from recourse.generation.generators import default_generator, load_face_denoiser
from recourse.generation.guidance import CounterfactualConfig
from recourse.generation.models import PCAAutoencoder
from recourse.instruments.identity import identity_scores

SIGMAS = (0.1, 0.3, 0.5, 1.0)


def pca_projection(basis: PCAAutoencoder, noisy: torch.Tensor) -> torch.Tensor:
    return basis.decode(basis.encode(noisy))


def wiener(basis: PCAAutoencoder, noisy: torch.Tensor, sigma: float) -> torch.Tensor:
    """Whitened coefficients have unit variance, so the shrink is ``1 / (1 + s² / λ)``."""
    variance = basis.scale ** 2
    shrink = variance / (variance + (sigma / 2) ** 2)
    return basis.decode(basis.encode(noisy) * shrink)


@torch.no_grad()
def gate(clean: torch.Tensor, denoiser, basis: PCAAutoencoder, sigmas=SIGMAS, seed: int = 0,
         batch_size: int = 100) -> dict:
    """Mean PSNR (dB) of each denoiser at each σ, on the same noise draws."""
    results = {}
    for sigma in sigmas:
        scores = {"face denoiser": [], "pca projection": [], "wiener (gaussian)": [], "noisy input": []}
        generator = torch.Generator().manual_seed(seed)
        for start in range(0, len(clean), batch_size):
            x = clean[start:start + batch_size]
            noisy = x + sigma / 2 * torch.randn(x.shape, generator=generator)
            scores["face denoiser"].append(psnr(denoiser(noisy, sigma), x))
            scores["pca projection"].append(psnr(pca_projection(basis, noisy), x))
            scores["wiener (gaussian)"].append(psnr(wiener(basis, noisy, sigma), x))
            scores["noisy input"].append(psnr(noisy, x))
        results[str(sigma)] = {name: round(float(torch.cat(v).mean()), 3) for name, v in scores.items()}
    return results


@torch.no_grad()
def round_trip_identity(clean: torch.Tensor, denoiser, sigma: float, seed: int = 0, batch_size: int = 100) -> dict:
    generator = torch.Generator().manual_seed(seed)
    denoised = torch.cat([denoiser(x + sigma / 2 * torch.randn(x.shape, generator=generator), sigma).clamp(0, 1)
                          for x in clean.split(batch_size)])
    return {"sigma": sigma, **identity_scores(clean, denoised).to_dict()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--denoiser", required=True, help="a saved face denoiser folder")
    parser.add_argument("--split", default="val")
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--json")
    args = parser.parse_args()
    started = time.time()
    clean = to_float_images(load_split(args.data, args.split, 64, cache_dir=".cache").images[:args.n])
    denoiser = load_face_denoiser(args.denoiser)
    results = gate(clean, denoiser, default_generator().autoencoder)
    for sigma, row in results.items():
        print(f"σ={sigma}: " + ", ".join(f"{name} {value:.2f} dB" for name, value in row.items()))
    config = CounterfactualConfig()
    identity = round_trip_identity(clean, denoiser, config.inpaint_sigma)
    at_guidance = round_trip_identity(clean, denoiser, config.sigma)
    for name, row in (("inpainting's σ, gated", identity), ("guidance's σ, reported", at_guidance)):
        print(f"round trip at σ={row['sigma']} ({name}): FVA {row['fva']:.1f}%, FS {row['fs']:.3f}")
    passed = (all(row["face denoiser"] > max(row["pca projection"], row["wiener (gaussian)"])
                  for row in results.values()) and identity["fva"] >= 90)
    print("gate: " + ("passed" if passed else "NOT passed") + f" ({time.time() - started:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "command": "python -m scripts.measurements.denoiser_gate " + " ".join(
                f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v is not None),
            "split": args.split, "n": len(clean), "psnr_db": results, "round_trip_identity": identity,
            "round_trip_identity_at_guidance_sigma": at_guidance, "passed": passed}, indent=2) + "\n")


if __name__ == "__main__":
    main()
