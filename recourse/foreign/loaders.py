"""Loading a foreign classifier from its card, without unpickling anything a user supplied.

Four sources, one result (:class:`LoadedModel`: the raw model, called on tensors already
prepared per the card):

* ``format: torch-export`` — a ``torch.export`` program (``.pt2``) through ``torch.export.load``,
  given only a serialized graph and raw tensor data: :mod:`recourse.foreign.archive_checks`
  refuses everything else it would unpickle or run. A pt2e-quantized program (torchao's or
  ``torch.ao``'s ``convert_pt2e``) gets its straight-through form so gradients flow.
* ``format: safetensors`` — weights for an architecture named on the card from the set we ship
  (:mod:`recourse.foreign.architectures`).
* ``format: onnx`` — any ONNX model (float or ONNX Runtime int8) through ONNX Runtime: a black
  box that answers forward passes only. Its weights must be inside the file (no external data).
* a Hugging Face hub id (``hf:owner/name[@revision]``, or ``owner/name`` when no such local
  path exists) or a local folder holding a card and one of the above: the card is fetched first
  and only the one file it names after it, so nothing else of a repository is downloaded. The
  file must be inside the card's folder, links included (a hub snapshot's into its own blobs).

After loading, one forward pass on a blank image checks that the model returns as many
numbers per image as its card declares: a card that lists the wrong attributes must be refused
before any audit reads its logits as the wrong attributes.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from recourse.foreign.cards import CARD_NAMES, CardError, ModelCard, find_card, read_card
from recourse.foreign.errors import ForeignModelError, OutputCountError, UnsafeModelError


@dataclass
class LoadedModel:
    """A foreign model ready to be called on ``model_input_shape`` tensors (per its card)."""

    card: ModelCard
    model: Callable[[torch.Tensor], torch.Tensor]
    runtime: str  # "torch.export", "torch (safetensors)", "onnxruntime"
    differentiable: bool  # gradients reach the input (else a black box: zeroth-order only)
    quantized: bool  # quantize/dequantize nodes found in the graph
    fixed_batch: int | None = None  # the batch size a static-shape model insists on

    def input_shape(self, batch: int) -> tuple[int, int, int, int]:
        return input_shape(self.card, batch)


def input_shape(card: ModelCard, batch: int) -> tuple[int, int, int, int]:
    """The shape of a batch of prepared inputs, per the card's size and layout."""
    height, width = card.input.size
    return (batch, 3, height, width) if card.input.layout == "NCHW" else (batch, height, width, 3)


# --- where the card is ---------------------------------------------------------------------

_HUB_ID = re.compile(r"^(?:hf:)?([A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96})(?:@([\w./-]{1,128}))?$")


def resolve_card(source: str | os.PathLike, *, revision: str | None = None, cache_dir: str | os.PathLike | None = None,
                 local_files_only: bool = False) -> Path:
    """The local card file for ``source``: a card file, a folder holding one, or a hub id
    (downloaded: the card, then the weights file it names)."""
    text = str(source)
    path = Path(text)
    if not text.startswith("hf:") and path.exists():
        return find_card(path) if path.is_dir() else path
    match = _HUB_ID.match(text)
    if match is None:
        raise CardError(f"{text}: neither a card file, a folder holding {' or '.join(CARD_NAMES)}, nor a "
                        "Hugging Face hub id (owner/name or hf:owner/name@revision)")
    try:
        return download_card(match.group(1), revision=revision or match.group(2), cache_dir=cache_dir,
                             local_files_only=local_files_only)
    except ForeignModelError as error:
        if text.startswith("hf:"):
            raise
        raise ForeignModelError(f"{text}: no such local file or folder; {error}") from None


