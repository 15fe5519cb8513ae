"""A stranger's model file must not run code or read this machine's files when its card is
loaded: hostile torch.export archives (pickled weights, constants and objects, compiled code,
code in the program's strings), ONNX models whose tensors live in external files, and weights
that lead outside the card's folder are refused, and their payloads never run or come out.
Each hostile file is made here, in tmp_path, from a real export rewritten with zipfile/onnx."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from recourse.foreign.archive_checks import UnsafeModelError, check_onnx_model, check_program_archive
from recourse.foreign.cards import CardError
from recourse.foreign.loaders import ForeignModelError, load_foreign, onnx_session
from tests.foreign_models import different_card, save_different, write_card_file

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class MakesFile:
    """A pickle whose loading creates ``path`` (what a hostile payload would do, harmlessly)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _payload(marker: Path) -> bytes:
    return pickle.dumps(MakesFile(marker))


# --- torch.export archives ------------------------------------------------------------------


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real torch.export.save archive of the tiny model, to be rewritten."""
    folder = save_different(tmp_path_factory.mktemp("program"), "torch-export")
    return (folder / "model.pt2").read_bytes()


def _rewrite(data: bytes, path: Path, edit: Callable[[str, bytes], bytes | None],
             extra: dict[str, bytes] | None = None) -> None:
    """``data`` with each entry passed through ``edit`` (by its name below the root folder;
    None drops it) and ``extra`` entries added (names below the root, or raw when starting '!')."""
    source = zipfile.ZipFile(io.BytesIO(data))
    root = source.namelist()[0].split("/", 1)[0]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as out:
        for info in source.infolist():
            content = edit(info.filename.split("/", 1)[1], source.read(info))
            if content is not None:
                out.writestr(info.filename, content)
        for name, content in (extra or {}).items():
            out.writestr(name[1:] if name.startswith("!") else f"{root}/{name}", content)


def _json_edit(entry: str, change: Callable[[dict], None]) -> Callable[[str, bytes], bytes | None]:
    def edit(name: str, content: bytes) -> bytes:
        if name != entry:
            return content
        value = json.loads(content)
        change(value)
        return json.dumps(value).encode()
    return edit


WEIGHTS = "data/weights/model_weights_config.json"
CONSTANTS = "data/constants/model_constants_config.json"
PROGRAM = "models/model.json"


def _pickled_weight(marker: Path):
    def edit(name: str, content: bytes) -> bytes:
        if name == WEIGHTS:
            config = json.loads(content)
            config["config"]["features.0.weight"]["use_pickle"] = True
            return json.dumps(config).encode()
        return _payload(marker) if name == "data/weights/weight_0" else content
    return edit, {}


def _pickled_constant(marker: Path):
    def change(config: dict) -> None:
        config["config"]["scale"] = {"path_name": "tensor_0", "is_param": False, "use_pickle": True,
                                     "tensor_meta": None}
    return _json_edit(CONSTANTS, change), {"data/constants/tensor_0": _payload(marker)}


def _object_constant(prefix: str):
    def make(marker: Path):
        def change(config: dict) -> None:
            config["config"]["obj"] = {"path_name": f"{prefix}0", "is_param": False, "use_pickle": True,
                                       "tensor_meta": None}  # as torch.export.save writes an object
        return _json_edit(CONSTANTS, change), {f"data/constants/{prefix}0": _payload(marker)}
    return make


def _symbolic_size(marker: Path):
    def change(program: dict) -> None:
        values = program["graph_module"]["graph"]["tensor_values"]
        values["images"]["sizes"][0]["as_expr"]["expr_str"] = f"open({str(marker)!r}, 'w') and s0"
    return _json_edit(PROGRAM, change), {}


def _guard(marker: Path):
    return _json_edit(PROGRAM, lambda program: program.update(guards_code=[f"open({str(marker)!r}, 'w')"])), {}


def _input_name(marker: Path):
    evil = json.dumps(f"images=open({str(marker)!r}, 'w')").encode()  # pasted into `def forward(self, …)`
    return (lambda name, content: content.replace(b'"images"', evil) if name == PROGRAM else content), {}


def _call(marker: Path):
    def change(program: dict) -> None:
        program["graph_module"]["graph"]["nodes"].insert(0, {
            "target": "torch.os.system", "inputs": [{"name": "", "arg": {"as_string": f"touch {marker}"}, "kind": 1}],
            "outputs": [{"as_none": True}], "metadata": {}, "name": "evil"})
    return _json_edit(PROGRAM, change), {}


def _spec(kind: str):
    """An output spec whose context makes pytree import a module (one that does not exist)."""
    context = {"enum": [{"__enum__": True, "fqn": "never_imported_module:X", "name": "y"}],
               "defaultdict": {"default_factory_module": "never_imported_module", "default_factory_name": "f",
                               "dict_context": []}}[kind]
    kind_type = {"enum": "builtins.dict", "defaultdict": "collections.defaultdict"}[kind]

    def make(marker: Path):
        def change(program: dict) -> None:
            signature = program["graph_module"]["module_call_graph"][0]["signature"]
            signature["out_spec"] = json.dumps([1, {"type": kind_type, "children_spec": [],
                                                    "context": json.dumps(context)}])
        return _json_edit(PROGRAM, change), {}
    return make


def _extra_entry(name: str):
    return lambda marker: ((lambda n, content: content), {name: _payload(marker)})


HOSTILE = {
    # what torch.export.load unpickles or runs, and the refusal that names it
    "pickled weight": (_pickled_weight, "asks for pickle .*only plain tensor data is loaded"),
    "pickled constant": (_pickled_constant, "asks for pickle .*only plain tensor data is loaded"),
    "torchbind object": (_object_constant("custom_obj_"), "custom \\(torchbind\\) object, which loads by unpickling"),
    "opaque object": (_object_constant("opaque_obj_"), "opaque object, which loads by unpickling"),
    "legacy pickled weights": (_extra_entry("data/weights/model.pt"), "pickled tensors \\(the legacy format\\)"),
    "compiled code": (_extra_entry("data/aotinductor/model/model.so"), "compiled AOTInductor code"),
    "a pickle file": (_extra_entry("data/evil.pkl"), "a pickle, which can run code"),
    "unknown entry": (_extra_entry("data/other/thing"), "not one torch.export.save writes"),
    "'..' entry": (_extra_entry("!model/../../evil"), "absolute or '..' path"),
    "absolute entry": (_extra_entry("!/tmp/evil"), "absolute or '..' path"),
    "sympy eval": (_symbolic_size, "symbolic size in the program holds the name 'open'"),
    "exec-ed guard": (_guard, "guard in the program holds the name 'open'"),
    "name pasted into code": (_input_name, "not a plain name \\(torch would paste it into generated code\\)"),
    "python call": (_call, "calls 'torch.os.system'"),
    "enum import": (_spec("enum"), "names a Python module to import"),
    "defaultdict import": (_spec("defaultdict"), "names a Python module to import"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_program_refused_and_never_run(program: bytes, tmp_path: Path, case: str) -> None:
    make, message = HOSTILE[case]
    marker = tmp_path / "ran"
    edit, extra = make(marker)
    _rewrite(program, tmp_path / "model.pt2", edit, extra)
    write_card_file(tmp_path, different_card("torch-export", "model.pt2"))
    with pytest.raises(UnsafeModelError, match=message) as error:
        load_foreign(tmp_path)
    assert isinstance(error.value, ForeignModelError) and str(tmp_path / "model.pt2") in str(error.value)
    assert not marker.exists()


@pytest.mark.slow
def test_pickled_weight_runs_under_plain_torch_export_load(program: bytes, tmp_path: Path) -> None:
    """The attack above is real: torch 2.13's own loader runs the payload (in a child process)."""
    marker = tmp_path / "ran"
    edit, extra = _pickled_weight(marker)
    _rewrite(program, tmp_path / "model.pt2", edit, extra)
    subprocess.run([sys.executable, "-c", f"import torch; torch.export.load({str(tmp_path / 'model.pt2')!r})"],
                   capture_output=True, timeout=300)
    assert marker.exists()


