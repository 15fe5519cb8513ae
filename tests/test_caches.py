"""Caches carry a key, a count and a checksum; one that does not match is recomputed with a
CacheWarning, never used: the benchmark's chunk parts, decoded images, recourse points."""

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file, save_file

from recourse.audit.paired import Student
from recourse.benchmark.settings import BenchmarkSettings
from recourse.benchmark.tasks import task_records
from recourse.caches import CacheWarning
from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.compression.recourse_points import RecoursePoints, cached_recourse_points
from recourse.data import ATTRIBUTES, load_split
from recourse.generation import CounterfactualConfig

# --- the benchmark's chunk parts -----------------------------------------------------------


def _generator():
    from tests.conftest import make_generator  # a randomly initialised denoiser: a prior that moves latents

    faces = (np.random.default_rng(0).random((32, 3, 16, 16)) * 255).astype(np.uint8)
    return make_generator(faces, latent_dim=4, width=8)


def _classifier(seed: int) -> AttributeClassifier:
    torch.manual_seed(seed)
    return AttributeClassifier(ClassifierConfig(widths=(4,), resolution=16, dropout=0.0, std=(0.05,) * 3)).eval()


@pytest.fixture(scope="module")
def bench():
    """A tiny benchmark: 4 tasks in chunks of 2, one student."""
    images = torch.from_numpy((np.random.default_rng(1).random((4, 3, 16, 16)) * 255).astype(np.uint8))
    settings = BenchmarkSettings(n=4, chunk_size=2, attributes=("Smiling", "Young"),
                                 counterfactual=CounterfactualConfig(steps=4, noise_level=0.5, finish_steps=2))
    student = _classifier(1)
    return images, _classifier(0), {"s": Student("s", student, student)}, settings, _generator()


def _run(bench, cache: Path, fingerprints=None) -> list[dict]:
    images, teacher, students, settings, generator = bench
    return task_records(images, teacher, students, settings, generator, cache, fingerprints or {"fp32": "f0", "s": "s0"})


@pytest.fixture
def first_run(bench, tmp_path):
    cache = tmp_path / "cache"
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # a fresh cache warns about nothing
        records = _run(bench, cache)
        assert _run(bench, cache) == records  # and reads back without a warning
    return cache, records


def _rerun_warns(bench, cache: Path, match: str, fingerprints=None) -> list[dict]:
    with pytest.warns(CacheWarning, match=match):
        return _run(bench, cache, fingerprints)


@pytest.mark.slow
def test_parts_carry_their_count_key_and_checksum(first_run):
    cache, _ = first_run
    part = json.loads((cache / "s-000002-s0.json").read_text())
    assert {"method": "s", "tasks": 2, "first_task": 2, "fingerprint": "s0"}.items() <= part.items()
    assert len(part["sha256"]) == 64 and len(part["records"]) == 2
    from safetensors import safe_open

    with safe_open(str(cache / "fp32-000000-f0.safetensors"), "pt") as handle:
        metadata = handle.metadata()
    assert {"tasks": "2", "first_task": "0", "fingerprint": "f0"}.items() <= metadata.items()
    assert len(metadata["sha256"]) == 64


@pytest.mark.slow
def test_an_edited_student_part_is_recomputed_not_used(bench, first_run):
    """The issue's attack: one flipped value in a part turned VD from 0.0 into 50.0."""
    cache, records = first_run
    path = cache / "s-000000-s0.json"
    part = json.loads(path.read_text())
    part["records"][0]["accepts_teacher"] = not part["records"][0]["accepts_teacher"]
    path.write_text(json.dumps(part))
    assert _rerun_warns(bench, cache, r"s-000000-s0\.json not used \(its content does not match its checksum\)") == records
    assert json.loads(path.read_text())["records"] == [r["students"]["s"] for r in records[:2]]  # rewritten


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_text(json.dumps(json.loads(p.read_text())["records"])), "an older format"),
    (lambda p: p.write_text(p.read_text()[:40]), "unreadable"),
    (lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "tasks": 1})), "its tasks is 1, expected 2"),
    (lambda p: p.write_text((p.parent / "s-000002-s0.json").read_text()), "its first_task is 2, expected 0"),
])
@pytest.mark.slow
def test_damaged_student_parts_are_recomputed(bench, first_run, damage, message):
    cache, records = first_run
    damage(cache / "s-000000-s0.json")
    assert _rerun_warns(bench, cache, message) == records


@pytest.mark.slow
def test_an_edited_teacher_part_is_recomputed_not_used(bench, first_run):
    cache, records = first_run
    path = cache / "fp32-000000-f0.safetensors"
    from safetensors import safe_open

    with safe_open(str(path), "pt") as handle:
        metadata = handle.metadata()
    tensors = load_file(str(path))
    tensors["valid"] = 1 - tensors["valid"]
    save_file(tensors, str(path), metadata=metadata)  # the old checksum kept
    assert _rerun_warns(bench, cache, "does not match its checksum") == records


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_bytes(p.read_bytes()[:-100]), "unreadable"),
    (lambda p: p.write_bytes((p.parent / "fp32-000002-f0.safetensors").read_bytes()), "its first_task is '2'"),
    (lambda p: save_file(load_file(str(p)), str(p)), "its tasks is None"),  # no metadata: an older format
])
@pytest.mark.slow
def test_damaged_teacher_parts_are_recomputed(bench, first_run, damage, message):
    cache, records = first_run
    damage(cache / "fp32-000000-f0.safetensors")
    assert _rerun_warns(bench, cache, message) == records


