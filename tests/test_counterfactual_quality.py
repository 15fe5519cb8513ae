import numpy as np
import torch

from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.generation import CounterfactualConfig, LatentDenoiser, LatentFaceGenerator, default_scheduler, fit_pca_autoencoder
from recourse.generation.quality import evaluate_counterfactual_quality


def test_quality_report_on_a_tiny_setup():
    torch.manual_seed(0)
    faces = (np.random.default_rng(0).random((40, 3, 16, 16)) * 255).astype(np.uint8)
    generator = LatentFaceGenerator(fit_pca_autoencoder(faces, 8), LatentDenoiser(8, 16, 1), default_scheduler())
    classifier = AttributeClassifier(ClassifierConfig(widths=(4, 8))).eval()
    oracle = AttributeClassifier(ClassifierConfig(widths=(6,), activation="silu")).eval()
    calls = []
    report = evaluate_counterfactual_quality(
        faces[:6], faces, classifier, oracle, generator, ("Smiling", "Male"),
        CounterfactualConfig(steps=5, finish_steps=2), batch_size=4, timing_samples=2,
        progress=lambda attribute, done, total: calls.append((attribute, done, total)))
    assert [r.attribute for r in report.results] == ["Smiling", "Male"]
    assert calls == [("Smiling", 4, 6), ("Smiling", 6, 6), ("Male", 4, 6), ("Male", 6, 6)]
    for result in report.results:
        assert result.n == 6
        assert 0 <= result.flip_rate <= 100 and 0 <= result.oracle_flip_rate <= 100
        assert 0 <= result.mnac <= 39 and result.proximity >= 0 and result.oracle_fd >= 0
        assert result.median_seconds > 0
    assert report.to_dict()["n_reference_images"] == 40
