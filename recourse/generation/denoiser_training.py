"""Training the face denoiser: EDM loss on moderate noise, flips, EMA weights, resumable.

A run keeps everything it needs to continue in ``state_dir`` (model, EMA, optimiser, data
order and the learning curve), saved every ``checkpoint_minutes``; it also exports the EMA
weights with ``save_pretrained`` there, so a session can commit them at any time. With no
state, a run may start from committed weights (``init_from``) instead of from scratch.
"""

from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from recourse.checkpoints import load_training_state, save_training_state
from recourse.generation.face_denoiser import FaceDenoiser, denoising_target, psnr
from recourse.generation.generators import load_face_denoiser, save_face_denoiser

CURVE_FILE = "curve.jsonl"
CONFIG_FILE = "train_config.json"
EMA_FOLDER = "ema"
STATE_FILE = "state.pt"
SIGMA_SAMPLINGS = ("log-uniform", "lognormal")
EDM_P_MEAN, EDM_P_STD = -1.2, 1.2


@dataclass(frozen=True)
class DenoiserTrainConfig:
    fold: int = 4
    block_out_channels: tuple[int, ...] = (128, 192, 256)
    layers_per_block: int = 1
    attention_levels: tuple[bool, ...] = (False, True, False)
    sigma_min: float = 0.02
    sigma_max: float = 1.0
    # "log-uniform" on [sigma_min, sigma_max]; "lognormal" is EDM's ln σ ~ N(−1.2, 1.2²), clipped to
    # the range: over the full range (0.002–80) it spends most steps where faces are drawn
    sigma_sampling: str = "log-uniform"
    batch_size: int = 32
    learning_rate: float = 3e-4
    warmup_steps: int = 1000
    ema_decay: float = 0.999
    steps: int = 200_000
    seed: int = 0
    checkpoint_minutes: float = 15.0
    eval_every: int = 500

    def __post_init__(self) -> None:
        if len(self.block_out_channels) != len(self.attention_levels):
            raise ValueError(f"one attention flag per level: {len(self.block_out_channels)} levels, "
                             f"{len(self.attention_levels)} flags")
        if self.fold < 1 or 64 % self.fold or not 0 < self.sigma_min < self.sigma_max:
            raise ValueError(f"fold must divide 64 and 0 < sigma_min < sigma_max (fold {self.fold}, "
                             f"sigmas {self.sigma_min}, {self.sigma_max})")
        if self.sigma_sampling not in SIGMA_SAMPLINGS:
            raise ValueError(f"sigma_sampling must be one of {', '.join(SIGMA_SAMPLINGS)}, not {self.sigma_sampling!r}")

    def model_kwargs(self) -> dict:
        return dict(fold=self.fold, block_out_channels=tuple(self.block_out_channels),
                    layers_per_block=self.layers_per_block, attention_levels=tuple(self.attention_levels),
                    sigma_min=self.sigma_min, sigma_max=self.sigma_max)


def pinned_config(state_dir: str | Path, config: DenoiserTrainConfig, given: dict) -> DenoiserTrainConfig:
    """The run's configuration: fixed by the first run in ``state_dir`` and kept there, so a
    resumed run trains the same network. ``given`` are the settings a user named this time: one
    that differs from the pinned run's is refused rather than silently ignored."""
    path = Path(state_dir) / CONFIG_FILE
    if not path.is_file():
        return config
    pinned = {k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(path.read_text()).items()}
    clashes = [f"{k} {given[k]!r} (the run there uses {pinned[k]!r})" for k in given
               if k != "steps" and k in pinned and given[k] != pinned[k]]
    if clashes:
        raise ValueError(f"{state_dir} holds a run of another configuration: " + "; ".join(clashes))
    return DenoiserTrainConfig(**{**pinned, **({"steps": given["steps"]} if "steps" in given else {})})