def download_card(repo_id: str, *, revision: str | None = None, cache_dir: str | os.PathLike | None = None,
                  local_files_only: bool = False) -> Path:
    """Fetch a hub repository's card, then the one weights file it names, into the hub cache;
    returns the card's path in the snapshot folder."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    common = dict(repo_id=repo_id, revision=revision, cache_dir=None if cache_dir is None else str(cache_dir),
                  local_files_only=local_files_only)
    try:
        folder = Path(snapshot_download(allow_patterns=list(CARD_NAMES), **common))
        card = read_card(find_card(folder))
        # only the named file: a repository may hold pickles or other formats we never load
        snapshot_download(allow_patterns=[card.weights], **common)
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as error:
        raise ForeignModelError(f"hub model {repo_id!r}: could not be fetched ({type(error).__name__}: "
                                f"{str(error).splitlines()[0] if str(error) else ''})") from None
    return find_card(folder)


# --- loading ---------------------------------------------------------------------------------


def load_foreign(source: str | os.PathLike, *, revision: str | None = None,
                 cache_dir: str | os.PathLike | None = None, local_files_only: bool = False,
                 probe: bool = True) -> LoadedModel:
    """Read the card of ``source``, load the model it names and check its output count."""
    card = read_card(resolve_card(source, revision=revision, cache_dir=cache_dir, local_files_only=local_files_only))
    loaded = load_from_card(card)
    if probe:
        check_outputs(loaded)
    return loaded


def load_from_card(card: ModelCard) -> LoadedModel:
    """The model a checked card names (no probe run)."""
    data = weights_bytes(card)
    if card.format == "torch-export":
        return _load_program(card, data)
    if card.format == "safetensors":
        return _load_safetensors(card, data)
    return _load_onnx(card, data)


def weights_bytes(card: ModelCard) -> bytes:
    """The weights file's bytes, checked against the card's ``sha256`` when it gives one; read
    once, so what is checked is what gets parsed."""
    path = card.weights_path
    real = contained_weights_path(card)
    if not real.is_file():
        raise ForeignModelError(f"{path}: the weights file named by {card.source} is missing")
    data = real.read_bytes()
    if card.sha256 is not None and hashlib.sha256(data).hexdigest() != card.sha256:
        raise ForeignModelError(f"{path}: its SHA-256 is not the one in {card.source} (changed or damaged since "
                                "the card was written; re-record it with sha256sum if the change is yours)")
    return data


def contained_weights_path(card: ModelCard) -> Path:
    """The weights file's real path, refused when it leads outside the card's folder.

    The card's ``weights`` is already relative without '..' (:mod:`recourse.foreign.cards`); a
    symlink (the file, or a folder on its way) could still point anywhere, and a stranger's card
    must not make us read this machine's files. The one link allowed is a Hugging Face snapshot's:
    ``<repo>/snapshots/<commit>/<file>`` → ``<repo>/blobs/<hash>``, inside the same repository."""
    path = card.weights_path
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        raise ForeignModelError(f"{path}: the weights file named by {card.source} is missing") from None
    except (OSError, RuntimeError, ValueError) as error:  # a symlink loop, a NUL in the name
        raise ForeignModelError(f"{path}: the weights file named by {card.source} cannot be opened "
                                f"({type(error).__name__})") from None
    allowed = [card.folder.resolve()]
    snapshots = card.folder.parent
    if snapshots.name == "snapshots" and snapshots.parent.name.startswith("models--"):
        allowed.append((snapshots.parent / "blobs").resolve())
    if not any(real.is_relative_to(root) for root in allowed):
        raise UnsafeModelError(f"{path}: the weights file named by {card.source} is a link that leads outside the "
                               "card's folder; refused (put the file itself beside the card)")
    return real


def _load_program(card: ModelCard, data: bytes) -> LoadedModel:
    from recourse.foreign.archive_checks import check_program_archive
    from recourse.foreign.straight_through import make_straight_through

    # torch.export.load has no weights-only/no-pickle switch in torch 2.13: the check is the
    # whole defence (every path that unpickles, runs or imports is refused there, see
    # archive_checks), and torch gets only the archive rebuilt from the checked entries.
    archive = check_program_archive(data, str(card.weights_path))
    try:
        program = torch.export.load(io.BytesIO(archive))
    except Exception as error:  # the deserializer raises many kinds; all mean the same to a user
        raise ForeignModelError(f"{card.weights_path}: not a loadable torch.export program ({_gist(error)})") from None
    inputs = [spec for spec in program.graph_signature.input_specs if spec.kind.name == "USER_INPUT"]
    if len(inputs) != 1:
        raise ForeignModelError(f"{card.weights_path}: the program takes {len(inputs)} inputs; an attribute "
                                "classifier takes one batch of images")
    # no guards function: it would be exec-ed from the archive's guards_code (the inputs'
    # range constraints are still checked, by a pre-hook)
    module = program.module(check_guards=False)
    rewritten = make_straight_through(module)
    fixed = _static_batch(program)
    return LoadedModel(card, module, "torch.export", differentiable=_gradient_flows(module, card, fixed),
                       quantized=rewritten > 0, fixed_batch=fixed)


def _static_batch(program: Any) -> int | None:
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in program.graph_signature.user_inputs:
            value = node.meta.get("val")
            if value is not None and isinstance(value.shape[0], int):
                return int(value.shape[0])
    return None


def _load_safetensors(card: ModelCard, data: bytes) -> LoadedModel:
    from safetensors import SafetensorError
    from safetensors.torch import load as load_safetensors

    from recourse.foreign.architectures import ARCHITECTURES
    from recourse.foreign.archive_bounds import safetensors_header_problem

    assert card.architecture is not None  # parse_card requires it for safetensors
    problem = safetensors_header_problem(data)  # the library would parse a header of up to 100 MB
    if problem:
        raise ForeignModelError(f"{card.weights_path}: {problem}")
    try:
        state = load_safetensors(data)
    except (SafetensorError, ValueError, OSError) as error:
        raise ForeignModelError(f"{card.weights_path}: not a readable safetensors file ({_gist(error)})") from None
    broken = [name for name, tensor in state.items() if tensor.is_floating_point() and not bool(tensor.isfinite().all())]
    if broken:
        raise ForeignModelError(f"{card.weights_path}: tensor {broken[0]} holds NaN or infinite values")
    module = ARCHITECTURES[card.architecture.name].build(card.architecture.config)
    try:
        module.load_state_dict(state)
    except RuntimeError as error:
        raise ForeignModelError(f"{card.weights_path}: does not match architecture {card.architecture.name} with "
                                f"config {card.architecture.config} in {card.source} ({_gist(error)})") from None
    module.eval().requires_grad_(False)
    return LoadedModel(card, module, "torch (safetensors)", differentiable=True, quantized=False)


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64}


class OnnxRuntimeModel:
    """An ONNX Runtime session called like a torch module: tensors in, tensors out, no
    gradients. ``calls`` and ``images`` count what the runtime was asked to do. ``data`` (the
    checked model) is kept until :meth:`bounded` makes the output check's session from it."""

    def __init__(self, session: Any, input_name: str, output_name: str, dtype: type, data: bytes | None = None,
                 bounded: bool = False) -> None:
        self.session, self.input_name, self.output_name, self.dtype = session, input_name, output_name, dtype
        self.calls = self.images = 0
        self._data, self._bounded = data, bounded

    def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
        from recourse.foreign.onnx_bounds import run_within_budget

        array = np.ascontiguousarray(inputs.detach().cpu().numpy().astype(self.dtype, copy=False))
        self.calls += 1
        self.images += int(array.shape[0])
        if self._bounded:
            (out,) = run_within_budget(self.session, [self.output_name], {self.input_name: array})
        else:
            (out,) = self.session.run([self.output_name], {self.input_name: array})
        return torch.from_numpy(np.asarray(out, dtype=np.float32))

    def bounded(self) -> OnnxRuntimeModel:
        """The same model in a session whose working memory is capped at a photo's budget
        (:mod:`recourse.foreign.onnx_bounds`), for the output check; this one lets go of its bytes."""
        data, self._data = self._data, None
        if data is None or self._bounded:
            return self
        return OnnxRuntimeModel(onnx_session(data, bounded=True), self.input_name, self.output_name, self.dtype,
                                bounded=True)


