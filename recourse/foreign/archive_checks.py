"""What a stranger's model file may hold, decided from its bytes before any loader sees them.

Both runtimes we load foreign models with do more than read tensors when a file asks them to:

* ``torch.export.load`` (torch 2.13, ``torch/export/pt2_archive/_package.py`` and
  ``torch/_export/serde/serialize.py``) unpickles a weight or constant whose config says
  ``use_pickle: true`` (``torch.load(weights_only=False)``), a legacy ``data/weights/<model>.pt``
  or ``data/constants/<model>.pt``, a torchbind object ``constants/custom_obj_*``
  (``torch._C._pickle_load_obj``), an opaque object ``constants/opaque_obj_*`` (``pickle.loads``)
  and the sample inputs ``data/sample_inputs/<model>.pt`` (``torch.load`` with
  ``weights_only=True``, and on failure again with ``weights_only=False``). It loads
  ``data/aotinductor/`` as a compiled shared library. Strings in ``models/<model>.json`` become
  code: symbolic sizes go through ``sympy.sympify`` (``eval``), names and targets are pasted into
  the Python source FX generates and ``exec``-s, ``guards_code`` is ``exec``-ed by
  ``ExportedProgram.module()``, a pytree context (``{"__enum__": …}``, a defaultdict's factory)
  imports any module, and a node may call any registered op, ``aten.from_file`` (reads a file)
  included. ``torch.export.load`` has no weights-only or no-pickle switch, so the check here is
  the whole defence and must cover each of these; the loader then hands torch only the archive
  rebuilt here from the checked entries (the bytes torch parses are the bytes checked), with the
  sample inputs emptied, so torch unpickles nothing.
* ONNX Runtime reads a tensor's ``external_data`` file, resolved against the working directory
  when the model is given as bytes: a ``location`` of ``README.md`` returns that file's bytes as
  weights. Any tensor anywhere in the model (initializers, sparse initializers, ``Constant`` and
  other attribute tensors, subgraphs of ``If``/``Loop``/``Scan``, functions, training graphs)
  may carry one, so the check walks every message of the model.

Each check is a pure function of the bytes; a refusal names the file and why.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
import zipfile
from typing import Any, Iterator

from recourse.foreign.archive_bounds import program_entries_problem
from recourse.foreign.errors import ForeignModelError, UnsafeModelError


# --- torch.export archives (.pt2) -------------------------------------------------------------

_MODEL = "model"  # the one program torch.export.save writes and torch.export.load returns
_CONFIGS = {"weights": f"data/weights/{_MODEL}_weights_config.json",
            "constants": f"data/constants/{_MODEL}_constants_config.json"}
_PROGRAM = f"models/{_MODEL}.json"
_SAMPLE_INPUTS = f"data/sample_inputs/{_MODEL}.pt"
# Entries torch.export.save writes, below the archive's root folder; nothing else is kept.
_FIXED_ENTRIES = {"archive_format", "archive_version", "byteorder", ".data/version", ".data/serialization_id",
                  _PROGRAM, _SAMPLE_INPUTS, *_CONFIGS.values()}
_PAYLOAD = {"weights": re.compile(r"data/weights/weight_\d+"), "constants": re.compile(r"data/constants/tensor_\d+")}
_EXTRA = re.compile(r"extra/[A-Za-z0-9_.-]+")
# What other entries are, for the message (torch.export.load would load each of these).
_KNOWN_DANGERS = (
    (re.compile(r"data/aotinductor/"), "compiled AOTInductor code (a shared library, run when loaded)"),
    (re.compile(r"data/constants/custom_obj_"), "a custom (torchbind) object, which loads by unpickling"),
    (re.compile(r"data/constants/opaque_obj_"), "an opaque object, which loads by unpickling"),
    (re.compile(r"data/(weights|constants)/[^/]*\.pt$"),
     "pickled tensors (the legacy format), which load by unpickling"),
    (re.compile(r".*\.(pkl|pickle|pt|pth|bin)$"), "a pickle, which can run code when loaded"),
)
_NAME = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*")  # FQNs and node names: safe to paste into Python


def check_program_archive(data: bytes, source: str) -> bytes:
    """The ``torch.export`` archive ``data`` rebuilt from its checked entries, for
    ``torch.export.load``; :class:`UnsafeModelError` when anything in it would be unpickled,
    run or imported. The sample inputs (always a pickle, only ever an example) are emptied, so
    torch unpickles nothing at all."""
    entries = _archive_entries(data, source)
    for kind, config_name in _CONFIGS.items():
        if config_name not in entries:
            raise ForeignModelError(f"{source}: not a loadable torch.export program ({config_name} is missing)")
        _check_payload_config(_json(entries[config_name], config_name, source), kind, entries, config_name, source)
    if _PROGRAM not in entries:
        raise ForeignModelError(f"{source}: not a loadable torch.export program ({_PROGRAM} is missing)")
    _check_program(_json(entries[_PROGRAM], _PROGRAM, source), source)
    for name in entries:
        if name.endswith(".json") and not name.startswith("extra/"):  # every config: no pickle, ever
            _refuse_pickle_requests(_json(entries[name], name, source), name, source)
    entries[_SAMPLE_INPUTS] = b""  # torch.export.load then sets example_inputs to None
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, content in entries.items():
            archive.writestr(f"{_MODEL}/{name}", content)
    return out.getvalue()


def _archive_entries(data: bytes, source: str) -> dict[str, bytes]:
    """The archive's entries below its root folder, each name checked and known."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise ForeignModelError(f"{source}: not a loadable torch.export program (not a zip archive: {error})") from None
    names = [info.filename for info in infos]
    roots = {name.split("/", 1)[0] for name in names}
    for name in names:
        _check_entry_name(name, source)
    if len(roots) != 1 or any("/" not in name for name in names):
        raise ForeignModelError(f"{source}: not a loadable torch.export program (its entries are not in one root "
                                "folder)")
    if len(set(names)) != len(names):
        # zip readers differ on which copy of a repeated name they return: ours must be torch's
        raise UnsafeModelError(f"{source}: holds the entry {_first_repeat(names)!r} twice; refused (torch could read "
                               "another copy than the one checked)")
    for name in names:
        _check_entry_known(name.split("/", 1)[1], source)
    # what the entries declare is bounded before any is read: overlapping entries read one block many times
    problem = program_entries_problem(data, infos, archive.start_dir)
    if problem:
        raise UnsafeModelError(f"{source}: {problem}; refused")
    entries: dict[str, bytes] = {}
    for info in infos:
        name = info.filename.split("/", 1)[1]
        try:
            entries[name] = archive.read(info)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as error:
            raise ForeignModelError(f"{source}: entry {name!r} cannot be read ({error})") from None
    return entries