def test_pickled_sample_inputs_are_never_unpickled(program: bytes, tmp_path: Path) -> None:
    """Every archive carries its sample inputs as a pickle (torch.load, falling back to
    weights_only=False): the loader empties them, so a hostile one loads as a model, inertly."""
    marker = tmp_path / "ran"
    buffer = io.BytesIO()
    torch.save((MakesFile(marker),), buffer)
    _rewrite(program, tmp_path / "model.pt2",
             lambda name, content: buffer.getvalue() if name == "data/sample_inputs/model.pt" else content)
    write_card_file(tmp_path, different_card("torch-export", "model.pt2"))
    loaded = load_foreign(tmp_path)
    assert loaded.runtime == "torch.export" and loaded.model(torch.rand(2, 3, 96, 96)).shape == (2, 3)
    assert not marker.exists()


def test_repeated_entry_refused(program: bytes, tmp_path: Path) -> None:
    path = tmp_path / "model.pt2"
    with pytest.warns(UserWarning, match="Duplicate name"):
        _rewrite(program, path, lambda name, content: content, {PROGRAM: b"{}"})
    with pytest.raises(UnsafeModelError, match="holds the entry 'model/models/model.json' twice"):
        check_program_archive(path.read_bytes(), str(path))


def test_plain_program_passes_and_loses_only_its_sample_inputs(program: bytes, tmp_path: Path) -> None:
    checked = zipfile.ZipFile(io.BytesIO(check_program_archive(program, "model.pt2")))
    original = zipfile.ZipFile(io.BytesIO(program))
    below = {info.filename.split("/", 1)[1]: original.read(info) for info in original.infolist()}
    for info in checked.infolist():
        name = info.filename.split("/", 1)[1]
        expected = b"" if name == "data/sample_inputs/model.pt" else below[name]
        assert checked.read(info) == expected
    assert len(checked.infolist()) == len(below)


