"""recourse/audit/stop_readings.py: a stop read on every face, with the share of edits
that reach it (where an edit ends before the stop's margin, its stop is the whole edit)."""

import torch
from torch import nn

from recourse.audit import stop_readings
from recourse.audit.stop_readings import Originals, StopFaces, read_stop, reading_from_faces, stop_faces
from recourse.data import attribute_index

SMILING = attribute_index("Smiling")


class Brightness(nn.Module):
    """Smiling's logit is 20 × (mean brightness − 0.5); every other logit 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(len(x), 40)
        logits[:, SMILING] = 20 * (x.mean(dim=(1, 2, 3)) - 0.5)
        return logits


def test_the_share_that_reaches_the_stop_and_the_flip_rate(monkeypatch):
    monkeypatch.setattr(stop_readings, "identity_result", lambda before, after: type("Kept", (), {"fva": 100.0})())
    x = torch.full((2, 3, 4, 4), 0.4)  # logit −2: both target Smiling
    edits = torch.stack([torch.full((3, 4, 4), 1.0), torch.full((3, 4, 4), 0.7)])  # end at logit +10 and +4
    targets = torch.zeros(2, 40, dtype=torch.long)
    targets[:, SMILING] = 1
    originals = Originals(classifier=Brightness(), oracle=Brightness(), faces=x, x=x, rest=None, targets=targets,
                          oracle_before=torch.zeros(2, 40, dtype=torch.long), judged=None, describe=lambda images: images,
                          descriptors=x, calibrated={})
    visible = read_stop(originals, "Smiling", edits, 8.0)
    assert visible.reached_rate == 50.0 and visible.flip_rate == 100.0
    assert torch.equal(visible.at_stop[1], edits[1])  # short of the stop: the whole edit
    assert read_stop(originals, "Smiling", edits, 2.0).reached_rate == 100.0


def _described(images: torch.Tensor):
    """A stand-in for dlib: each face's descriptor is its mean colour, found where it is not black."""
    import numpy as np

    from recourse.instruments.identity import Descriptors

    vectors = images.mean(dim=(2, 3)).double().numpy()
    return Descriptors(np.pad(vectors, ((0, 0), (0, 125))), vectors.sum(axis=1) > 0)


def _originals(count: int) -> Originals:
    torch.manual_seed(0)
    x = torch.rand(count, 3, 4, 4) * 0.5
    targets = torch.zeros(count, 40, dtype=torch.long)
    targets[:, SMILING] = 1
    embed = type("Embedding", (Brightness,), {"embed": lambda self, images: images.flatten(1)[:, :6]})()
    return Originals(classifier=Brightness(), oracle=embed, faces=x, x=x, rest=None, targets=targets,
                     oracle_before=torch.zeros(count, 40, dtype=torch.long), judged=None, describe=_described,
                     descriptors=_described(x), calibrated={})


def test_a_stop_read_chunk_by_chunk_and_kept_pools_to_the_reading_of_all_faces_at_once():
    originals = _originals(5)
    edits = originals.x + torch.linspace(0.1, 0.5, 5).view(-1, 1, 1, 1)
    whole = read_stop(originals, "Smiling", edits, 2.0)
    parts = []
    for rows in (slice(0, 2), slice(2, 5)):
        _, faces = stop_faces(originals, "Smiling", edits[rows], 2.0, rows, features=True)
        parts.append(faces)
    joined = StopFaces.joined(parts)
    assert joined.features.shape == (5, 6)
    pooled = reading_from_faces(originals, "Smiling", joined, 2.0)
    assert (pooled.reached_rate, pooled.flip_rate, pooled.fva, pooled.mnac) == (
        whole.reached_rate, whole.flip_rate, whole.fva, whole.mnac)
    assert pooled.at_stop is None


def test_faces_read_at_a_stop_come_back_from_their_arrays(tmp_path):
    import numpy as np
    from safetensors.numpy import load_file, save_file

    originals = _originals(3)
    _, faces = stop_faces(originals, "Smiling", originals.x + 0.3, 2.0, features=True)
    faces.judges = {"lamp": np.array([0.1, np.nan, 0.9])}
    save_file(faces.arrays("visible"), str(tmp_path / "kept.safetensors"))
    back = StopFaces.from_arrays(load_file(str(tmp_path / "kept.safetensors")), "visible")
    assert torch.equal(back.logits, faces.logits) and torch.equal(back.oracle_after, faces.oracle_after)
    assert torch.equal(back.features, faces.features)
    assert (back.described.vectors == faces.described.vectors).all()
    assert (back.described.detected == faces.described.detected).all()
    assert back.judges.keys() == {"lamp"} and back.judges["lamp"][2] == 0.9


def test_parts_read_by_different_judges_are_not_joined():
    import pytest

    originals = _originals(2)
    _, one = stop_faces(originals, "Smiling", originals.x + 0.3, 2.0)
    _, other = stop_faces(originals, "Smiling", originals.x + 0.3, 2.0)
    other.judges = {"lamp": one.logits.numpy()}
    with pytest.raises(ValueError, match="different judges"):
        StopFaces.joined([one, other])