def _check_entry_name(name: str, source: str) -> None:
    if name.endswith("/"):
        raise UnsafeModelError(f"{source}: entry {name!r} is a folder entry, which torch.export.save never writes; "
                               "refused")
    parts = name.split("/")
    if name.startswith(("/", "\\")) or "\\" in name or "\0" in name or ".." in parts or "" in parts \
            or ":" in parts[0]:
        raise UnsafeModelError(f"{source}: entry {name!r} has an absolute or '..' path; refused")


def _check_entry_known(name: str, source: str) -> None:
    if name in _FIXED_ENTRIES or _EXTRA.fullmatch(name) or any(p.fullmatch(name) for p in _PAYLOAD.values()):
        return
    for pattern, what in _KNOWN_DANGERS:
        if pattern.match(name):
            raise UnsafeModelError(f"{source}: entry {name!r} is {what}; only plain tensor data is loaded")
    raise UnsafeModelError(f"{source}: entry {name!r} is not one torch.export.save writes; refused (only a "
                           "program, its configs and plain tensor data are loaded)")


def _json(content: bytes, name: str, source: str) -> Any:
    try:
        return json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ForeignModelError(f"{source}: {name} is not valid JSON ({error})") from None


def _refuse_pickle_requests(value: Any, name: str, source: str) -> None:
    for key, item in _items(value):
        if key == "use_pickle" and item is not False:
            raise UnsafeModelError(f"{source}: {name} asks for pickle (use_pickle: {json.dumps(item)}); only plain "
                                   "tensor data is loaded")


