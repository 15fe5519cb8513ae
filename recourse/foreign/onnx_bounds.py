"""How much memory an ONNX model may make ONNX Runtime allocate, decided before and while it runs.

A few hundred bytes of ONNX can ask for gigabytes: ``ConstantOfShape`` of a constant shape,
``Expand``/``Tile``/``Range``/``Resize`` whose sizes come from constants or shape arithmetic, a
sparse constant of a huge dense shape. ONNX Runtime evaluates constant subgraphs while it
creates the session (constant folding), so such a model costs its gigabytes before any check of
ours could look at its outputs. Three bounds, each a different layer:

* :func:`size_problem`, before any session: every tensor's size is inferred with the input
  fixed to what the card declares (one image), shape arithmetic included (ONNX's data
  propagation), and no tensor may exceed :data:`MAX_TENSOR_BYTES` (what a photo may decode to).
  Text tensors are refused (their contents live outside ONNX Runtime's allocator, where no
  budget reaches, and a face classifier has no use for text), as are ``NonZero``/``Unique`` on
  inputs of unknown size (their working memory, up to 64 bytes per input element, is outside
  it too).
* :data:`DISABLED_OPTIMIZERS`: sessions never fold constants, so creating one allocates only the
  weights the file holds (other optimizations, fusions included, stay on).
* :func:`use_probe_budget` / :func:`run_within_budget`: the output check runs in a session
  whose working memory comes from one arena capped at :data:`PROBE_BUDGET_BYTES` (a photo's
  budget and a little more), so a size the static check could not see (one computed from the
  input's values) fails there instead of taking the machine's memory.

The audit's own runs are not bounded: a model whose memory depends on its input's values can
still pass the check on a blank image and ask for more on a face.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Iterator

from recourse.faces import MAX_DECODED_BYTES

MAX_TENSOR_BYTES = MAX_DECODED_BYTES  # one tensor for one image: no more than a photo may decode to
PROBE_BUDGET_BYTES = MAX_DECODED_BYTES + 16 * 2**20  # and the probe's whole working set, with some room
DISABLED_OPTIMIZERS = ["ConstantFolding"]  # ONNX Runtime's name for the transformer

# Initializers up to this many elements keep their values for the size inference (shapes,
# scales, repeats); larger ones (weights) are given to it as shapes only, so it copies no weights.
_VALUES_KEPT = 1024
_STRING_OPS = {"StringConcat", "StringSplit", "RegexFullMatch", "StringNormalizer", "LabelEncoder",
               "CategoryMapper", "Tokenizer", "TfIdfVectorizer", "ZipMap", "DictVectorizer"}
_OUTSIDE_ALLOCATOR = {"NonZero", "Unique"}  # working memory in proportion to the input, not from the arena
_BYTES_PER_INPUT_ELEMENT = 64  # NonZero: 8 bytes per coordinate, up to 8 axes; Unique: a map node each


def size_problem(model: Any, input_dims: list[int] | None) -> str | None:
    """Why ``model`` (an ``onnx.ModelProto``, its tensors already checked to be inside it) may
    allocate more than a photo's budget for one input of ``input_dims``; or None."""
    import onnx

    for message in protobuf_messages(model):
        if isinstance(message, onnx.TensorProto) and message.data_type == onnx.TensorProto.STRING:
            return f"tensor {message.name!r} holds text; {_NO_TEXT}"
        if isinstance(message, onnx.SparseTensorProto):
            dense = math.prod(message.dims) * _itemsize(message.values.data_type)
            if dense > MAX_TENSOR_BYTES or any(d < 0 for d in message.dims):
                return (f"sparse tensor {message.values.name!r} expands to shape {list(message.dims)}, more than "
                        f"the {_mb(MAX_TENSOR_BYTES)} a tensor may take; refused")
        if isinstance(message, onnx.NodeProto):
            if message.op_type in _STRING_OPS or any(a.name == "to" and a.i == onnx.TensorProto.STRING
                                                     for a in message.attribute):
                return f"node {_node(message)} makes text; {_NO_TEXT}"
    inferred = _inferred(model, input_dims)
    if inferred is None:
        sizes: dict[str, tuple[int, list[int] | None]] = {}
    else:
        sizes = _value_sizes(inferred)
        stored = _stored_names(model)  # the file's own bytes: as large as the file, no larger
        for name, (elem_type, dims) in sizes.items():
            if elem_type == onnx.TensorProto.STRING:
                return f"value {name!r} is text; {_NO_TEXT}"
            if name not in stored and dims is not None and math.prod(dims) * _itemsize(elem_type) > MAX_TENSOR_BYTES:
                return (f"value {name!r} takes {_mb(math.prod(dims) * _itemsize(elem_type))} (shape {dims}) for one "
                        f"image, more than the {_mb(MAX_TENSOR_BYTES)} a photo may decode to; refused (sizes that "
                        "constants or shape arithmetic ask for count too)")
    for message in protobuf_messages(model):
        if isinstance(message, onnx.NodeProto) and message.op_type in _OUTSIDE_ALLOCATOR and message.input:
            elem_type, dims = sizes.get(message.input[0], (0, None))
            if dims is None or math.prod(dims) * _BYTES_PER_INPUT_ELEMENT > MAX_TENSOR_BYTES:
                what = "of unknown size" if dims is None else f"of shape {dims}"
                return (f"node {_node(message)} ({message.op_type}) works on an input {what}; its working memory "
                        f"(up to {_BYTES_PER_INPUT_ELEMENT} bytes an element) is outside ONNX Runtime's budget, so "
                        f"its input must be known to stay within {_mb(MAX_TENSOR_BYTES)}; refused")
    return None


