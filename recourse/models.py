"""The committed models, loaded once and shared read-only by every audit and scan.

Loading a variant traces it with torch.fx, which patches ``nn.Module.__call__`` for the whole
process while it runs; the app loads every variant before any audit runs
(``recourse.ui.startup``: in the background once it serves, with audits waiting for it).
"""

from __future__ import annotations

import functools
import json
import logging
import re
from pathlib import Path

from torch import nn

from recourse.audit.paired import Student
from recourse.checkpoints import CONFIG_FILE, CheckpointError, load_classifier, verify_folder
from recourse.compression import METHODS, QuantizedModel, load_variant
from recourse.locations import generator_dir, judge_dir, shown, strong_judge_dir, teacher_dir, variants_dir

METHOD_VARIANTS: tuple[str, ...] = METHODS  # one variant per method, named after it, in the registry's order
# A variant's name is also its folder's: only names of this shape are ever looked up.
VARIANT_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def variant_bits(directory: Path) -> int | None:
    """Whole bits per weight of a built variant (4 for a mixed 3.99-bit one), None where its
    config is missing or unreadable."""
    try:
        return round(float(json.loads((directory / CONFIG_FILE).read_text())["bits_per_weight"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def list_variants(folder: Path) -> tuple[str, ...]:
    """Every variant an audit may name: each method's own (built or not: an unbuilt one says
    how to make it) and every other variant built in ``folder`` (harder budgets, other seeds),
    grouped by bits per weight, most bits first, then in the methods' order."""
    built = sorted(path.name for path in folder.iterdir() if path.is_dir() and VARIANT_NAME.fullmatch(path.name)
                   and (path / CONFIG_FILE).is_file()) if folder.is_dir() else []
    names = list(dict.fromkeys([*METHOD_VARIANTS, *built]))
    bits = {name: variant_bits(folder / name) for name in names}
    methods = {name: next((i for i, method in enumerate(METHOD_VARIANTS) if name == method
                           or name.startswith(method + "-")), len(METHOD_VARIANTS)) for name in names}
    # unbuilt ones last, in the methods' order; a name such as gptq-int2 sorts after gptq
    return tuple(sorted(names, key=lambda name: (bits[name] is None, -(bits[name] or 0), methods[name],
                                                 len(name), name)))


VARIANTS: tuple[str, ...] = list_variants(variants_dir())


class VariantNotFoundError(CheckpointError):
    """A known variant whose checkpoint folder has not been made (or committed) yet."""


@functools.lru_cache(maxsize=1)
def load_teacher() -> nn.Module:
    """The full-precision classifier under audit."""
    return load_classifier(teacher_dir())


@functools.lru_cache(maxsize=1)
def load_judge() -> nn.Module:
    """The independent, adversarially robust judge: it reports whether a counterfactual
    changes what a person sees, and never guides one."""
    return load_classifier(judge_dir()).eval()


@functools.lru_cache(maxsize=1)
def load_strong_judge() -> nn.Module:
    """The second, stronger robust judge (radius 3), where it has been trained: it only
    scores, never guides."""
    return load_classifier(strong_judge_dir()).eval()


def training_unfinished(directory) -> str | None:
    """"in training (epoch k of n)" where a classifier's folder holds a checkpoint that its training
    saved before its last epoch (training writes its best epoch so far after every epoch), else None."""
    from recourse.checkpoints import read_config

    config = read_config(directory)
    done, planned = len(config.get("history", [])), config.get("train_config", {}).get("epochs")
    return f"in training (epoch {done} of {planned})" if planned and done < planned else None


@functools.lru_cache(maxsize=1)
def load_generator():
    """The committed generator, its files checked against its manifest first (diffusers
    opens them itself); any failure to load it is a :class:`CheckpointError` naming the
    folder, as for the classifiers, never a library's raw error."""
    directory = generator_dir()
    if not directory.is_dir():
        raise CheckpointError(f"{shown(directory)}: the committed generator is missing; "
                              "train one with python -m recourse train-generator")
    verify_folder(directory)
    from recourse.generation import default_generator

    try:
        return default_generator()  # cached: loaded and checked once
    except CheckpointError:
        raise
    except (OSError, ValueError, KeyError, RuntimeError) as error:
        text = str(error).strip().splitlines()
        raise CheckpointError(f"{shown(directory)}: the generator does not load "
                              f"({text[0][:200] if text else type(error).__name__})") from None


def variant_is_built(variant: str) -> bool:
    return (variants_dir() / variant / CONFIG_FILE).is_file()


def _check_variant(variant: object) -> None:
    # before any cache lookup: a list from a request would raise "unhashable type" there
    if not isinstance(variant, str) or variant not in VARIANTS:
        shown_value = repr(variant) if len(repr(variant)) <= 40 else repr(variant)[:37] + "..."
        raise ValueError(f"unknown variant {shown_value}; expected one of {', '.join(VARIANTS)}")


def load_committed_variant(variant: str) -> QuantizedModel:
    """``checkpoints/variants/<variant>/`` as a :class:`QuantizedModel`."""
    _check_variant(variant)
    return _load_committed_variant(variant)


@functools.lru_cache(maxsize=len(VARIANTS))
def _load_committed_variant(variant: str) -> QuantizedModel:
    directory = variants_dir() / variant
    if not variant_is_built(variant):
        raise VariantNotFoundError(
            f"variant {variant!r} is not available: {shown(directory)}/ is missing. Make it with "
            f"python -m recourse quantize --method {variant} --data PATH")
    return load_variant(directory)


def load_student(variant: str) -> Student:
    """The committed variant as the recourse comparison sees it (twin and decider)."""
    return Student.from_variant(variant, load_committed_variant(variant))


def variant_status(variant: str) -> str | None:
    """``None`` when the committed variant loads; otherwise why not, for a list of variants
    that keeps working when one of them is broken: ``"not built yet"`` or ``"does not load:
    <why>"`` (never a path outside the project, never a traceback)."""
    _check_variant(variant)
    return _variant_status(variant)


@functools.lru_cache(maxsize=len(VARIANTS))
def _variant_status(variant: str) -> str | None:  # cached: a broken checkpoint is read once
    if not variant_is_built(variant):
        return "not built yet"
    try:
        load_student(variant)
    except CheckpointError as error:
        return f"does not load: {error}"
    except Exception:  # a failure nobody foresaw: the details go to the server's log only
        logging.getLogger(__name__).exception("variant %s does not load", variant)
        return "does not load: unexpected error (see the server's log)"
    return None


def clear_loaded() -> None:
    """Forget every loaded model and variant status, so that the next call reads the
    checkpoints again (after ``RECOURSE_HOME`` or a checkpoint changes)."""
    load_teacher.cache_clear()
    load_judge.cache_clear()
    load_strong_judge.cache_clear()
    load_generator.cache_clear()
    _load_committed_variant.cache_clear()
    _variant_status.cache_clear()
