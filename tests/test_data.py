from pathlib import Path

import numpy as np
import pytest

from recourse.data import (
    ATTRIBUTES, DatasetError, detect_layout, load_split, majority_baseline, read_annotations, select_split,
)
from tests.conftest import HQ_DATA


def test_hq_layout_is_parsed_and_split(hq_folder):
    root, labels = hq_folder
    assert detect_layout(root) == "celeba-hq"
    everything = select_split(root, "all")
    assert everything.filenames[0] == "0.jpg"
    np.testing.assert_array_equal(everything.labels, labels)
    assert select_split(root, "train").filenames == ("0.jpg", "1.jpg", "23999.jpg")
    assert select_split(root, "val").filenames == ("24000.jpg", "26999.jpg")
    assert select_split(root, "test").filenames == ("27000.jpg", "27001.jpg", "29999.jpg")


def test_celeba_layout_without_count_line_uses_partition(celeba_folder):
    root, labels = celeba_folder
    assert detect_layout(root) == "celeba"
    np.testing.assert_array_equal(select_split(root, "all").labels, labels)
    assert select_split(root, "test").filenames == ("000004.jpg", "000005.jpg")
    np.testing.assert_array_equal(select_split(root, "val").labels, labels[2:3])


def test_celeba_layout_with_count_line(celeba_folder):
    root, labels = celeba_folder
    path = root / "list_attr_celeba.txt"
    path.write_text("5\n" + path.read_text())
    np.testing.assert_array_equal(read_annotations(path).labels, labels)


def test_load_split_gives_uint8_images_and_uses_cache(hq_folder, tmp_path):
    root, labels = hq_folder
    split = load_split(root, "test", resolution=8, cache_dir=tmp_path / "cache")
    assert split.images.shape == (3, 3, 8, 8) and split.images.dtype == np.uint8
    np.testing.assert_array_equal(split.labels, labels[5:])
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1
    for image in (root / "CelebA-HQ-img").iterdir():
        image.unlink()  # a second load must come from the cache
    np.testing.assert_array_equal(load_split(root, "test", 8, tmp_path / "cache").images, split.images)


def _annotation_lines(root: Path) -> list[str]:
    return (root / "CelebAMask-HQ-attribute-anno.txt").read_text().splitlines()


@pytest.mark.parametrize("mutate, message", [
    (lambda lines: [lines[0], lines[1].replace("Smiling", "Smile"), *lines[2:]], "anno.txt:2: header"),
    (lambda lines: [*lines[:4], lines[4] + " 1", *lines[5:]], "anno.txt:5: expected a file name and 40 values, got 42"),
    (lambda lines: [*lines[:3], lines[3].replace("-1", "0", 1).replace(" 1", " 0", 1), *lines[4:]], "anno.txt:4: attribute values"),
    (lambda lines: [*lines[:3], lines[3].replace("-1", "x", 1).replace(" 1", " x", 1), *lines[4:]], "anno.txt:4: attribute values"),
    (lambda lines: ["9", *lines[1:]], "anno.txt:1: declares 9 rows but has 8"),
    (lambda lines: [], "file is empty"),
    (lambda lines: lines[:1], "no header line"),
])
def test_malformed_annotations_name_file_and_line(hq_folder, mutate, message):
    root, _ = hq_folder
    path = root / "CelebAMask-HQ-attribute-anno.txt"
    path.write_text("\n".join(mutate(_annotation_lines(root))) + "\n")
    with pytest.raises(DatasetError, match=message.replace(".", r"\.")):
        read_annotations(path)


def test_missing_image_is_named(hq_folder):
    root, _ = hq_folder
    (root / "CelebA-HQ-img" / "27001.jpg").unlink()
    with pytest.raises(DatasetError, match=r"27001\.jpg: image listed in the annotations is missing"):
        load_split(root, "test", 8)


def test_corrupt_image_is_named(hq_folder):
    root, _ = hq_folder
    (root / "CelebA-HQ-img" / "27000.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(DatasetError, match=r"27000\.jpg: cannot be read as an image"):
        load_split(root, "test", 8)


def test_unknown_folder_and_split_are_rejected(tmp_path, hq_folder):
    with pytest.raises(DatasetError, match="not a CelebA folder"):
        detect_layout(tmp_path)
    with pytest.raises(ValueError, match="split must be one of"):
        select_split(hq_folder[0], "holdout")


def test_celeba_split_needs_partition_file(celeba_folder):
    root, _ = celeba_folder
    (root / "list_eval_partition.txt").unlink()
    assert len(select_split(root, "all").filenames) == 5
    with pytest.raises(DatasetError, match="use --split all"):
        select_split(root, "test")


def test_majority_baseline_by_hand():
    labels = np.array([[1, 0], [1, 1], [0, 1], [1, 1]], dtype=np.uint8)
    np.testing.assert_allclose(majority_baseline(labels), [0.75, 0.75])
    np.testing.assert_allclose(majority_baseline(labels[:1], train_labels=labels), [1.0, 0.0])


@pytest.mark.slow
@pytest.mark.requires("hq_data")
def test_real_hq_annotations_and_split_sizes():
    annotations = read_annotations(HQ_DATA / "CelebAMask-HQ-attribute-anno.txt")
    assert len(annotations.filenames) == 30000 and annotations.labels.shape == (30000, 40)
    assert [len(select_split(HQ_DATA, s).filenames) for s in ("train", "val", "test")] == [24000, 3000, 3000]
    assert round(float(majority_baseline(annotations.labels).mean()) * 100, 1) == 78.9
    assert ATTRIBUTES[-1] == "Young"
