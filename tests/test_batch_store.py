"""A resumed evaluation: the batches already made are read back, the missing ones made, and
the report is the one an uninterrupted run gives; a folder of another run is refused."""

import numpy as np
import pytest
import torch

from recourse.generation import CounterfactualConfig
from recourse.generation.batch_store import BatchStore
from recourse.generation.quality import evaluate_counterfactual_quality
from tests.conftest import BrightnessModel, random_faces

FAST = CounterfactualConfig(steps=10, noise_level=0.5, finish_steps=5)
RUN = {"settings": {"margin": 6.0}, "split": "val", "n": 8}


def faces() -> np.ndarray:
    images = random_faces(8)
    images[:4] //= 3
    return images


def evaluate(generator, store=None):
    return evaluate_counterfactual_quality(faces(), faces(), BrightnessModel(), BrightnessModel(), generator,
                                           ("Smiling",), FAST, batch_size=3, timing_samples=1, store=store)


@pytest.mark.slow
def test_a_resumed_run_reports_what_an_uninterrupted_one_does(tiny_generator, tmp_path):
    whole = evaluate(tiny_generator)
    first = BatchStore(tmp_path, RUN)
    evaluate(tiny_generator, first)
    assert first.made() == 3  # 8 faces in batches of 3
    (tmp_path / "Smiling-000003-000006.npy").unlink()  # as if the run had been killed there
    (tmp_path / "Smiling-000006-000008.npy").write_bytes(b"cut short")
    resumed = evaluate(tiny_generator, BatchStore(tmp_path, RUN))
    assert resumed.results[0].flip_rate == whole.results[0].flip_rate
    assert resumed.results[0].proximity == whole.results[0].proximity
    assert resumed.results[0].oracle_fd == whole.results[0].oracle_fd


def test_stored_batches_are_read_back_not_remade(tiny_generator, tmp_path):
    store = BatchStore(tmp_path, RUN)
    store.put("Smiling", 0, 8, torch.from_numpy(faces()).float() / 255)  # the unchanged faces
    report = evaluate_counterfactual_quality(faces(), faces(), BrightnessModel(), BrightnessModel(), tiny_generator,
                                             ("Smiling",), FAST, batch_size=8, timing_samples=1, store=store)
    assert report.results[0].flip_rate == 0 and report.results[0].proximity == 0


def test_a_folder_of_another_run_is_refused(tmp_path):
    BatchStore(tmp_path, RUN)
    with pytest.raises(ValueError, match="another run.*settings"):
        BatchStore(tmp_path, {**RUN, "settings": {"margin": 2.0}})
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a readable run record"):
        BatchStore(tmp_path, RUN)
