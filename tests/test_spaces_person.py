import pytest
import torch

from recourse.generation.spaces.person import PersonSegmenter, SegmentationError


def test_the_segmenter_gives_a_probability_per_pixel_at_the_frame_size():
    frames = torch.rand(2, 3, 64, 48)
    masks = PersonSegmenter()(frames)
    assert masks.shape == (2, 1, 64, 48)
    assert float(masks.min()) >= 0 and float(masks.max()) <= 1


def test_a_missing_model_says_where_it_should_be(tmp_path):
    with pytest.raises(SegmentationError, match="missing"):
        PersonSegmenter(tmp_path)(torch.rand(1, 3, 32, 32))


def test_a_changed_model_file_is_refused(tmp_path):
    from recourse.checkpoints import CheckpointError, write_manifest
    from recourse.locations import checkpoints_dir

    shipped = checkpoints_dir() / "segmentation" / "selfie_segmentation.tflite"
    (tmp_path / "selfie_segmentation.tflite").write_bytes(shipped.read_bytes())
    write_manifest(tmp_path)
    data = bytearray((tmp_path / "selfie_segmentation.tflite").read_bytes())
    data[-1] ^= 1
    (tmp_path / "selfie_segmentation.tflite").write_bytes(bytes(data))
    with pytest.raises(CheckpointError):
        PersonSegmenter(tmp_path)(torch.rand(1, 3, 32, 32))


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        PersonSegmenter()(torch.rand(3, 32, 32))
