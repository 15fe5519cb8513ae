"""Realism with a floor: how far edited faces are from real faces, beside how far real faces are
from real faces.

- FD: the Fréchet distance between Gaussians fitted to oracle features
  (``recourse.metrics.frechet_distance``; never called FID: the features are our oracle's).
- KID: the kernel distance of Bińkowski et al. (ICLR 2018), the unbiased estimate of MMD²
  with the polynomial kernel ``k(x, y) = (x·y / D + 1)³``. Unlike FD it has no bias at small
  N, so sets of a few hundred faces can be compared.
- The floor: the same figure for two disjoint sets of real faces of the same sizes. FD is
  biased upwards at small N (and KID is noisy), so an edited set is only "far from real"
  when it is well above what real faces give at the same sizes.
- A real-versus-edited discriminator: logistic regression on oracle features, trained on one
  split's edits and tested on another's; its AUC says how easy the edits are to tell from real
  faces by those features (0.5 = impossible).

Edited faces are compared with real faces that *have the target attribute* (by their labels),
in the same proportions as the edits' targets: compared with their own originals, a perfect
"add a smile" edit would be far from real simply for smiling.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from recourse.metrics import frechet_distance


def _features(features: torch.Tensor | np.ndarray, name: str) -> torch.Tensor:
    features = torch.as_tensor(features).double()
    if features.ndim != 2:
        raise ValueError(f"{name}: expected features (N, D), got shape {tuple(features.shape)}")
    return features


def kernel_distance(features_a: torch.Tensor | np.ndarray, features_b: torch.Tensor | np.ndarray) -> float:
    """KID: unbiased MMD² between feature sets ``(N, D)`` and ``(M, D)``, polynomial kernel
    ``(x·y / D + 1)³``. About 0 (it can be slightly negative) when both come from one distribution."""
    a, b = _features(features_a, "features_a"), _features(features_b, "features_b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"feature sizes differ: {a.shape[1]} and {b.shape[1]}")
    n, m = len(a), len(b)
    if n < 2 or m < 2:
        raise ValueError(f"KID needs at least 2 features per set, got {n} and {m}")
    dimension = a.shape[1]
    k_aa = (a @ a.T / dimension + 1) ** 3
    k_bb = (b @ b.T / dimension + 1) ** 3
    k_ab = (a @ b.T / dimension + 1) ** 3
    # Unbiased: the within-set sums leave out each point's kernel with itself.
    within_a = (k_aa.sum() - k_aa.diagonal().sum()) / (n * (n - 1))
    within_b = (k_bb.sum() - k_bb.diagonal().sum()) / (m * (m - 1))
    return float(within_a + within_b - 2 * k_ab.mean())


@dataclass(frozen=True)
class RealFloor:
    """FD and KID between two disjoint random sets of real faces of ``n`` each."""

    n: int
    fd: float
    kid: float

    def to_dict(self) -> dict:
        return asdict(self)


def real_floor(real_features: torch.Tensor | np.ndarray, n: int, seed: int = 0) -> RealFloor:
    """FD and KID of two disjoint random sets of ``n`` real faces: what real-versus-real gives at this size."""
    real = _features(real_features, "real_features")
    if n < 2 or 2 * n > len(real):
        raise ValueError(f"two disjoint sets of {n} need at least {2 * n} real faces (and n ≥ 2), got {len(real)}")
    order = torch.as_tensor(np.random.default_rng(seed).permutation(len(real)))
    first, second = real[order[:n]], real[order[n:2 * n]]
    return RealFloor(n, frechet_distance(first, second), kernel_distance(first, second))


def matched_sets(targets: np.ndarray, real_attribute: np.ndarray, copies: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, list[np.ndarray]]:
    """Indices of edits and of ``copies`` disjoint sets of real faces, with the same number of each
    target value: for target t, ``k_t = min(#edits with t, #real faces with t // copies)`` edits
    (drawn at random) and ``k_t`` real faces whose attribute is t in every copy.

    ``targets`` ``(N,)`` is each edit's target decision, ``real_attribute`` ``(M,)`` each real face's
    label for the attribute (0/1). Rare attributes cap the sizes: all sets stay the same size.
    """
    targets, real_attribute = np.asarray(targets).astype(int), np.asarray(real_attribute).astype(int)
    edits, reals = [], [[] for _ in range(copies)]
    for value in (0, 1):
        edit_pool = np.flatnonzero(targets == value)
        real_pool = rng.permutation(np.flatnonzero(real_attribute == value))
        k = min(len(edit_pool), len(real_pool) // copies)
        edits.append(rng.choice(edit_pool, k, replace=False))
        for copy in range(copies):
            reals[copy].append(real_pool[copy * k:(copy + 1) * k])
    return np.concatenate(edits), [np.concatenate(parts) for parts in reals]


@dataclass(frozen=True)
class RealismResult:
    """Edited versus real faces with the target attribute, beside two disjoint real sets of the same
    sizes and target proportions (means over ``draws`` random draws of the sets)."""

    n: int  # faces in each compared set
    fd: float  # edited vs real reference
    kid: float
    floor_fd: float  # real vs the real reference
    floor_kid: float
    draws: int

    def to_dict(self) -> dict:
        return asdict(self)


def realism_with_floor(edited_features: torch.Tensor | np.ndarray, targets: np.ndarray,
                       real_features: torch.Tensor | np.ndarray, real_attribute: np.ndarray,
                       draws: int = 5, seed: int = 0) -> RealismResult:
    """FD and KID of edited faces against real faces that have their target attribute, and the floor.

    Each draw takes a reference set R and a second real set F (disjoint, both matched to the edits'
    targets, :func:`matched_sets`) and as many edits E; it reports FD/KID(E, R) and FD/KID(F, R).
    The real faces must not include the edits' originals (an edit that changed little would be
    compared with itself).
    """
    edited, real = _features(edited_features, "edited_features"), _features(real_features, "real_features")
    if len(targets) != len(edited) or len(real_attribute) != len(real):
        raise ValueError("one target per edited face and one attribute label per real face are needed")
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(draws):
        edit_index, (reference_index, floor_index) = matched_sets(targets, real_attribute, 2, rng)
        if len(edit_index) < 2:
            raise ValueError("fewer than 2 real faces per set have the target attribute: no comparison possible")
        e, r, f = (edited[torch.as_tensor(edit_index)], real[torch.as_tensor(reference_index)],
                   real[torch.as_tensor(floor_index)])
        rows.append((frechet_distance(e, r), kernel_distance(e, r), frechet_distance(f, r), kernel_distance(f, r)))
    fd, kid, floor_fd, floor_kid = np.mean(rows, axis=0)
    return RealismResult(len(edit_index), round(float(fd), 3), round(float(kid), 5),
                         round(float(floor_fd), 3), round(float(floor_kid), 5), draws)


def roc_auc(positive_scores: np.ndarray, negative_scores: np.ndarray) -> float:
    """Area under the ROC curve: the chance that a random positive scores above a random negative
    (ties count one half), from the Mann–Whitney rank sum."""
    positive, negative = np.asarray(positive_scores, np.float64), np.asarray(negative_scores, np.float64)
    if positive.size == 0 or negative.size == 0:
        raise ValueError("AUC needs at least one score of each class")
    scores = np.concatenate([positive, negative])
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    first_rank = np.cumsum(counts) - counts + 1
    ranks = (first_rank + (counts - 1) / 2)[inverse]  # tied scores share their mean rank
    return float((ranks[:positive.size].sum() - positive.size * (positive.size + 1) / 2)
                 / (positive.size * negative.size))


@dataclass(frozen=True)
class DiscriminatorResult:
    """A real-versus-edited logistic regression: AUC on held-out faces (0.5 = cannot tell)."""

    auc: float  # on the test faces
    train_auc: float  # on its own training faces (far above ``auc`` = it memorised)
    n_train: int  # real + edited
    n_test: int

    def to_dict(self) -> dict:
        return asdict(self)


def edit_discriminator(train_real: torch.Tensor | np.ndarray, train_edited: torch.Tensor | np.ndarray,
                       test_real: torch.Tensor | np.ndarray, test_edited: torch.Tensor | np.ndarray,
                       weight_decay: float = 1e-2, iterations: int = 200) -> DiscriminatorResult:
    """Logistic regression (L2 ``weight_decay`` on the weights, full-batch L-BFGS) on standardised
    features ``(N, D)``, edited = 1; trained on the train sets, AUC on the test sets.

    Pass real faces matched to the edits' targets (:func:`matched_sets`): otherwise the model can
    separate the classes by the attribute itself.
    """
    sets = [_features(x, name) for x, name in ((train_real, "train_real"), (train_edited, "train_edited"),
                                                (test_real, "test_real"), (test_edited, "test_edited"))]
    if len({x.shape[1] for x in sets}) != 1:
        raise ValueError("all four feature sets must have the same feature size")
    if min(len(x) for x in sets) == 0:
        raise ValueError("every set needs at least one face")
    train = torch.cat(sets[:2])
    labels = torch.cat([torch.zeros(len(sets[0])), torch.ones(len(sets[1]))]).double()
    mean, std = train.mean(dim=0), train.std(dim=0).clamp_min(1e-8)
    weights = torch.zeros(train.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros((), dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.LBFGS([weights, bias], max_iter=iterations, line_search_fn="strong_wolfe")
    standardised = (train - mean) / std
    # Balanced: each class weighs half, so a size imbalance does not just shift the bias.
    sample_weight = torch.where(labels == 1, 0.5 / labels.sum(), 0.5 / (1 - labels).sum())

    def loss() -> torch.Tensor:
        optimiser.zero_grad()
        logits = standardised @ weights + bias
        value = (sample_weight * torch.nn.functional.binary_cross_entropy_with_logits(
            logits, labels, reduction="none")).sum() + weight_decay * weights.square().sum()
        value.backward()
        return value

    optimiser.step(loss)
    with torch.no_grad():
        def scores(x: torch.Tensor) -> np.ndarray:
            return (((x - mean) / std) @ weights + bias).numpy()
        return DiscriminatorResult(
            auc=round(roc_auc(scores(sets[3]), scores(sets[2])), 4),
            train_auc=round(roc_auc(scores(sets[1]), scores(sets[0])), 4),
            n_train=len(train), n_test=len(sets[2]) + len(sets[3]))