@pytest.mark.slow
def test_a_part_renamed_to_another_key_is_not_used(bench, first_run):
    cache, records = first_run
    for path in cache.glob("s-*-s0.json"):
        path.rename(path.with_name(path.name.replace("-s0", "-s1")))
    assert _rerun_warns(bench, cache, "its fingerprint is 's0', expected 's1'", {"fp32": "f0", "s": "s1"}) == records


# --- decoded images --------------------------------------------------------------------------


@pytest.fixture
def hq(tmp_path):
    """A CelebAMask-HQ layout with three test images."""
    root = tmp_path / "hq"
    (root / "CelebA-HQ-img").mkdir(parents=True)
    names = [f"{i}.jpg" for i in (27000, 27001, 27002)]
    rng = np.random.default_rng(0)
    for name in names:
        Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(root / "CelebA-HQ-img" / name)
    rows = [name + " " + " ".join(["1", "-1"] * 20) for name in names]
    (root / "CelebAMask-HQ-attribute-anno.txt").write_text("\n".join(["3", " ".join(ATTRIBUTES), *rows]) + "\n")
    return root


def _load(root: Path, cache: Path):
    return load_split(root, "test", 8, cache)


@pytest.fixture
def cached(hq, tmp_path):
    cache = tmp_path / "cache"
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        fresh = _load(hq, cache)
        assert np.array_equal(_load(hq, cache).images, fresh.images)
    (path,) = cache.glob("*.npz")
    return hq, cache, path, fresh


def _rewrite(path: Path, **changes) -> None:
    with np.load(path) as stored:
        arrays = {name: stored[name] for name in stored.files}
    arrays.update(changes)
    np.savez(path.with_suffix(".tmp.npz"), **arrays)
    path.with_suffix(".tmp.npz").replace(path)


def test_image_cache_with_its_images_reordered_is_recomputed(cached):
    """The issue's attack: the images reversed scored below the majority baseline."""
    root, cache, path, fresh = cached
    with np.load(path) as stored:
        images = stored["images"]
    _rewrite(path, images=images[::-1].copy())
    with pytest.warns(CacheWarning, match="does not match its checksum"):
        assert np.array_equal(_load(root, cache).images, fresh.images)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert np.array_equal(_load(root, cache).images, fresh.images)  # rewritten correctly


@pytest.mark.parametrize("change, message", [
    (lambda a: {"count": np.array(2)}, "its count is 2, expected 3"),
    (lambda a: {"key": np.array("0" * 64)}, "its key is"),
    (lambda a: {"images": a["images"][:2].copy(), "count": np.array(2)}, "do not fit this split"),
    (lambda a: {"kept": a["kept"][::-1].copy()}, "do not fit this split"),
])
def test_image_cache_that_does_not_fit_is_recomputed(cached, change, message):
    root, cache, path, fresh = cached
    with np.load(path) as stored:
        arrays = {name: stored[name] for name in stored.files}
    _rewrite(path, **change(arrays))
    with pytest.warns(CacheWarning, match=message):
        assert np.array_equal(_load(root, cache).images, fresh.images)


def test_truncated_image_cache_is_recomputed(cached):
    root, cache, path, fresh = cached
    path.write_bytes(path.read_bytes()[:200])
    with pytest.warns(CacheWarning, match="unreadable"):
        assert np.array_equal(_load(root, cache).images, fresh.images)


def test_a_changed_image_file_makes_the_cache_stale(cached):
    root, cache, _, fresh = cached
    changed = root / "CelebA-HQ-img" / "27001.jpg"
    Image.new("RGB", (16, 16), (255, 0, 0)).save(changed)
    os.utime(changed, ns=(10**18, 10**18))
    with pytest.warns(CacheWarning, match="1 image files changed since it was written, the first 27001.jpg"):
        reloaded = _load(root, cache)
    assert np.array_equal(reloaded.images[[0, 2]], fresh.images[[0, 2]])
    assert reloaded.images[1, 0].mean() > 200  # the new red image, not the cached one


def test_a_changed_annotation_file_gives_another_cache(cached):
    root, cache, _, _ = cached
    annotations = root / "CelebAMask-HQ-attribute-anno.txt"
    annotations.write_text(annotations.read_text().replace(" 1 -1", " -1 1", 1))
    _load(root, cache)
    assert len(list(cache.glob("*.npz"))) == 2


def test_deleted_image_files_do_not_invalidate_the_cache(cached):
    root, cache, _, fresh = cached
    for image in (root / "CelebA-HQ-img").iterdir():
        image.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert np.array_equal(_load(root, cache).images, fresh.images)


# --- recourse points -------------------------------------------------------------------------