# --- ONNX external data ---------------------------------------------------------------------

SECRET = b"SECRETBYTES!"  # three float32 numbers: the model's outputs if the file were read


def _onnx_model(location: str, where: str = "initializer") -> bytes:
    """images (N, 3, 96, 96) → mean over H, W + w, where w (3 floats) lives in ``location``."""
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", "0"), ("length", str(len(SECRET)))):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    images = helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, 96, 96])
    outputs = helper.make_tensor_value_info("outputs", TensorProto.FLOAT, ["N", 3])
    axes = helper.make_tensor("axes", TensorProto.INT64, [2], [2, 3])
    nodes = [helper.make_node("ReduceMean", ["images", "axes"], ["mean"], keepdims=0),
             helper.make_node("Add", ["mean", "w"], ["outputs"])]
    initializers, sparse = [axes], []
    if where == "initializer":
        initializers.append(weight)
    elif where == "constant":  # a Constant node's attribute tensor
        nodes.insert(0, helper.make_node("Constant", [], ["w"], value=weight))
    elif where == "subgraph":  # an If branch's initializer
        branch = helper.make_graph([helper.make_node("Identity", ["w_in"], ["w_out"])], "branch", [],
                                   [helper.make_tensor_value_info("w_out", TensorProto.FLOAT, [3])],
                                   initializer=[TensorProto(name="w_in", data_type=TensorProto.FLOAT, dims=[3],
                                                            data_location=TensorProto.EXTERNAL,
                                                            external_data=weight.external_data)])
        flag = helper.make_tensor("flag", TensorProto.BOOL, [], [True])
        initializers.append(flag)
        nodes.insert(0, helper.make_node("If", ["flag"], ["w"], then_branch=branch, else_branch=branch))
    elif where == "sparse":  # the values of a sparse initializer
        sparse.append(helper.make_sparse_tensor(weight, helper.make_tensor("w_idx", TensorProto.INT64, [3], [0, 1, 2]),
                                                [3]))
    graph = helper.make_graph(nodes, "g", [images], [outputs], initializer=initializers, sparse_initializer=sparse)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8).SerializeToString()


PLACES = ["initializer", "constant", "subgraph", "sparse"]


@pytest.mark.parametrize("where", PLACES)
def test_external_data_is_read_by_plain_onnx_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     where: str) -> None:
    """The attack is real: a model given as bytes reads a file of the working directory, and
    the file's bytes come out as its outputs (graph optimizations off: with them on, ONNX
    Runtime fails on some placements before reading, and still reads the others)."""
    import onnxruntime as ort

    (tmp_path / "secret.bin").write_bytes(SECRET)
    monkeypatch.chdir(tmp_path)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(_onnx_model("secret.bin", where), options, providers=["CPUExecutionProvider"])
    out = session.run(None, {"images": np.zeros((1, 3, 96, 96), np.float32)})[0]
    assert out.tobytes() == SECRET


@pytest.mark.parametrize("where", PLACES)
@pytest.mark.parametrize("location", ["secret.bin", "../secret.bin"])
def test_external_data_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, location: str) -> None:
    (tmp_path / "secret.bin").write_bytes(SECRET)
    card = tmp_path / "card"
    card.mkdir()
    (card / "secret.bin").write_bytes(SECRET)
    (card / "model.onnx").write_bytes(_onnx_model(location, where))
    write_card_file(card, different_card("onnx", "model.onnx"))
    monkeypatch.chdir(card)  # where ONNX Runtime would look for a model given as bytes
    with pytest.raises(UnsafeModelError, match=f"uses external data file '{location}'; the model must hold its "
                                               "weights inside the .onnx file"):
        load_foreign(card)