def onnx_session(data: bytes | str, threads: int | None = None, bounded: bool = False) -> Any:
    """An ONNX Runtime CPU session with as many threads as torch uses (the project's budget).

    A model given as bytes has no folder, and ONNX Runtime then resolves external data files
    against the working directory: it is given an empty one instead, so even a model that
    passed no check cannot read this machine's files (a path given as text keeps its own
    folder, which ONNX Runtime does not let external data leave). Constants are never folded
    (a few bytes of ConstantOfShape would be gigabytes before any check); ``bounded`` caps the
    session's working memory at a photo's budget (run it with ``onnx_bounds.run_within_budget``)."""
    import tempfile

    import onnxruntime as ort

    from recourse.foreign.onnx_bounds import DISABLED_OPTIMIZERS, use_probe_budget

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # warnings about unused initializers are noise to a user
    if bounded:
        use_probe_budget(options)
    session = functools.partial(ort.InferenceSession, sess_options=options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=DISABLED_OPTIMIZERS)
    if isinstance(data, str):
        return session(data)
    with tempfile.TemporaryDirectory(prefix="recourse-onnx-") as empty:
        options.add_session_config_entry("session.model_external_initializers_file_folder_path", empty)
        return session(data)


def _load_onnx(card: ModelCard, data: bytes) -> LoadedModel:
    from recourse.foreign.archive_checks import check_onnx_model

    # no external data, no tensor over a photo's budget for one image: refused before ORT reads any
    data = check_onnx_model(data, str(card.weights_path), list(input_shape(card, 1)))
    try:
        session = onnx_session(data)
    except Exception as error:  # onnxruntime raises its own Fail/InvalidGraph/... types
        raise ForeignModelError(f"{card.weights_path}: ONNX Runtime cannot load it ({_gist(error)})") from None
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if len(inputs) != 1:
        raise ForeignModelError(f"{card.weights_path}: the model takes {len(inputs)} inputs "
                                f"({', '.join(i.name for i in inputs)}); an attribute classifier takes one")
    (spec,) = inputs
    if spec.type not in _ORT_TYPES:
        raise ForeignModelError(f"{card.weights_path}: its input {spec.name!r} is {spec.type}; a float input is needed")
    names = [o.name for o in outputs]
    if card.output.name is not None and card.output.name not in names:
        raise ForeignModelError(f"{card.weights_path}: no output named {card.output.name!r} (its outputs: "
                                f"{', '.join(names)}); correct output.name in {card.source}")
    if card.output.name is None and len(names) > 1:
        raise ForeignModelError(f"{card.weights_path}: the model has {len(names)} outputs ({', '.join(names)}); "
                                f"name the one to read in output.name of {card.source}")
    output = card.output.name or names[0]
    shape = list(spec.shape)
    expected = list(input_shape(card, 1))
    for axis in (1, 2, 3):  # static dimensions must agree with the card before anything runs
        if isinstance(shape[axis], int) and shape[axis] != expected[axis]:
            raise ForeignModelError(f"{card.weights_path}: the model's input {spec.name!r} has shape {shape} but "
                                    f"its card says {card.input.layout} {expected[1:]}; correct input.size or "
                                    f"input.layout in {card.source}")
    out_shape = next(o.shape for o in outputs if o.name == output)
    if len(out_shape) == 2 and isinstance(out_shape[1], int) and out_shape[1] != card.output.count:
        raise _count_error(card, out_shape[1])
    fixed = shape[0] if isinstance(shape[0], int) else None
    nodes = _onnx_op_types(data)
    return LoadedModel(card, OnnxRuntimeModel(session, spec.name, output, _ORT_TYPES[spec.type], data), "onnxruntime",
                       differentiable=False, quantized=bool(nodes & {"QuantizeLinear", "QLinearConv", "ConvInteger",
                                                                     "MatMulInteger", "QLinearMatMul"}),
                       fixed_batch=fixed)