def _points(count: int = 6) -> RecoursePoints:
    generator = torch.Generator().manual_seed(0)
    return RecoursePoints(torch.rand(count, 3, 8, 8, generator=generator), torch.arange(count) % 40,
                          (torch.arange(count) % 2).float(), torch.arange(count), attempted=count + 2, seconds=1.25)


@pytest.fixture
def saved_points(tmp_path):
    path = tmp_path / "recourse-points-abc-8.safetensors"
    made = cached_recourse_points(path, _points)
    return path, made


def _never():
    raise AssertionError("the cached points were remade")


def test_recourse_points_round_trip_without_remaking(saved_points):
    path, made = saved_points
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        loaded = cached_recourse_points(path, _never)
    assert torch.equal(loaded.images, made.images) and loaded.attempted == 8 and loaded.seconds == 1.25


@pytest.mark.parametrize("edit, message", [
    (lambda t, m: ({**t, "images": t["images"].flip(0)}, m), "does not match its checksum"),
    (lambda t, m: (t, {**m, "count": "5"}), "its count is '5', expected 6"),
    (lambda t, m: (t, {k: v for k, v in m.items() if k != "sha256"}), "does not match its checksum"),
])
def test_edited_recourse_points_are_remade(saved_points, edit, message):
    path, made = saved_points
    from safetensors import safe_open

    with safe_open(str(path), "pt") as handle:
        metadata = handle.metadata()
    tensors, metadata = edit(load_file(str(path)), metadata)
    save_file(tensors, str(path), metadata=metadata)
    with pytest.warns(CacheWarning, match=message):
        remade = cached_recourse_points(path, _points)
    assert torch.equal(remade.images, made.images)


def test_recourse_points_under_another_name_are_remade(saved_points):
    path, _ = saved_points
    other = path.with_name("recourse-points-def-8.safetensors")
    path.rename(other)
    with pytest.warns(CacheWarning, match="its key is 'recourse-points-abc-8.safetensors'"):
        cached_recourse_points(other, _points)


def test_points_that_are_not_recourse_points_are_remade(tmp_path):
    from recourse.caches import write_tensors

    path = tmp_path / "recourse-points-abc-8.safetensors"
    bad = _points()._tensors() | {"targets": torch.full((6,), 0.5)}
    write_tensors(path, bad, {"key": path.name, "count": 6, "attempted": 8, "seconds": 1.0})
    with pytest.warns(CacheWarning, match="not valid recourse points"):
        cached_recourse_points(path, _points)


# --- a run longer than a session: the parts that hold no picture, kept apart ---------------


def _run_kept(bench, cache: Path, kept: Path) -> list[dict]:
    images, teacher, students, settings, generator = bench
    return task_records(images, teacher, students, settings, generator, cache, {"fp32": "f0", "s": "s0"},
                        kept_dir=kept)


@pytest.mark.slow
def test_a_run_goes_on_from_its_kept_parts_without_the_teachers_pictures(bench, tmp_path, monkeypatch):
    from recourse.benchmark import tasks

    records = _run_kept(bench, tmp_path / "cache", tmp_path / "kept")
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == [
        "fp32-000000-f0.summary.safetensors", "fp32-000002-f0.summary.safetensors",
        "s-000000-s0.json", "s-000002-s0.json"]
    assert "counterfactuals" not in load_file(str(tmp_path / "kept" / "fp32-000000-f0.summary.safetensors"))
    assert records == _run(bench, tmp_path / "plain")  # the same records as a run that keeps nothing apart

    def nothing_made(*args, **kwargs):
        raise AssertionError("a kept chunk made something again")

    monkeypatch.setattr(tasks, "teacher_part", nothing_made)
    monkeypatch.setattr(tasks, "student_part", nothing_made)
    assert _run_kept(bench, tmp_path / "next-session-cache", tmp_path / "kept") == records


@pytest.mark.slow
def test_a_chunk_lacking_a_kept_part_makes_the_teachers_part_again_and_keeps_the_others(bench, tmp_path):
    first = _run_kept(bench, tmp_path / "cache", tmp_path / "kept")
    (tmp_path / "kept" / "s-000002-s0.json").unlink()  # the session ended inside this chunk
    assert _run_kept(bench, tmp_path / "next-session-cache", tmp_path / "kept") == first
    assert (tmp_path / "next-session-cache" / "fp32-000002-f0.safetensors").is_file()
    assert not (tmp_path / "next-session-cache" / "fp32-000000-f0.safetensors").exists()


@pytest.mark.slow
def test_kept_parts_made_against_other_counterfactuals_are_made_again(bench, tmp_path):
    from recourse.benchmark.tasks import keep_teacher_summary

    images = bench[0]
    first = _run_kept(bench, tmp_path / "cache", tmp_path / "kept")
    cached = load_file(str(tmp_path / "cache" / "fp32-000000-f0.safetensors"))
    x = images[:2].float() / 255
    other = {**cached, "counterfactuals": cached["counterfactuals"] + 0.01}
    assert keep_teacher_summary(tmp_path / "kept", cached, x, 0, "f0")  # the same pictures: the parts stand
    assert not keep_teacher_summary(tmp_path / "kept", other, x, 0, "f0")  # others: they do not
