"""Counterfactual quality against known answers: a guiding model whose 40 logits move together
judged by itself (so the oracle agrees with it on every decision), and a generator that
changes nothing (so the counterfactuals are the reference set itself)."""

import json

import numpy as np
import pytest
import torch

from recourse.generation import CounterfactualConfig
from recourse.generation.quality import evaluate_counterfactual_quality, real_flip_rate
from tests.conftest import BrightnessModel, random_faces, still_generator

# the walk: the still generator's edits are zero, and the tiny generator's flip brightness decisions
FAST = CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, finish_steps=5)


def mixed_faces() -> np.ndarray:
    """Eight faces, four dark and four bright: both targets occur."""
    faces = random_faces(8)
    faces[:4] //= 3  # mean brightness ≈ 0.17: the model decides 0, so the target is 1
    faces[4:] = 255 - faces[4:] // 3  # ≈ 0.83: decided 1, target 0
    return faces


def test_a_self_judged_model_whose_logits_move_together(tiny_generator):
    faces = mixed_faces()
    calls = []
    report = evaluate_counterfactual_quality(
        faces, faces, BrightnessModel(), BrightnessModel(), tiny_generator, ("Smiling", "Male"), FAST,
        batch_size=5, timing_samples=2, progress=lambda attribute, done, total: calls.append((attribute, done, total)))
    assert [r.attribute for r in report.results] == ["Smiling", "Male"]
    assert calls == [("Smiling", 5, 8), ("Smiling", 8, 8), ("Male", 5, 8), ("Male", 8, 8)]
    for result in report.results:
        assert result.n == 8 and result.to_target_1 == 4
        flipped = round(result.flip_rate * 8 / 100)
        assert result.flip_rate == pytest.approx(100 * flipped / 8) and flipped > 0
        # the oracle is the guiding model: it accepts exactly what the guiding model accepts
        assert result.oracle_flip_rate == result.flip_rate
        # every flip changes the other 39 decisions with it; a failed flip changes none
        assert result.mnac == pytest.approx(39 * flipped / 8, abs=1e-3)
        assert (result.oracle_flip_rate_to_1 + result.oracle_flip_rate_to_0) / 2 == pytest.approx(result.flip_rate)
        assert result.proximity > 0 and result.oracle_fd > 0 and result.median_seconds > 0
    assert report.to_dict()["n_reference_images"] == 8


def test_unchanged_counterfactuals_are_the_reference_set():
    faces = mixed_faces()
    report = evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(), still_generator(16),
                                             ("Smiling",), FAST, timing_samples=1)
    result = report.results[0]
    assert result.flip_rate == 0 and result.oracle_flip_rate == 0 and result.mnac == 0
    assert result.proximity == 0
    assert result.oracle_fd == pytest.approx(0.0, abs=1e-3)  # FD of a set against itself
    brighter = np.minimum(faces.astype(np.int32) + 60, 255).astype(np.uint8)
    shifted = evaluate_counterfactual_quality(faces, brighter, BrightnessModel(), BrightnessModel(),
                                              still_generator(16), ("Smiling",), FAST, timing_samples=1)
    # against another set the distance is the shift of the mean features (plus their spread)
    assert shifted.results[0].oracle_fd > 0.1


def test_an_empty_target_group_is_reported_as_missing_not_nan(tiny_generator):
    dark = random_faces(4) // 3  # the model decides 0 on all of them: every task asks for 1
    report = evaluate_counterfactual_quality(dark, dark, BrightnessModel(), BrightnessModel(), tiny_generator,
                                             ("Young",), FAST, timing_samples=1)
    result = report.results[0]
    assert result.to_target_1 == 4
    assert result.oracle_flip_rate_to_0 is None
    assert result.oracle_flip_rate_to_1 == result.oracle_flip_rate
    record = json.loads(json.dumps(report.to_dict(), allow_nan=False))  # strict JSON: no NaN anywhere
    assert record["attributes"][0]["oracle_flip_rate_to_0"] is None


@pytest.mark.slow
def test_evaluate_counterfactuals_command_prints_a_missing_group(hq_folder, tmp_path, capsys):
    """The command line's table and JSON, with one attribute whose tasks all go one way."""
    from recourse.checkpoints import save_classifier
    from recourse.cli import main
    from tests.conftest import make_generator, tiny_classifier

    root, _ = hq_folder
    classifier = tiny_classifier(seed=0, gain=20)  # decisions that a small edit flips: few finishing steps
    save_classifier(classifier, tmp_path / "classifier", {})
    save_classifier(tiny_classifier(widths=(6,), seed=1), tmp_path / "oracle", {})
    make_generator(random_faces(64)).save_pretrained(tmp_path / "generator")
    from recourse.data import ATTRIBUTES, load_split, to_float_images

    test = to_float_images(load_split(root, "test", 16).images)
    with torch.no_grad():
        decided = (classifier(test) >= 0).long()
    one_way = next(a for i, a in enumerate(ATTRIBUTES) if len(set(decided[:, i].tolist())) == 1)
    out = tmp_path / "quality.json"
    assert main(["evaluate-counterfactuals", "--data", str(root), "--split", "test", "--n", "3", "--no-cache",
                 "--attributes", one_way, "--classifier", str(tmp_path / "classifier"),
                 "--oracle", str(tmp_path / "oracle"), "--generator", str(tmp_path / "generator"),
                 "--steps", "4", "--margin", "0", "--strong-judge", str(tmp_path / "none"), "--json", str(out)]) == 0
    row = json.loads(out.read_text(), parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))
    result = row["attributes"][0]
    assert result["attribute"] == one_way and result["n"] == 3
    empty_group = "oracle_flip_rate_to_1" if result["to_target_1"] == 0 else "oracle_flip_rate_to_0"
    assert result[empty_group] is None  # no task with that target: null, not NaN
    assert result["fva"] is not None and result["strong_judge_flip_rate"] is None  # no stronger judge given
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(one_way))
    assert "—" in line and "nan" not in line.lower()


class AlwaysOn(torch.nn.Module):
    """A judge that decides every attribute 1 whatever it sees."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.ones(len(images), 40)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        return images.mean(dim=(2, 3))


def test_judge_flip_rate_counts_only_tasks_the_judge_agreed_on(tiny_generator):
    faces = mixed_faces()  # four dark (decided 0, target 1), four bright (decided 1, target 0)
    report = evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(), tiny_generator,
                                             ("Smiling",), FAST, timing_samples=1, judge=AlwaysOn())
    result = report.results[0]
    # the judge agreed before only on the bright faces (both said 1); it never says 0
    assert result.judge_agreed == 4 and result.judge_flip_rate == 0.0
    # judged by the guiding model itself, the judge FR is the FR of the tasks
    itself = evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(), tiny_generator,
                                             ("Smiling",), FAST, timing_samples=1, judge=BrightnessModel()).results[0]
    assert itself.judge_agreed == 8 and itself.judge_flip_rate == itself.flip_rate
    assert evaluate_counterfactual_quality(faces, faces, BrightnessModel(), BrightnessModel(), tiny_generator,
                                           ("Smiling",), FAST, timing_samples=1).results[0].judge_flip_rate is None


def test_real_flip_rate_counts_only_tasks_the_model_had_not_decided():
    before, after, targets = torch.tensor([0, 0, 1, 0]), torch.tensor([1, 0, 1, 1]), torch.tensor([1, 1, 1, 1])
    assert real_flip_rate(before, after, targets) == pytest.approx(66.67)
    assert real_flip_rate(before, after, targets, group=torch.tensor([True, True, False, False])) == 50.0
    assert real_flip_rate(targets, targets, targets) is None
