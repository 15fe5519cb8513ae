"""A small model file must not cost much more than its size to load: overlapping zip entries in a
torch.export archive, ONNX models whose constants or shape arithmetic ask for huge tensors (or
sizes computed from the input, or text), and safetensors headers swollen with metadata or
padding are refused through the public loading path, while valid files of each format load.
The hostile files are sized so that code without the bounds merely accepts them (a few hundred
MB at most), never so that it takes the machine's memory; the full-size probes are in
scripts/measurements/model_archive_bombs.py."""

from __future__ import annotations

import struct
from pathlib import Path

import onnx
import pytest
import torch

from recourse.foreign.loaders import ForeignModelError, load_foreign
from scripts.measurements.model_archive_bombs import (onnx_probe, overlapping_program, safetensors_probe,
                                                      same_offset_program, small_model, write_probe)
from tests.foreign_models import save_different

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
# Just over a photo's budget for the ONNX tensors: what code without the bounds allocates.
OVER_BUDGET = 30_000_000  # float32 elements: 120 MB, over the 96 MB the output check may hold


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = save_different(tmp_path_factory.mktemp("program"), "torch-export")
    return (folder / "model.pt2").read_bytes()


@pytest.fixture(scope="module")
def state() -> dict[str, torch.Tensor]:
    return {k: v.contiguous() for k, v in small_model().state_dict().items()}


# --- torch.export archives ------------------------------------------------------------------


def test_overlapping_entries_refused_before_any_is_read(program: bytes, tmp_path: Path) -> None:
    # eight entries, each reading the same 1 MB block to its end: 8 MB read from a 1.3 MB file
    data = overlapping_program(program, 8, 2**20 + len(program))
    folder = write_probe(tmp_path, "torch-export", data)
    with pytest.raises(ForeignModelError, match="share bytes"):
        load_foreign(folder)


def test_entries_at_one_offset_refused(program: bytes, tmp_path: Path) -> None:
    folder = write_probe(tmp_path, "torch-export", same_offset_program(program))
    with pytest.raises(ForeignModelError, match="share bytes"):
        load_foreign(folder)


def test_plain_program_still_loads(program: bytes, tmp_path: Path) -> None:
    assert load_foreign(write_probe(tmp_path, "torch-export", program)).runtime == "torch.export"


# --- ONNX -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, message", [
    ("constant-of-shape", "for one image, more than the 80 MB"),  # ConstantOfShape of a constant shape
    ("shape-ops", "for one image, more than the 80 MB"),  # Shape → Gather → Mul → Expand
    ("sparse", "sparse tensor .* expands to shape"),  # densified while the session is made
    ("input-valued", "more than 96 MB of working memory"),  # no static check sees it: the probe's budget does
])
def test_onnx_asking_for_huge_tensors_refused(tmp_path: Path, kind: str, message: str) -> None:
    data = onnx_probe(kind, OVER_BUDGET)
    assert len(data) < 1000
    with pytest.raises(ForeignModelError, match=message):
        load_foreign(write_probe(tmp_path, "onnx", data))


def test_onnx_text_refused(tmp_path: Path) -> None:
    # strings live outside ONNX Runtime's allocator: doubled 20 times here, 1 MB; 30 times, 1 GB
    with pytest.raises(ForeignModelError, match="text tensors live outside"):
        load_foreign(write_probe(tmp_path, "onnx", onnx_probe("text", 2**20)))


def test_onnx_nonzero_on_an_input_of_unknown_size_refused(tmp_path: Path) -> None:
    model = onnx.load_from_string(onnx_probe("input-valued", 1000))  # a size from the input's values
    nodes = list(model.graph.node)
    at = next(i for i, node in enumerate(nodes) if node.op_type == "ReduceSum" and node.input[0] == "big")
    nodes[at:at + 1] = [onnx.helper.make_node("NonZero", ["big"], ["where"]),
                        onnx.helper.make_node("ReduceSum", ["where"], ["found"], keepdims=0),
                        onnx.helper.make_node("Cast", ["found"], ["extra"], to=onnx.TensorProto.FLOAT)]
    model.graph.ClearField("node")
    model.graph.node.extend(nodes)
    with pytest.raises(ForeignModelError, match="NonZero.*unknown size"):
        load_foreign(write_probe(tmp_path, "onnx", model.SerializeToString()))


def test_onnx_within_budget_still_loads(tmp_path: Path) -> None:
    # the same graphs, asking for 4 MB: loaded, and the sizes from the input's values still run
    for kind in ("constant-of-shape", "shape-ops", "input-valued"):
        loaded = load_foreign(write_probe(tmp_path / kind, "onnx", onnx_probe(kind, 1_000_000)))
        assert loaded.runtime == "onnxruntime"
        assert loaded.model(torch.zeros(2, 3, 96, 96)).shape == (2, 3)
    exported = save_different(tmp_path / "exported", "onnx")
    assert load_foreign(exported).runtime == "onnxruntime"


def test_committed_onnx_models_pass_the_size_check() -> None:
    from recourse.foreign.archive_checks import check_onnx_model

    folder = ROOT / "checkpoints" / "judges" / "age-gender"
    if not folder.is_dir():
        pytest.skip("the judges are not in this checkout")
    for path, side in ((folder / "age-v1.onnx", 64), (folder / "gender-v1.onnx", 32)):
        check_onnx_model(path.read_bytes(), str(path), [1, 3, side, side])


# --- safetensors ------------------------------------------------------------------------------


def test_safetensors_metadata_over_the_cap_refused(state: dict, tmp_path: Path) -> None:
    folder = write_probe(tmp_path, "safetensors", safetensors_probe(state, metadata_bytes=2**20))
    with pytest.raises(ForeignModelError, match=r"__metadata__ takes \d+ KB"):
        load_foreign(folder)


def test_safetensors_header_over_the_cap_refused(state: dict, tmp_path: Path) -> None:
    folder = write_probe(tmp_path, "safetensors", safetensors_probe(state, header_bytes=9 * 2**20))
    with pytest.raises(ForeignModelError, match="header takes 9.0 MB"):
        load_foreign(folder)


def test_safetensors_header_longer_than_the_file_refused(state: dict, tmp_path: Path) -> None:
    data = safetensors_probe(state)
    folder = write_probe(tmp_path, "safetensors", struct.pack("<Q", 2**62) + data[8:])
    with pytest.raises(ForeignModelError, match="not a readable safetensors file"):
        load_foreign(folder)


def test_safetensors_within_the_caps_still_loads(state: dict, tmp_path: Path) -> None:
    data = safetensors_probe(state, metadata_bytes=1000, header_bytes=2**20)
    assert load_foreign(write_probe(tmp_path, "safetensors", data)).runtime == "torch (safetensors)"


def test_a_sequence_of_text_is_read_as_text() -> None:
    """A graph value that is a sequence of strings (not a tensor) counts as text, as a tensor of strings does."""
    from recourse.foreign.onnx_bounds import _value_sizes

    def sequence_of(name: str, element: int) -> onnx.ValueInfoProto:
        kind = onnx.helper.make_sequence_type_proto(onnx.helper.make_tensor_type_proto(element, None))
        return onnx.helper.make_value_info(name, kind)

    text, numbers = sequence_of("names", onnx.TensorProto.STRING), sequence_of("scores", onnx.TensorProto.FLOAT)
    graph = onnx.helper.make_graph([], "g", [text, numbers], [])
    sizes = _value_sizes(onnx.helper.make_model(graph))
    assert sizes["names"] == (onnx.TensorProto.STRING, None) and "scores" not in sizes
