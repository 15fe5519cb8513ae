"""Write the app's gallery (``assets/gallery/``): faces that are not dataset photos.

* faces sampled from the project's own generator (``checkpoints/generator``), from fixed
  seeds picked by eye among seeds 0–39 for looking like faces;
* Grace Hopper's official portrait, a U.S. Navy photograph in the public domain, as shipped
  inside the matplotlib wheel (``mpl-data/sample_data/grace_hopper.jpg``), aligned by
  ``recourse.faces.align_face`` like any upload.

Each face is a framed 64×64 PNG with a ``.json`` provenance file beside it.

    python -m scripts.make_gallery
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from recourse.generation import default_generator
from recourse.faces import align_face

GALLERY = Path(__file__).resolve().parents[1] / "assets" / "gallery"
SEEDS = (8, 13, 21, 30, 34)
TRUNCATION = 0.55  # scale of the initial noise: lower gives more average faces
SAMPLING_STEPS = 50


@torch.no_grad()
def sample_face(seed: int) -> np.ndarray:
    """One unconditional DDIM sample of the committed generator → ``uint8 (H, W, 3)``."""
    generator = default_generator()
    scheduler = type(generator.scheduler).from_config(generator.scheduler.config)
    scheduler.set_timesteps(SAMPLING_STEPS)
    latents = torch.randn(1, generator.encode(torch.zeros(1, 3, generator.resolution, generator.resolution)).shape[1],
                          generator=torch.Generator().manual_seed(seed)) * TRUNCATION
    for t in scheduler.timesteps:
        latents = scheduler.step(generator.predict_noise(latents, t.reshape(1)), t, latents).prev_sample
    image = generator.decode(latents).clamp(0, 1)[0]
    return (image.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)


def write(name: str, pixels: np.ndarray, provenance: dict) -> None:
    Image.fromarray(pixels).save(GALLERY / f"{name}.png")
    (GALLERY / f"{name}.json").write_text(json.dumps(provenance, indent=2) + "\n")


def main() -> None:
    GALLERY.mkdir(parents=True, exist_ok=True)
    for seed in SEEDS:
        write(f"generated-seed-{seed}", sample_face(seed), {
            "title": f"Generated face (seed {seed})",
            "source": "sampled from this project's generator, checkpoints/generator (not a photo of a person)",
            "command": "python -m scripts.make_gallery",
            "seed": seed, "truncation": TRUNCATION, "sampling_steps": SAMPLING_STEPS,
            "license": "same as this repository",
        })
    import matplotlib

    photo = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    aligned = align_face(photo)
    write("grace-hopper", aligned.image.transpose(1, 2, 0), {
        "title": "Grace Hopper (official U.S. Navy portrait)",
        "source": f"matplotlib {matplotlib.__version__} wheel, mpl-data/sample_data/grace_hopper.jpg, "
                  "aligned with recourse.faces.align_face",
        "license": "public domain (work of the U.S. Navy)",
        "command": "python -m scripts.make_gallery",
    })
    print(f"wrote {len(SEEDS) + 1} faces to {GALLERY}")


if __name__ == "__main__":
    main()
