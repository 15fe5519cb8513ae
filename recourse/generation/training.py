"""Training the latent face generator: fit the PCA basis, cache latents, train the denoiser.

Resumable: the basis and the denoiser's optimiser state are kept in a state folder, so an
interrupted run continues from its last checkpoint.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from recourse.checkpoints import load_training_state, save_training_state
from recourse.data import to_float_images
from recourse.generation.generators import LatentFaceGenerator
from recourse.generation.models import LatentDenoiser, PCAAutoencoder, default_scheduler, fit_pca_autoencoder


@dataclass(frozen=True)
class GeneratorTrainConfig:
    latent_dim: int = 512
    width: int = 512
    depth: int = 3
    steps: int = 12000
    batch_size: int = 256
    learning_rate: float = 1e-3
    seed: int = 0
    checkpoint_every: int = 500

    def __post_init__(self) -> None:
        if min(self.latent_dim, self.width, self.depth, self.steps, self.batch_size) < 1:
            raise ValueError(f"sizes and steps must be >= 1, got {self}")


@dataclass(frozen=True)
class GeneratorTrainResult:
    final_loss: float
    reconstruction_error: float  # mean |D(E(x)) − x| on the validation images, [0, 1] units
    seconds: float


@torch.no_grad()
def encode_all(autoencoder: PCAAutoencoder, images: np.ndarray, batch_size: int = 1024) -> torch.Tensor:
    return torch.cat([autoencoder.encode(to_float_images(images[i:i + batch_size]))
                      for i in range(0, len(images), batch_size)])


@torch.no_grad()
def reconstruction_error(autoencoder: PCAAutoencoder, images: np.ndarray) -> float:
    x = to_float_images(images)
    return float((autoencoder.decode(autoencoder.encode(x)) - x).abs().mean())


def train_generator(
    train_images: np.ndarray,
    val_images: np.ndarray,
    out_dir: str | Path,
    config: GeneratorTrainConfig,
    state_dir: str | Path,
    metadata: dict | None = None,
) -> GeneratorTrainResult:
    """Train on ``uint8 (N, 3, R, R)`` images (and their mirror images) and save to ``out_dir``."""
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    basis_dir = state_dir / "autoencoder"
    if (basis_dir / "config.json").is_file():
        autoencoder = PCAAutoencoder.from_pretrained(basis_dir, low_cpu_mem_usage=False)
    else:
        print("fitting the PCA basis…", flush=True)
        autoencoder = fit_pca_autoencoder(train_images, config.latent_dim, config.seed)
        autoencoder.save_pretrained(basis_dir)
    latents = torch.cat([encode_all(autoencoder, train_images), encode_all(autoencoder, train_images[..., ::-1].copy())])

    torch.manual_seed(config.seed)
    denoiser = LatentDenoiser(latent_dim=config.latent_dim, width=config.width, depth=config.depth)
    scheduler = default_scheduler()
    optimizer = torch.optim.AdamW(denoiser.parameters(), lr=config.learning_rate, weight_decay=0.01)
    warmup = min(200, config.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / max(1, warmup))
                                                 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / config.steps))))
    step, elapsed, running = 0, 0.0, 0.0
    state_path = state_dir / "denoiser-state.pt"
    if state_path.is_file():
        state = load_training_state(state_path)
        denoiser.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        step, elapsed, running = int(state["step"]), float(state["elapsed"]), float(state["running"])
        print(f"resumed denoiser training at step {step}", flush=True)
    generator = torch.Generator().manual_seed(config.seed)
    if step:
        generator.set_state(state["generator"])
    alphas = scheduler.alphas_cumprod
    denoiser.train()
    bar = tqdm(total=config.steps, initial=step, desc="denoiser", unit="step", mininterval=5)
    segment_start = time.time()
    while step < config.steps:
        index = torch.randint(0, len(latents), (config.batch_size,), generator=generator)
        clean = latents[index]
        noise = torch.randn(clean.shape, generator=generator)
        timesteps = torch.randint(0, scheduler.config.num_train_timesteps, (config.batch_size,), generator=generator)
        alpha = alphas[timesteps].unsqueeze(1)
        noisy = alpha.sqrt() * clean + (1 - alpha).sqrt() * noise
        loss = F.mse_loss(denoiser(noisy, timesteps), noise)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        step += 1
        running = loss.item() if step == 1 else 0.99 * running + 0.01 * loss.item()
        bar.update(1)
        bar.set_postfix(loss=f"{running:.4f}", refresh=False)
        if step % config.checkpoint_every == 0 or step == config.steps:
            elapsed += time.time() - segment_start
            segment_start = time.time()
            save_training_state(state_path, {
                "model": denoiser.state_dict(), "optimizer": optimizer.state_dict(),
                "schedule": schedule.state_dict(), "step": step, "elapsed": elapsed, "running": running,
                "generator": generator.get_state(),
            })
    bar.close()
    error = reconstruction_error(autoencoder, val_images)
    LatentFaceGenerator(autoencoder, denoiser.eval(), scheduler).save_pretrained(out_dir, {
        **(metadata or {}), "train_config": asdict(config), "final_loss": round(running, 5),
        "val_reconstruction_error": round(error, 5), "denoiser_training_seconds": round(elapsed, 1),
        "total_seconds_this_run": round(time.time() - started, 1),
    })
    return GeneratorTrainResult(final_loss=running, reconstruction_error=error, seconds=elapsed)