def sample_sigmas(count: int, low: float, high: float, generator: torch.Generator,
                  sampling: str = "log-uniform") -> torch.Tensor:
    """Noise levels on [low, high]: log-uniform, or EDM's log-normal clipped to the range."""
    if sampling == "lognormal":
        return torch.exp(EDM_P_MEAN + EDM_P_STD * torch.randn(count, generator=generator)).clamp(low, high)
    return torch.exp(math.log(low) + torch.rand(count, generator=generator) * (math.log(high) - math.log(low)))


def training_batch(images: np.ndarray, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """A random batch of ``uint8 (N, 3, R, R)`` images in [−1, 1], half of them mirrored."""
    index = torch.randint(0, len(images), (batch_size,), generator=generator).numpy()
    batch = torch.from_numpy(images[index]).float().div_(127.5).sub_(1)
    flip = torch.rand(batch_size, generator=generator) < 0.5
    batch[flip] = batch[flip].flip(-1)
    return batch


@torch.no_grad()
def denoising_psnr(model: FaceDenoiser, clean: torch.Tensor, sigma: float, seed: int = 0,
                   batch_size: int = 64) -> float:
    """Mean PSNR (dB) of D(x + σε) against x, for images in [0, 1] and σ in [−1, 1] units."""
    generator = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    scores = []
    for start in range(0, len(clean), batch_size):
        x = clean[start:start + batch_size]
        noise = torch.randn(x.shape, generator=generator)
        x, noise = x.to(device), noise.to(device)
        scores.append(psnr(model(x + sigma / 2 * noise, sigma).float(), x).cpu())
    return float(torch.cat(scores).mean())


def _ema_update(ema: FaceDenoiser, model: FaceDenoiser, step: int, decay: float) -> None:
    rate = min(decay, (1 + step) / (10 + step))
    with torch.no_grad():
        for averaged, current in zip(ema.parameters(), model.parameters()):
            averaged.lerp_(current, 1 - rate)


@dataclass
class _Training:
    """What a run saves and resumes from: both models, the optimiser, the generators of the data
    order and of the noise, the step and the seconds trained."""

    model: FaceDenoiser
    ema: FaceDenoiser
    optimizer: torch.optim.Optimizer
    generator: torch.Generator  # batches, σ and flips: always on the CPU, seeded
    noise_generator: torch.Generator  # the noise: the CPU generator there, else one on the device
    on_cpu: bool
    step: int = 0
    elapsed: float = 0.0

    @classmethod
    def start(cls, config: DenoiserTrainConfig, state_dir: Path, init_from: str | Path | None,
              device: str) -> _Training:
        """A new run (from ``init_from``'s weights where given), or the one kept in ``state_dir``."""
        torch.manual_seed(config.seed)
        model = FaceDenoiser(**config.model_kwargs())
        if init_from is not None and not (state_dir / STATE_FILE).is_file():
            model.load_state_dict(load_face_denoiser(init_from).state_dict())  # the committed, 8-bit weights
        model.to(device)
        ema = copy.deepcopy(model).requires_grad_(False)
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
        generator = torch.Generator().manual_seed(config.seed)
        on_cpu = torch.device(device).type == "cpu"
        noise_generator = generator if on_cpu else torch.Generator(device).manual_seed(config.seed + 1)
        run = cls(model, ema, optimizer, generator, noise_generator, on_cpu)
        if (state_dir / STATE_FILE).is_file():
            run.resume(state_dir / STATE_FILE)
        return run

    def resume(self, path: Path) -> None:
        state = load_training_state(path)
        self.model.load_state_dict(state["model"])
        self.ema.load_state_dict(state["ema"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        if not self.on_cpu and "noise_generator" in state:
            self.noise_generator.set_state(state["noise_generator"])
        self.step, self.elapsed = int(state["step"]), float(state["elapsed"])
        print(f"resumed at step {self.step} ({self.elapsed / 3600:.2f} h trained)", flush=True)

    def save(self, state_dir: Path, config: DenoiserTrainConfig, metadata: dict | None) -> None:
        """The state to resume from, and the EMA weights in the format committed under checkpoints/."""
        save_training_state(state_dir / STATE_FILE, {
            "model": self.model.state_dict(), "ema": self.ema.state_dict(), "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(), "step": self.step, "elapsed": self.elapsed,
            **({} if self.on_cpu else {"noise_generator": self.noise_generator.get_state()})})
        save_face_denoiser(self.ema, state_dir / EMA_FOLDER)
        (state_dir / EMA_FOLDER / "training.json").write_text(json.dumps({
            **(metadata or {}), "train_config": asdict(config), "step": self.step,
            "images_seen": self.step * config.batch_size, "training_hours": round(self.elapsed / 3600, 3)},
            indent=2) + "\n")

    def train_step(self, train_images: np.ndarray, config: DenoiserTrainConfig, device: str) -> float:
        """One optimiser step on a fresh batch (warm-up, bfloat16 autocast off the CPU, clipped
        gradients, the EMA updated); its loss."""
        for group in self.optimizer.param_groups:
            group["lr"] = config.learning_rate * min(1.0, (self.step + 1) / config.warmup_steps)
        clean = training_batch(train_images, config.batch_size, self.generator).to(device)
        sigma = sample_sigmas(config.batch_size, config.sigma_min, config.sigma_max, self.generator,
                              config.sigma_sampling).to(device)
        noise = torch.randn(clean.shape, generator=self.noise_generator, device=self.noise_generator.device)
        noisy = clean + sigma.view(-1, 1, 1, 1) * noise
        with torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=not self.on_cpu):
            raw = self.model.raw(noisy, sigma)
        loss = (raw.float() - denoising_target(self.model, clean, noisy, sigma)).pow(2).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.step += 1
        _ema_update(self.ema, self.model, self.step, config.ema_decay)
        return loss.item()


def train_denoiser(train_images: np.ndarray, val_images: np.ndarray, state_dir: str | Path,
                   config: DenoiserTrainConfig, init_from: str | Path | None = None,
                   metadata: dict | None = None, max_minutes: float | None = None,
                   should_stop: Callable[[], bool] | None = None, device: str = "cpu") -> Path:
    """Train (or continue training) on ``uint8`` images; returns the folder of the EMA weights.

    ``should_stop`` is asked after every step; when it answers yes (e.g. the process was
    sent SIGTERM) the run saves at that step and returns, so that nothing trained is lost.

    ``val_images`` (a few hundred) give the learning curve: PSNR of the EMA model at
    σ = 0.1, 0.3, 0.5 every ``eval_every`` steps.

    On ``device="cuda"`` the steps run in bfloat16 autocast and the noise is drawn there
    (drawing it on the CPU would starve the GPU); batches, σ and flips still come from the
    seeded CPU generator. On the CPU nothing changes.
    """
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / CONFIG_FILE).write_text(json.dumps(asdict(config), indent=2) + "\n")
    run = _Training.start(config, state_dir, init_from, device)
    val = torch.from_numpy(val_images).float().div(255)
    started = last_save = time.time()
    running = None
    run.model.train()
    with (state_dir / CURVE_FILE).open("a") as curve:
        while run.step < config.steps:
            loss = run.train_step(train_images, config, device)
            running = loss if running is None else 0.98 * running + 0.02 * loss
            if run.step % config.eval_every == 0:
                run.ema.eval()
                record = {"step": run.step, "loss": round(running, 5),
                          "hours": round((run.elapsed + time.time() - started) / 3600, 3),
                          **{f"psnr_{s}": round(denoising_psnr(run.ema, val, s), 3) for s in (0.1, 0.3, 0.5)}}
                curve.write(json.dumps(record) + "\n")
                curve.flush()
                print(record, flush=True)
            out_of_time = ((max_minutes is not None and (run.elapsed + time.time() - started) / 60 >= max_minutes)
                           or (should_stop is not None and should_stop()))
            if time.time() - last_save >= config.checkpoint_minutes * 60 or run.step == config.steps or out_of_time:
                run.elapsed += time.time() - started
                started = time.time()  # the saving is not training time
                run.save(state_dir, config, metadata)
                last_save = time.time()
                if out_of_time:
                    break
    return state_dir / EMA_FOLDER