def _check_payload_config(config: Any, kind: str, entries: dict[str, bytes], name: str, source: str) -> None:
    """Every weight (or constant) is raw tensor data in its own checked entry, never a pickle."""
    _refuse_pickle_requests(config, name, source)
    table = config.get("config") if isinstance(config, dict) else None
    if not isinstance(table, dict):
        raise ForeignModelError(f"{source}: not a loadable torch.export program ({name} is not a payload config)")
    folder = _CONFIGS[kind].rsplit("/", 1)[0]
    for fqn, meta in table.items():
        if not isinstance(meta, dict) or not isinstance(meta.get("tensor_meta"), dict):
            raise UnsafeModelError(f"{source}: {name}: {fqn!r} is not plain tensor data; only plain tensor data is "
                                   "loaded")
        path = meta.get("path_name")
        if not isinstance(path, str) or not _PAYLOAD[kind].fullmatch(f"{folder}/{path}"):
            raise UnsafeModelError(f"{source}: {name}: {fqn!r} is stored as {path!r}, not as plain tensor data (a "
                                   "custom or opaque object loads by unpickling); only plain tensor data is loaded")
        if f"{folder}/{path}" not in entries:
            raise ForeignModelError(f"{source}: {name}: the data of {fqn!r} ({path}) is missing")
        _check_name(fqn, f"{name}: a {kind[:-1]} name", source)


# The program's JSON: which strings torch turns into code, and what each may be.

# Operators a node may call: registered ops of these namespaces, minus those that touch files.
_OP_NAMESPACES = {"aten", "prims", "quantized_decomposed", "quantized", "torchao", "higher_order"}
_FILE_OPS = {"from_file", "save", "load", "_print", "to_file"}
_HIGHER_ORDER = {"cond", "while_loop", "map_impl", "scan", "associative_scan", "wrap_with_set_grad_enabled",
                 "wrap_with_autocast", "invoke_subgraph", "auto_functionalized", "auto_functionalized_v2", "out_dtype"}
# Python-level targets the deserializer resolves and export's verifier accepts (symbolic sizes, grad mode).
_PLAIN_TARGETS = {f"_operator.{op}" for op in ("getitem", "add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                                "neg", "pos", "abs", "eq", "ne", "lt", "le", "gt", "ge", "and_",
                                                "or_", "not_", "lshift", "rshift")} | \
                 {f"math.{fn}" for fn in ("ceil", "floor", "trunc", "sqrt")} | \
                 {f"torch.{fn}" for fn in ("sym_int", "sym_float", "sym_ite", "sym_max", "sym_min", "sym_not",
                                           "sym_sqrt", "_sym_sqrt", "sym_sum")} | \
                 {"torch._C._set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled",
                  "torch.amp.autocast_mode._enter_autocast", "torch.amp.autocast_mode._exit_autocast"}

# ``sympy.sympify`` evaluates its text as Python: only sympy's printed form of a size is allowed
# (``Mul(Integer(2), Symbol('s0', positive=True, integer=True))``), no other name.
_SYMPY_NAMES = {
    "Symbol", "Integer", "Float", "Rational", "Add", "Mul", "Pow", "Mod", "Max", "Min", "Abs", "Eq", "Ne", "Lt",
    "Le", "Gt", "Ge", "Equality", "Unequality", "StrictLessThan", "StrictGreaterThan", "LessThan", "GreaterThan",
    "And", "Or", "Not", "Piecewise", "ExprCondPair", "ITE", "floor", "ceiling", "sqrt", "true", "false", "oo", "zoo",
    "nan", "Infinity", "NegativeInfinity", "IntInfinity", "NegativeIntInfinity", "int_oo", "One", "Zero",
    "NegativeOne", "Half", "BooleanTrue", "BooleanFalse", "True", "False", "None",
    # the functions the deserializer adds (torch.utils._sympy.functions)
    "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt", "FloorToInt", "CeilDiv", "LShift",
    "RShift", "PowByNatural", "FloatPow", "FloatTrueDiv", "IntTrueDiv", "IsNonOverlappingAndDenseIndicator",
    "TruncToFloat", "TruncToInt", "RoundToInt", "RoundDecimal", "ToFloat", "Identity", "OpaqueUnaryFn_sqrt",
    # assumptions and precision, as keyword arguments of Symbol and Float
    "positive", "negative", "nonnegative", "nonpositive", "nonzero", "zero", "integer", "real", "finite",
    "infinite", "rational", "even", "odd", "commutative", "precision",
}
# ``guards_code`` is exec-ed by ``ExportedProgram.module()``: comparisons of input sizes only.
_GUARD_NAMES = _SYMPY_NAMES | {"L", "size", "stride", "storage_offset", "dim", "math", "isnan", "isinf", "inf",
                               "and", "or", "not", "is", "in"}
