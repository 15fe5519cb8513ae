"""Realism instruments on known answers: FD and KID of a set against itself, KID's lack of bias,
the real-versus-real floor, target-matched sets, AUC, and the discriminator."""

import itertools

import numpy as np
import pytest
import torch

from recourse.instruments.realism import (
    edit_discriminator, kernel_distance, matched_sets, real_floor, realism_with_floor, roc_auc,
)
from recourse.metrics import frechet_distance


def gaussian(n: int, d: int = 16, seed: int = 0, shift: float = 0.0) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) + shift


def brute_force_kid(a: torch.Tensor, b: torch.Tensor) -> float:
    """The unbiased MMD² written out pair by pair, as in the KID paper."""
    d = a.shape[1]

    def k(x, y):
        return float((x @ y / d + 1) ** 3)

    n, m = len(a), len(b)
    within_a = sum(k(a[i], a[j]) for i, j in itertools.permutations(range(n), 2)) / (n * (n - 1))
    within_b = sum(k(b[i], b[j]) for i, j in itertools.permutations(range(m), 2)) / (m * (m - 1))
    cross = sum(k(a[i], b[j]) for i in range(n) for j in range(m)) / (n * m)
    return within_a + within_b - 2 * cross


def test_kid_matches_the_pairwise_definition():
    a, b = gaussian(5, 4, seed=1), gaussian(7, 4, seed=2, shift=0.5)
    assert kernel_distance(a, b) == pytest.approx(brute_force_kid(a, b), rel=1e-10)
    assert kernel_distance(a, b) == pytest.approx(kernel_distance(b, a), rel=1e-10)


def test_fd_and_kid_of_a_set_against_itself_are_about_zero():
    a = gaussian(400)
    far = gaussian(400, seed=1, shift=1.0)
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-8)
    # KID's cross term keeps each point's kernel with itself, so against itself it is slightly
    # negative, by O(1/N): tiny beside a real shift
    assert abs(kernel_distance(a, a)) < 0.02 * kernel_distance(a, far)
    assert kernel_distance(a, far) > 0.5


def test_kid_is_unbiased_at_small_n_where_fd_is_not():
    # Many pairs of 10-point sets from one distribution: KID averages to 0, FD stays well above it.
    kids, fds = [], []
    for seed in range(200):
        a, b = gaussian(10, 4, seed=2 * seed), gaussian(10, 4, seed=2 * seed + 1)
        kids.append(kernel_distance(a, b))
        fds.append(frechet_distance(a, b))
    assert abs(np.mean(kids)) < 3 * np.std(kids) / np.sqrt(len(kids))
    assert np.mean(fds) > 1.0


def test_kid_refuses_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        kernel_distance(gaussian(1), gaussian(5))
    with pytest.raises(ValueError, match="feature sizes differ"):
        kernel_distance(gaussian(5, 4), gaussian(5, 8))
    with pytest.raises(ValueError, match=r"\(N, D\)"):
        kernel_distance(torch.zeros(5), gaussian(5))


def test_the_real_floor_uses_two_disjoint_sets():
    # Every feature is its own index: the two sets' means differ unless they are disjoint halves
    # of a permutation; a set compared with itself would give FD 0.
    real = gaussian(300)
    floor = real_floor(real, 150, seed=3)
    assert floor.n == 150 and floor.fd > 0.1 and abs(floor.kid) < 0.05
    assert floor == real_floor(real, 150, seed=3)  # seeded
    with pytest.raises(ValueError, match="at least 302"):
        real_floor(real, 151)


def test_matched_sets_have_the_targets_proportions_and_do_not_overlap():
    targets = np.array([1] * 30 + [0] * 10)
    real_attribute = np.array([1] * 40 + [0] * 100)  # only 40 real faces have the attribute
    edits, (first, second) = matched_sets(targets, real_attribute, 2, np.random.default_rng(0))
    # target 1: min(30 edits, 40 // 2) = 20 per set; target 0: min(10, 50) = 10
    assert len(edits) == len(first) == len(second) == 30
    assert (targets[edits] == 1).sum() == 20 and (real_attribute[first] == 1).sum() == 20
    assert (real_attribute[second] == 1).sum() == 20
    assert not set(first) & set(second) and len(set(edits)) == 30


