"""Shared fixtures: tiny CelebA folders and models made on the fly, the real data when present,
and the two tiers of the suite.

``python -m pytest -q -n 2`` runs the fast tier on two worker processes (pytest-xdist, ``--dist
loadfile``: a worker runs a module whole, so its module-scoped models and apps start once): every
test not marked ``slow`` (the end-to-end,
browser, real-model and real-data checks, as diffusers gates its own slow tests).
``RECOURSE_FULL=1`` is the one switch for the full tier (``.ci/run`` sets it): every test runs,
and a missing prerequisite fails its test instead of skipping it.

Prerequisites (real data, chromium, the committed variants) are declared on a test with
``@pytest.mark.requires("hq_data", ...)``. A missing one skips the test with its reason,
unless ``RECOURSE_FULL=1``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from recourse.data import ATTRIBUTES

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
HQ_DATA = SHARED_DATA / "celeba-hq-64"
ALIGNED_DATA = SHARED_DATA / "celeba-aligned-dev"
COMMITTED = ROOT / "checkpoints"
CHROMIUM = Path("/usr/bin/chromium")  # Debian's; scripts/figures/app_screenshot.py drives the same one


def _committed_variants_built() -> bool:
    from recourse.compression import METHODS

    return all((COMMITTED / "variants" / method / "config.json").is_file() for method in METHODS)


# name: (is it there?, what is missing)
PREREQUISITES: dict[str, tuple[Callable[[], bool], str]] = {
    "hq_data": (HQ_DATA.is_dir, f"real CelebA-HQ data not found at {HQ_DATA}"),
    "aligned_data": (ALIGNED_DATA.is_dir, f"original CelebA photos not found at {ALIGNED_DATA}"),
    "chromium": (CHROMIUM.is_file, f"{CHROMIUM} not installed (apt-get install chromium)"),
    "playwright": (lambda: importlib.util.find_spec("playwright") is not None, "the playwright package is missing"),
    "committed_variants": (_committed_variants_built, f"not every variant is built under {COMMITTED / 'variants'}"),
}


FULL_TIER = "RECOURSE_FULL"


def full_tier() -> bool:
    """Whether this run is the full tier: every test, none skipped."""
    return os.environ.get(FULL_TIER) == "1"


def missing(reason: str) -> None:
    """Skip for a missing prerequisite, or fail in the full tier."""
    if full_tier():
        pytest.fail(f"{reason} ({FULL_TIER}=1: every test must run)", pytrace=False)
    pytest.skip(reason)


def pytest_configure(config: pytest.Config) -> None:
    # the apps the tests start skip the warm-up audit (about 12 s each here): what they check
    # is served, not the first user's wait; tests/test_app_startup.py checks the warm-up itself
    os.environ.setdefault("RECOURSE_WARM_UP", "0")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # one torch thread per worker: the suite runs as -n 2 on two cores (README), and two workers of
        # two threads each would take turns on them
        torch.set_num_threads(1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The fast tier leaves out the tests marked ``slow`` (deselected, so they are not skips)."""
    if full_tier():
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