_NO_TEXT = ("text tensors live outside ONNX Runtime's memory budget and a face classifier has no use for them; "
            "refused")


def _inferred(model: Any, input_dims: list[int] | None) -> Any:
    """``model``'s graph with every value's type and shape inferred for one input of
    ``input_dims``, built without copying its weights; None when the inference fails (ONNX
    Runtime's own checks and the probe's budget remain)."""
    import onnx
    from onnx import helper

    light = onnx.ModelProto(ir_version=model.ir_version)
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    graph, source = light.graph, model.graph
    graph.node.extend(source.node)
    graph.output.extend(source.output)
    constants = {tensor.name for tensor in source.initializer}
    for tensor in source.initializer:
        if math.prod(tensor.dims) <= _VALUES_KEPT:
            graph.initializer.append(tensor)
        else:
            graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    for sparse in source.sparse_initializer:
        graph.input.append(helper.make_tensor_value_info(sparse.values.name, sparse.values.data_type,
                                                         list(sparse.dims)))
    inputs = [value for value in source.input if value.name not in constants]
    for value in inputs:
        copy = graph.input.add()
        copy.CopyFrom(value)
        if len(inputs) == 1 and input_dims is not None and copy.type.HasField("tensor_type"):
            shape = copy.type.tensor_type.shape
            declared = [d.dim_value if d.HasField("dim_value") else None for d in shape.dim]
            if len(declared) in (0, len(input_dims)):
                shape.ClearField("dim")
                for own, card in zip(declared or [None] * len(input_dims), input_dims):
                    shape.dim.add().dim_value = own if own is not None else card
    try:
        return onnx.shape_inference.infer_shapes(light, check_type=False, strict_mode=False, data_prop=True)
    except Exception:  # onnx raises InferenceError, ValidationError, RuntimeError, ...
        return None


def _value_sizes(model: Any) -> dict[str, tuple[int, list[int] | None]]:
    """Every typed value of ``model``'s graphs (subgraphs included): its element type and its
    dimensions, or None where any is unknown."""
    import onnx

    sizes: dict[str, tuple[int, list[int] | None]] = {}
    for message in protobuf_messages(model):
        if isinstance(message, onnx.GraphProto):
            for value in (*message.input, *message.output, *message.value_info):
                kind = value.type.WhichOneof("value")
                if kind == "tensor_type":
                    tensor = value.type.tensor_type
                    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
                    known = tensor.HasField("shape") and all(d is not None and d >= 0 for d in dims)
                    sizes[value.name] = (tensor.elem_type, dims if known else None)  # type: ignore[assignment]
                elif kind is not None and _holds_text(value.type):  # a sequence, map or optional of text
                    sizes[value.name] = (onnx.TensorProto.STRING, None)
            for tensor in message.initializer:
                sizes[tensor.name] = (tensor.data_type, list(tensor.dims))
    return sizes