def _onnx_op_types(data: bytes) -> set[str]:
    """Operator types of an ONNX graph, or an empty set when the onnx package is absent."""
    try:
        import onnx
    except ImportError:
        return set()
    return {node.op_type for node in onnx.load_model_from_string(data).graph.node}


# --- checks ----------------------------------------------------------------------------------


def _gradient_flows(module: nn.Module, card: ModelCard, fixed: int | None) -> bool:
    """Whether a backward pass reaches the input: decided by trying, since an exported graph
    may hold any op without a gradient."""
    probe = torch.zeros(input_shape(card, fixed or 1), requires_grad=True)
    try:
        out = module(probe)
        if not isinstance(out, torch.Tensor) or not out.requires_grad:
            return False
        out.float().sum().backward()
    except RuntimeError:
        return False
    return probe.grad is not None


def run_model(loaded: LoadedModel, inputs: torch.Tensor) -> torch.Tensor:
    """The model's raw outputs ``(B, count)`` for prepared inputs, in chunks of a static batch
    size when the model has one (the last chunk padded by repeating its last image)."""
    size = loaded.fixed_batch
    if size is None or inputs.shape[0] == size:
        return _as_tensor(loaded, loaded.model(inputs))
    parts = []
    for start in range(0, inputs.shape[0], size):
        chunk = inputs[start:start + size]
        short = size - chunk.shape[0]
        if short:
            chunk = torch.cat([chunk, chunk[-1:].expand(short, *chunk.shape[1:])])
        parts.append(_as_tensor(loaded, loaded.model(chunk))[:size - short])
    return torch.cat(parts)