_SYMBOL = re.compile(r"[a-z]{1,4}\d+")  # s0, u3, zuf0: export's symbol names
_PLAIN_STRING = re.compile(r"""(['"])[A-Za-z0-9_.+-]*\1""")  # '1.5' in Float('1.5', …), 's0', L['images']
_SYMPY_OPS = {"(", ")", ",", "+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">=", "=", "&", "|",
              "~"}  # "=" for keyword arguments; no ".", so no attribute of anything is reached
_GUARD_OPS = (_SYMPY_OPS - {"="}) | {"[", "]", "."}  # L['images'].size()[0]


def _check_program(program: Any, source: str) -> None:
    """Walk the serialized program: every string torch will evaluate, paste into generated code
    or import is checked against what an exported classifier needs."""
    if not isinstance(program, dict):
        raise ForeignModelError(f"{source}: {_PROGRAM} is not a serialized program")
    for code in program.get("guards_code") or []:
        _check_expression(code, _GUARD_NAMES, _GUARD_OPS, "a guard", source)
    _walk_program(program, (), source)


def _walk_program(value: Any, path: tuple[str, ...], source: str) -> None:
    key = path[-1] if path else ""
    if isinstance(value, dict):
        if key in ("metadata", "treespec_namedtuple_fields"):  # stack traces, type names: kept as text, never code
            return
        if key in ("as_custom_obj", "custom_obj") or (key == "custom_obj_values" and value):
            raise UnsafeModelError(f"{source}: the program uses a custom (torchbind) object, which loads by "
                                   "unpickling; only plain tensor data is loaded")
        if isinstance(value.get("target"), str) and "inputs" in value:  # a node
            _check_target(value["target"], source)
        for child_key, child in value.items():
            _check_name(str(child_key), "a key in " + _PROGRAM, source)
            _walk_program(child, (*path, str(child_key)), source)
    elif isinstance(value, list):
        for child in value:
            _walk_program(child, path, source)
    elif isinstance(value, str):
        if key in ("as_string", "as_strings", "torch_version", "guards_code"):
            return  # string arguments are repr()-ed into code; guards are checked above
        if key == "target":
            return  # checked with its node
        if key == "as_operator":
            _check_target(value, source)
        elif key == "expr_str":
            _check_expression(value, _SYMPY_NAMES, _SYMPY_OPS, "a symbolic size", source)
        elif key in ("in_spec", "out_spec"):
            _check_treespec(value, source)
        else:
            _check_name(value, f"{'.'.join(path) or 'a value'}", source)


def _check_target(target: str, source: str) -> None:
    if target in _PLAIN_TARGETS:
        return
    # torch.ops.<namespace>.<op>.<overload>, or torch.ops.higher_order.<op>
    parts = target.split(".")
    if len(parts) in (4, 5) and parts[:2] == ["torch", "ops"] and all(_NAME.fullmatch(p) for p in parts[2:]) \
            and not any(p.startswith("__") for p in parts):
        namespace, op = parts[2], parts[3]
        if (len(parts) == 5 and namespace in _OP_NAMESPACES - {"higher_order"} and op not in _FILE_OPS) or \
                (len(parts) == 4 and namespace == "higher_order" and op in _HIGHER_ORDER):
            return
    raise UnsafeModelError(f"{source}: the program calls {target!r}, which an exported classifier does not need "
                           "(it may run code or touch files); refused")


def _check_name(name: str, what: str, source: str) -> None:
    # FX pastes names and targets into the Python source it generates and exec-s
    if name and (not _NAME.fullmatch(name) or any(part.startswith("__") for part in name.split("."))):
        raise UnsafeModelError(f"{source}: {what} is {name[:80]!r}, not a plain name (torch would paste it into "
                               "generated code); refused")