def _holds_text(kind: Any) -> bool:
    import onnx

    return any((isinstance(m, onnx.TypeProto.Tensor) and m.elem_type == onnx.TensorProto.STRING)
               or (isinstance(m, onnx.TypeProto.Map) and m.key_type == onnx.TensorProto.STRING)
               for m in protobuf_messages(kind))


def _stored_names(model: Any) -> set[str]:
    """Values the file holds as bytes: initializers and the outputs of Constant nodes."""
    import onnx

    names: set[str] = set()
    for message in protobuf_messages(model):
        if isinstance(message, onnx.GraphProto):
            names.update(tensor.name for tensor in message.initializer)
            names.update(sparse.values.name for sparse in message.sparse_initializer)
        elif isinstance(message, onnx.NodeProto) and message.op_type == "Constant" and \
                message.domain in ("", "ai.onnx"):
            names.update(message.output)
    return names


def use_probe_budget(options: Any) -> None:
    """Make a session created with ``options`` draw its working memory from the one arena of
    :data:`PROBE_BUDGET_BYTES` (registered once per process; weights are held apart)."""
    import onnxruntime as ort

    global _arena_registered
    with _arena_lock:
        if not _arena_registered:
            info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
            # kSameAsRequested: the arena grows by what is asked, so the cap is what a run may hold
            ort.create_and_register_allocator(info, ort.OrtArenaCfg({"max_mem": PROBE_BUDGET_BYTES,
                                                                     "arena_extend_strategy": 1}))
            _arena_registered = True
    options.add_session_config_entry("session.use_env_allocators", "1")


class OverBudgetError(MemoryError):
    """A run that asked for more working memory than the probe's budget."""


def run_within_budget(session: Any, outputs: list[str], feeds: dict[str, Any]) -> list[Any]:
    """``session.run`` of a session made with :func:`use_probe_budget`, one run at a time (the
    arena is shared), its memory handed back after; :class:`OverBudgetError` when it needs more."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.log_severity_level = 4  # the refusal is ours to report, not a runtime error log
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    with _run_lock:
        try:
            return session.run(outputs, feeds, options)
        except Exception as error:
            if any(sign in str(error) for sign in ("bfc_arena", "Available memory of", "Failed to allocate memory")):
                raise OverBudgetError(f"the model needs more than {_mb(PROBE_BUDGET_BYTES)} of working memory for "
                                      f"one image (a photo's budget); refused") from None
            raise


_arena_lock, _run_lock = threading.Lock(), threading.Lock()
_arena_registered = False


def protobuf_messages(root: Any) -> Iterator[Any]:
    """Every protobuf message inside ``root`` (itself included), by the schema: so tensors in
    attributes, sparse tensors, subgraphs, functions and training graphs are all reached."""
    from google.protobuf.descriptor import FieldDescriptor
    from google.protobuf.message import Message

    stack = [root]
    while stack:
        message = stack.pop()
        yield message
        for field, value in message.ListFields():
            if field.type != FieldDescriptor.TYPE_MESSAGE:
                continue
            if isinstance(value, Message):
                stack.append(value)
            else:
                stack.extend(value.values() if hasattr(value, "values") else value)


def _itemsize(elem_type: int) -> int:
    from onnx import helper

    try:
        return max(1, helper.tensor_dtype_to_np_dtype(elem_type).itemsize)
    except Exception:  # types numpy does not have (bfloat16, float8, int4) are at most 2 bytes; say 8
        return 8


def _node(node: Any) -> str:
    return repr(node.name) if node.name else f"of type {node.op_type}"


def _mb(size: float) -> str:
    return f"{size / 2**20:,.0f} MB"
