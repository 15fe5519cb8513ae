"""Generation: the face generator (models, loading), guided counterfactuals, training and
quality evaluation — the only package that imports ``diffusers``.

    from recourse.generation import generate, CounterfactualConfig, default_generator
"""

from recourse.generation.generators import (
    FaceGenerator, LatentFaceGenerator, PixelFaceGenerator, default_generator, load_generator,
)
from recourse.generation.guidance import STOP_SEARCHES, CounterfactualConfig, CounterfactualResult
from recourse.generation.methods import METHODS, generate
from recourse.generation.models import LatentDenoiser, PCAAutoencoder, default_scheduler, fit_pca_autoencoder

__all__ = [
    "METHODS", "STOP_SEARCHES", "CounterfactualConfig", "CounterfactualResult", "FaceGenerator", "LatentDenoiser", "LatentFaceGenerator",
    "PCAAutoencoder", "PixelFaceGenerator", "default_generator", "default_scheduler", "fit_pca_autoencoder",
    "generate", "load_generator",
]