@pytest.mark.parametrize("where", PLACES)
def test_onnx_session_never_reads_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        where: str) -> None:
    """Second layer: even a model that skipped the check gets an empty folder for its files."""
    (tmp_path / "secret.bin").write_bytes(SECRET)
    monkeypatch.chdir(tmp_path)
    for location in ("secret.bin", "../" + tmp_path.name + "/secret.bin", str(tmp_path / "secret.bin")):
        # refused by ONNX Runtime's own check of the (empty) folder it was given
        with pytest.raises(Exception, match="[Ee]xternal (data|TensorProto)|/recourse-onnx-"):
            onnx_session(_onnx_model(location, where))


def test_node_naming_a_context_file_refused(tmp_path: Path) -> None:
    model = onnx.load_model_from_string(_onnx_model("secret.bin"))
    model.graph.ClearField("initializer")
    model.graph.node.insert(0, helper.make_node("EPContext", [], ["w"], domain="com.microsoft", embed_mode=0,
                                                ep_cache_context="../secret.bin"))
    with pytest.raises(UnsafeModelError, match="EPContext node, which names a file"):
        check_onnx_model(model.SerializeToString(), "model.onnx")


def test_plain_onnx_passes_the_check(tmp_path: Path) -> None:
    folder = save_different(tmp_path, "onnx")
    data = (folder / "model.onnx").read_bytes()
    assert onnx.load_model_from_string(check_onnx_model(data, "model.onnx")) == onnx.load_model_from_string(data)
    assert load_foreign(folder).runtime == "onnxruntime"


# --- where the weights file is ----------------------------------------------------------------


def test_weights_link_leading_outside_the_card_folder(tmp_path: Path) -> None:
    outside = save_different(tmp_path / "outside", "onnx")  # a good model, just not in the card's folder
    card = tmp_path / "card"
    card.mkdir()
    write_card_file(card, different_card("onnx", "model.onnx"))
    (card / "model.onnx").symlink_to(outside / "model.onnx")
    with pytest.raises(UnsafeModelError, match="is a link that leads outside the card's folder"):
        load_foreign(card)
    (card / "model.onnx").unlink()
    (card / "nets").symlink_to(outside, target_is_directory=True)  # a folder on the way
    write_card_file(card, different_card("onnx", "nets/model.onnx"))
    with pytest.raises(UnsafeModelError, match="is a link that leads outside the card's folder"):
        load_foreign(card)
    (card / "inside.onnx").write_bytes((outside / "model.onnx").read_bytes())
    (card / "model.onnx").symlink_to("inside.onnx")  # a link within the folder is fine
    write_card_file(card, different_card("onnx", "model.onnx"))
    assert load_foreign(card).runtime == "onnxruntime"


@pytest.mark.parametrize("weights", ["../model.onnx", "/etc/passwd.onnx"])
def test_weights_path_escaping_the_card_refused(tmp_path: Path, weights: str) -> None:
    save_different(tmp_path, "onnx")
    write_card_file(tmp_path / "card", different_card("onnx", weights))
    with pytest.raises(CardError, match="inside the card's folder"):
        load_foreign(tmp_path / "card")


def _hub_snapshot(cache: Path, repo_id: str, files: Path, commit: str = "b" * 40) -> Path:
    """A hub cache as huggingface_hub lays it out: snapshot files are links into blobs/."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "blobs").mkdir()
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for file in files.iterdir():
        blob = repo / "blobs" / f"blob-{file.name.replace('.', '-')}"
        blob.write_bytes(file.read_bytes())
        (snapshot / file.name).symlink_to(os.path.relpath(blob, snapshot))
    return snapshot


def test_hub_snapshot_links_into_its_own_blobs_only(tmp_path: Path) -> None:
    save_different(tmp_path / "saved", "onnx")
    cache = tmp_path / "hub"
    snapshot = _hub_snapshot(cache, "auditor/model", tmp_path / "saved")
    loaded = load_foreign("auditor/model", cache_dir=cache, local_files_only=True)
    assert loaded.runtime == "onnxruntime" and loaded.card.folder == snapshot
    # another repository's blob (or any other file) is not this snapshot's
    other = _hub_snapshot(cache, "someone/else", tmp_path / "saved")
    (snapshot / "model.onnx").unlink()
    (snapshot / "model.onnx").symlink_to(os.path.relpath((other / "model.onnx").resolve(), snapshot))
    with pytest.raises(UnsafeModelError, match="is a link that leads outside the card's folder"):
        load_foreign("auditor/model", cache_dir=cache, local_files_only=True)