def pytest_report_header(config: pytest.Config) -> str:
    return ("full tier: every test, a missing prerequisite fails" if full_tier()
            else f"fast tier: tests marked slow are deselected ({FULL_TIER}=1 runs the full tier)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in item.iter_markers("requires"):
        for name in marker.args:
            present, reason = PREREQUISITES[name]
            if not present():
                missing(reason)


# --- tiny CelebA folders ---------------------------------------------------------------


def hq_val_faces(count: int, *attributes: str) -> tuple[torch.Tensor, ...]:
    """The first ``count`` real validation faces in [0, 1] and one boolean label array per
    attribute (for tests marked ``requires("hq_data")``)."""
    from recourse.data import attribute_index, load_split, to_float_images

    split = load_split(HQ_DATA, "val", 64)
    labels = split.labels[:count]
    return (to_float_images(split.images[:count]),
            *(labels[:, attribute_index(attribute)].astype(bool) for attribute in attributes))


def attribute_rows(names: list[str], seed: int = 0) -> tuple[list[str], np.ndarray]:
    labels = np.random.default_rng(seed).integers(0, 2, (len(names), 40)).astype(np.uint8)
    rows = [name + " " + " ".join("1" if v else "-1" for v in row) for name, row in zip(names, labels)]
    return rows, labels


def write_images(directory: Path, names: list[str], size: tuple[int, int], seed: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name in names:
        pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        Image.fromarray(pixels).save(directory / name, quality=95)


def write_hq_folder(root: Path, ids: list[int], size: int = 16, seed: int = 0) -> np.ndarray:
    """A CelebAMask-HQ layout of noise images with these ids; returns their labels."""
    names = [f"{i}.jpg" for i in ids]
    rows, labels = attribute_rows(names, seed)
    write_images(root / "CelebA-HQ-img", names, (size, size), seed)
    (root / "CelebAMask-HQ-attribute-anno.txt").write_text(
        "\n".join([str(len(rows)), " ".join(ATTRIBUTES), *rows]) + "\n")
    return labels


@pytest.fixture(autouse=True)
def torch_threads_kept():
    """What a test sets of torch's threads (the CLI's audit lowers them: recourse.audit.paired) ends with it."""
    before = torch.get_num_threads()
    yield
    if torch.get_num_threads() != before:
        torch.set_num_threads(before)


@pytest.fixture
def hq_folder(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A CelebAMask-HQ layout whose ids straddle the train/val/test boundaries."""
    root = tmp_path / "hq"
    return root, write_hq_folder(root, [0, 1, 23999, 24000, 26999, 27000, 27001, 29999])


@pytest.fixture
def celeba_folder(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """An original-CelebA layout (178×218 photos) with a partition file and no count line."""
    names = [f"{i:06d}.jpg" for i in (1, 2, 3, 4, 5)]
    rows, labels = attribute_rows(names, seed=1)
    root = tmp_path / "celeba"
    write_images(root / "img_align_celeba", names, (178, 218))
    (root / "list_attr_celeba.txt").write_text("\n".join([" ".join(ATTRIBUTES), *rows]) + "\n")
    (root / "list_eval_partition.txt").write_text("000001.jpg 0\n000002.jpg 0\n000003.jpg 1\n000004.jpg 2\n000005.jpg 2\n")
    return root, labels


# --- tiny generators -------------------------------------------------------------------


def random_denoiser(latent_dim: int, width: int = 16, depth: int = 1, seed: int = 0):
    """A denoiser with torch's default (random, non-zero) initialisation in every layer: the
    project's starts with a zeroed output layer, which predicts no noise at all and would make
    every test run without a prior."""
    from recourse.generation import LatentDenoiser

    torch.manual_seed(seed)
    denoiser = LatentDenoiser(latent_dim=latent_dim, width=width, depth=depth)
    for module in denoiser.modules():
        if module is not denoiser and hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return denoiser.eval()


def tiny_face_denoiser(resolution: int = 16, seed: int = 0):
    """A randomly initialised face denoiser at ``resolution``, for the default (denoised)
    method: two levels of 32 channels (its 32 norm groups need at least 32) behind a 2× fold,
    so a 16-px face runs at 8×8, then 4×4."""
    from recourse.generation.face_denoiser import FaceDenoiser

    with torch.random.fork_rng():  # seeded, without moving the global stream other tests draw from
        torch.manual_seed(seed)
        return FaceDenoiser(resolution=resolution, fold=2, block_out_channels=(32, 32), layers_per_block=1,
                            attention_levels=(False, False)).eval().requires_grad_(False)


def make_generator(faces: np.ndarray, latent_dim: int = 8, width: int = 16, depth: int = 1, seed: int = 0):
    """A latent generator: a PCA basis fitted on ``faces``, a :func:`random_denoiser` and a
    :func:`tiny_face_denoiser` at the faces' resolution."""
    from recourse.generation import LatentFaceGenerator, default_scheduler, fit_pca_autoencoder

    autoencoder = fit_pca_autoencoder(faces, latent_dim=latent_dim, seed=seed)
    return LatentFaceGenerator(autoencoder, random_denoiser(latent_dim, width, depth, seed), default_scheduler(),
                               face_denoiser=tiny_face_denoiser(faces.shape[-1], seed))


def still_generator(resolution: int = 16):
    """A generator whose face basis is empty: every walk edit (``pca-walk``, ``pca-walk-cone``)
    is zero, so such a counterfactual is its input exactly (cost 0) whatever the guidance.
    Its face denoiser is a random one, so the denoised method's edits are not zero; that method
    returns the input only where the target is already decided and its edit keeps it so. A test
    that needs no edit at all names a walk method."""
    from recourse.generation import LatentFaceGenerator, PCAAutoencoder, default_scheduler

    return LatentFaceGenerator(PCAAutoencoder(resolution=resolution, latent_dim=4), random_denoiser(4),
                               default_scheduler(), face_denoiser=tiny_face_denoiser(resolution))


def random_faces(count: int, resolution: int = 16, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).random((count, 3, resolution, resolution)) * 255).astype(np.uint8)


@pytest.fixture(scope="session")
def tiny_generator():
    """A 16×16 latent generator with an 8-component basis that has a brightness direction,
    and randomly initialised denoisers (latent and face). Shared: tests must not change it."""
    faces = random_faces(64)
    faces[:32] //= 2  # a brightness direction for the basis to capture
    return make_generator(faces)


# --- tiny models -----------------------------------------------------------------------


class BrightnessModel(nn.Module):
    """Logit of every attribute = 20 · (mean brightness − 0.5): a known, smooth decision on
    which all 40 attributes move together. ``embed`` gives the per-channel means; like a
    classifier, it states its input resolution in ``config``."""

    def __init__(self, resolution: int = 16) -> None:
        super().__init__()
        self.config = SimpleNamespace(resolution=resolution)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return (20 * (images.mean(dim=(1, 2, 3)) - 0.5)).unsqueeze(1).expand(-1, 40)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        return images.mean(dim=(2, 3))


class NegateOne(nn.Module):
    """The teacher with one attribute's logit negated: a student that disagrees on exactly it."""

    def __init__(self, teacher: nn.Module, index: int) -> None:
        super().__init__()
        self.teacher, self.index = teacher, index

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        logits = self.teacher(images).clone()
        logits[:, self.index] = -logits[:, self.index]
        return logits


def tiny_classifier(widths: tuple[int, ...] = (4, 8), resolution: int = 16, seed: int = 0, gain: float = 1.0):
    """A random tiny classifier in eval mode. ``gain`` > 1 narrows the input normalisation, which
    scales every logit by about ``gain`` (the network is nearly homogeneous), so that small
    edits can flip its decisions."""
    from recourse.classifier import AttributeClassifier, ClassifierConfig

    torch.manual_seed(seed)
    config = ClassifierConfig(widths=widths, resolution=resolution, dropout=0.0, std=(0.25 / gain,) * 3)
    return AttributeClassifier(config).eval()


def brightness_images(count: int, seed: int = 0):
    """``LabelledImages`` of 16×16 noise at varied brightness, labelled 1 on the default
    attributes (Smiling, Young, Male, Eyeglasses) when the image is brighter than mid-grey;
    the other 36 attributes are always 0."""
    from recourse.data import DEFAULT_ATTRIBUTES, LabelledImages, attribute_index

    rng = np.random.default_rng(seed)
    scale = rng.random((count, 1, 1, 1)) * 1.5 + 0.1
    images = (np.clip(rng.random((count, 3, 16, 16)) * scale, 0, 1) * 255).astype(np.uint8)
    labels = np.zeros((count, 40), np.uint8)
    for attribute in DEFAULT_ATTRIBUTES:
        labels[:, attribute_index(attribute)] = images.mean(axis=(1, 2, 3)) > 127.5
    return LabelledImages(images, labels, tuple(f"{i}.jpg" for i in range(count)))


@pytest.fixture(scope="session")
def bright_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny classifier trained (by the project's own training) to decide the default
    attributes by brightness: a real checkpoint whose decisions the tiny generator's edits
    flip (its basis has a brightness direction), unlike a random one's."""
    from recourse.classifier import ClassifierConfig
    from recourse.training import TrainConfig, train_classifier

    folder = tmp_path_factory.mktemp("bright")
    data = brightness_images(256)
    train_classifier(data, brightness_images(64, seed=1), folder / "classifier",
                     ClassifierConfig(widths=(4, 8), resolution=16, dropout=0.0),
                     TrainConfig(epochs=4, batch_size=32, learning_rate=2e-2, weight_decay=0.0, max_shift=1),
                     folder / "state.pt")
    return folder / "classifier"


# --- a project home (RECOURSE_HOME) with tiny committed models ------------------------------


def clear_loaded_models() -> None:
    """The committed models (and the stops read from the committed files) are loaded once per
    process; a test that swaps the home reloads, and leaves nothing of its home cached."""
    from recourse import models
    from recourse.audit import stops
    from recourse.generation import default_generator

    models.clear_loaded()
    default_generator.cache_clear()
    stops.committed_stops.cache_clear()


@pytest.fixture
def project_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ``RECOURSE_HOME``: the library, the CLI and the app look for checkpoints here."""
    home = tmp_path / "home"
    (home / "checkpoints").mkdir(parents=True)
    monkeypatch.setenv("RECOURSE_HOME", str(home))
    clear_loaded_models()
    yield home
    clear_loaded_models()


def build_home(home: Path, teacher: nn.Module, generator, methods: tuple[str, ...] = ("ptq-int8",)) -> None:
    """Save ``teacher``, variants of it and ``generator`` where ``home``'s library looks."""
    from recourse.checkpoints import save_classifier
    from recourse.compression import config_classes, quantize, save_variant

    checkpoints = home / "checkpoints"
    save_classifier(teacher, checkpoints / "classifier", {"training_seconds": 100.0})
    calibration = torch.rand(8, 3, teacher.config.resolution, teacher.config.resolution,
                             generator=torch.Generator().manual_seed(0))
    for method in methods:
        variant = quantize(teacher, config_classes()[method](calibration_images=8), calibration)
        save_variant(variant, teacher, checkpoints / "variants" / method, {"command": "python -m recourse quantize"})
    generator.save_pretrained(checkpoints / "generator")


@contextlib.contextmanager
def _local_mode():
    """The environment of ``python app.py`` run locally: no public or Space mode left over by a
    test module that started its own public app."""
    saved = {name: os.environ.pop(name) for name in ("RECOURSE_PUBLIC", "SPACE_ID") if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


@pytest.fixture(scope="session")
def local_app(tmp_path_factory):
    """The URL of one real ``python app.py`` in local mode, its models loaded, shared by every
    test of the suite that drives the local app (starting it takes most of a minute here)."""
    from scripts.figures.app_screenshot import start_app

    log = tmp_path_factory.mktemp("local-app") / "app.log"
    try:
        with _local_mode(), start_app(log=log) as url:
            yield url
    except (RuntimeError, TimeoutError) as error:
        raise RuntimeError(f"{error}\n{log.read_text()[-3000:]}") from None


@pytest.fixture(scope="session")
def public_app(tmp_path_factory):
    """``(url, process)`` of one real ``RECOURSE_PUBLIC=1 python app.py``, its models loaded and its
    own temporary folder, shared by the modules that call it as a stranger would (starting it
    takes most of a minute here). Its variables are the process's own: this one's stay as they are."""
    from scripts.figures.app_screenshot import app_process

    folder = tmp_path_factory.mktemp("public-app")
    try:
        with _local_mode(), app_process(timeout=600, log=folder / "app.log",
                                        env={"RECOURSE_PUBLIC": "1", "GRADIO_TEMP_DIR": str(folder / "gradio")}
                                        ) as (url, process):
            yield url, process
    except (RuntimeError, TimeoutError) as error:
        raise RuntimeError(f"{error}\n{(folder / 'app.log').read_text()[-3000:]}") from None


@pytest.fixture(scope="module")
def browser_and_url(local_app):
    """``(browser, url)``: headless Chromium and the shared local app. Chromium is started once
    per module: Playwright's sync API runs an event loop of its own while it is open, which
    a later module's ``asyncio.run`` or second Playwright could not start beside."""
    from playwright.sync_api import sync_playwright

    from scripts.figures.app_screenshot import CHROMIUM_FLAGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield browser, local_app
        browser.close()