def _check_expression(text: Any, names: set[str], ops: set[str], what: str, source: str) -> None:
    """Only the tokens of arithmetic on allowed names, numbers and plain strings, on one line:
    nothing an ``eval`` (or code built around the text) could use to reach a function or module."""
    problem = None
    if not isinstance(text, str) or len(text) > 10_000 or "\n" in text or "\r" in text:
        problem = "not a short one-line text"
    else:
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                kind, string = token.type, token.string
                if kind == tokenize.NAME and string not in names and not _SYMBOL.fullmatch(string):
                    problem = f"the name {string!r}"
                elif kind == tokenize.OP and string not in ops:
                    problem = f"the operator {string!r}"
                elif kind == tokenize.STRING and not _PLAIN_STRING.fullmatch(string):
                    problem = f"the string {string[:40]!r}"
                elif kind not in (tokenize.NAME, tokenize.OP, tokenize.STRING, tokenize.NUMBER, tokenize.NEWLINE,
                                  tokenize.NL, tokenize.ENDMARKER):
                    problem = f"{tokenize.tok_name[kind]} {string[:40]!r}"
                if problem:
                    break
        except (tokenize.TokenError, SyntaxError) as error:
            problem = f"not an expression ({error})"
    if problem:
        raise UnsafeModelError(f"{source}: {what} in the program holds {problem} (torch evaluates it as Python); "
                               "refused")


def _check_treespec(text: str, source: str) -> None:
    """A pytree spec is JSON, its contexts JSON inside strings; decoding one imports a module it
    names for an enum (``{"__enum__": …, "fqn": "module:Name"}``) or a defaultdict's factory."""
    stack: list[Any] = [text]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            try:  # torch decodes every context with json.loads: so do we, escapes and all
                stack.append(json.loads(value))
            except (json.JSONDecodeError, RecursionError):
                pass
        elif isinstance(value, dict):
            if {"__enum__", "default_factory_module"} & value.keys() or value.get("type") == "collections.defaultdict":
                raise UnsafeModelError(f"{source}: an input/output spec of the program names a Python module to "
                                       "import (an enum or a defaultdict factory); refused")
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _items(value: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair of a JSON document, at any depth."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                yield str(key), child
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


def _first_repeat(names: list[str]) -> str:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return ""


# --- ONNX models ------------------------------------------------------------------------------

# A node that names a compiled-context file beside the model (ONNX Runtime's EP context cache).
_FILE_NODES = {"EPContext"}


def check_onnx_model(data: bytes, source: str, input_dims: list[int] | None = None) -> bytes:
    """The ONNX model ``data`` re-serialized from its checked parse, for ONNX Runtime;
    :class:`UnsafeModelError` when any tensor in it lives in an external data file (ONNX
    Runtime would read that file from this machine) or a node names a file, and
    :class:`ForeignModelError` when one input of ``input_dims`` would make it allocate more
    than a photo's budget (:mod:`recourse.foreign.onnx_bounds`)."""
    import onnx
    from google.protobuf.message import DecodeError

    from recourse.foreign.onnx_bounds import protobuf_messages, size_problem

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as error:
        raise ForeignModelError(f"{source}: ONNX Runtime cannot load it (not an ONNX model: {error})") from None
    # fields this onnx does not know are dropped, so the runtime gets nothing unchecked
    model.DiscardUnknownFields()
    for message in protobuf_messages(model):
        if isinstance(message, onnx.TensorProto) and (message.data_location == onnx.TensorProto.EXTERNAL
                                                      or len(message.external_data) > 0):
            location = next((entry.value for entry in message.external_data if entry.key == "location"), "")
            raise UnsafeModelError(f"{source}: tensor {message.name!r} uses external data file {location!r}; the "
                                   "model must hold its weights inside the .onnx file")
        if isinstance(message, onnx.NodeProto) and message.op_type in _FILE_NODES:
            raise UnsafeModelError(f"{source}: node {message.name!r} is an {message.op_type} node, which names a "
                                   "file beside the model; refused")
    problem = size_problem(model, input_dims)
    if problem:
        raise ForeignModelError(f"{source}: {problem}")
    return model.SerializeToString()