def test_edits_from_the_real_distribution_sit_on_the_floor_and_shifted_ones_above_it():
    real = gaussian(1200)
    real_attribute = np.random.default_rng(0).integers(0, 2, 1200)
    targets = np.random.default_rng(1).integers(0, 2, 200)
    alike = realism_with_floor(gaussian(200, seed=5), targets, real, real_attribute)
    assert alike.n == 200 and alike.draws == 5
    assert alike.fd == pytest.approx(alike.floor_fd, rel=0.3)
    shifted = realism_with_floor(gaussian(200, seed=5, shift=0.5), targets, real, real_attribute)
    assert shifted.fd > 2 * shifted.floor_fd and shifted.kid > 10 * abs(shifted.floor_kid)
    with pytest.raises(ValueError, match="one target per edited face"):
        realism_with_floor(gaussian(200), targets[:10], real, real_attribute)


def test_roc_auc_on_hand_made_scores():
    assert roc_auc([3, 4], [1, 2]) == 1.0
    assert roc_auc([1, 2], [3, 4]) == 0.0
    assert roc_auc([1, 1], [1, 1]) == 0.5  # ties count one half
    # pairs (pos, neg): (2,1) win, (2,3) loss, (4,1) win, (4,3) win → 3/4
    assert roc_auc([2, 4], [1, 3]) == 0.75
    with pytest.raises(ValueError, match="each class"):
        roc_auc([], [1])


def test_the_discriminator_tells_shifted_edits_apart_and_not_real_ones():
    real_train, real_test = gaussian(300, seed=0), gaussian(300, seed=1)
    shifted = edit_discriminator(real_train, gaussian(300, seed=2, shift=0.3),
                                 real_test, gaussian(300, seed=3, shift=0.3))
    # the best possible AUC between N(0, I) and N(μ, I) is Φ(‖μ‖ / √2): ‖μ‖ = 0.3 · √16 = 1.2 → 0.80
    assert shifted.auc == pytest.approx(0.80, abs=0.05) and (shifted.n_train, shifted.n_test) == (600, 600)
    alike = edit_discriminator(real_train, gaussian(300, seed=2), real_test, gaussian(300, seed=3))
    assert abs(alike.auc - 0.5) < 0.08
    with pytest.raises(ValueError, match="same feature size"):
        edit_discriminator(real_train, gaussian(5, 8), real_test, real_test)


def test_the_discriminator_script_matches_each_edit_with_a_real_face_at_its_target():
    from recourse.data import attribute_index
    from scripts.measurements.edit_discriminator import matched_real

    rng = np.random.default_rng(0)
    real_images = rng.integers(0, 256, (20, 3, 4, 4), dtype=np.uint8)
    real_labels = np.zeros((20, 40), np.uint8)
    smiling, male = attribute_index("Smiling"), attribute_index("Male")
    real_labels[:5, smiling] = 1  # faces 0–4 smile; face 0 is also an edit's original
    real_labels[10:, male] = 1
    pairs = {"originals": real_images[[0, 11, 12]], "attributes": np.array(["Smiling"] * 6 + ["Male"]),
             "targets": np.array([1] * 6 + [0])}
    pairs["originals"] = np.concatenate([pairs["originals"], real_images[[13] * 4]])
    kept, reals = matched_real(pairs, real_images, real_labels, np.random.default_rng(1))
    # four smiling faces are free (face 0 is an original): four of the six smile edits are kept
    assert sorted(reals[pairs["attributes"][kept] == "Smiling"].tolist()) == [1, 2, 3, 4]
    assert len(set(reals.tolist())) == len(reals) == 5
    assert real_labels[reals[pairs["attributes"][kept] == "Male"], male].tolist() == [0]