def _as_tensor(loaded: LoadedModel, out: Any) -> torch.Tensor:
    if isinstance(out, (tuple, list)) and len(out) == 1:
        out = out[0]
    if not isinstance(out, torch.Tensor):
        raise ForeignModelError(f"{loaded.card.weights_path}: the model returns {type(out).__name__}, not one "
                                "tensor of outputs")
    return out


def check_outputs(loaded: LoadedModel) -> None:
    """Run the model once on a blank image and check it returns ``(batch, card count)``."""
    card = loaded.card
    try:
        if isinstance(loaded.model, OnnxRuntimeModel):  # a black box's memory is only known by running it
            loaded = replace(loaded, model=loaded.model.bounded())
        with torch.no_grad():
            out = run_model(loaded, torch.zeros(loaded.input_shape(1)))
    except ForeignModelError:
        raise
    except MemoryError as error:
        raise ForeignModelError(f"{card.weights_path}: {error}") from None
    except Exception as error:
        raise ForeignModelError(f"{card.weights_path}: the model fails on a {list(loaded.input_shape(1))} input as its "
                                f"card describes ({_gist(error)}); check input.size and input.layout in "
                                f"{card.source} (a torch.export program needs a dynamic batch dimension)") from None
    if out.dim() != 2 or out.shape[0] != 1:
        raise ForeignModelError(f"{card.weights_path}: the model returns shape {list(out.shape)} for one image; "
                                "expected (batch, outputs)")
    if out.shape[1] != card.output.count:
        raise _count_error(card, int(out.shape[1]))


def _count_error(card: ModelCard, count: int) -> OutputCountError:
    return OutputCountError(
        f"{card.weights_path}: the model returns {count} numbers per image but {card.source} lists "
        f"{len(card.output.attributes)} attributes as {card.output.kind!r} ({card.output.count} numbers); correct "
        "output.attributes (one name per output, in order) or output.kind")


def _gist(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return (lines[0] if lines else type(error).__name__)[:300]
