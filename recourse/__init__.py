"""Auditing how compressed CelebA attribute classifiers change predictions and recourse.

What a notebook imports (``docs/api.md``)::

    import recourse

    auditor = recourse.Auditor(recourse.load_pair("ptq-int4"))
    result = auditor("face.jpg", attribute="Smiling")
    print(result.verdict)
    result.save_html("audit.html")

The names below are imported on first use (PEP 562), so that ``import recourse`` stays light:
the command line's ``--help`` and the app's start import this package before any torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "Auditor": "recourse.api",
    "Pair": "recourse.api",
    "load_pair": "recourse.api",
    "quantize": "recourse.api",
    "scan_folder": "recourse.api",
    "AuditResult": "recourse.audit.result",
    "AuditSettings": "recourse.audit.result",
    "product_settings": "recourse.audit.result",
    "audit_image": "recourse.audit.pipeline",
    "AuditStep": "recourse.audit.pipeline",
    "Student": "recourse.audit.paired",
    "ScanResult": "recourse.audit.scan_run",
    "CounterfactualConfig": "recourse.generation",
    "QuantizedModel": "recourse.compression",
    "audit_record": "recourse.render.audit_html",
}

__all__ = [
    "AuditResult", "AuditSettings", "AuditStep", "Auditor", "CounterfactualConfig", "Pair", "QuantizedModel",
    "ScanResult", "Student", "audit_image", "audit_record", "load_pair", "product_settings", "quantize",
    "scan_folder",
]

if TYPE_CHECKING:  # what type checkers and editors see; at run time, __getattr__ below
    from recourse.api import Auditor, Pair, load_pair, quantize, scan_folder
    from recourse.audit.paired import Student
    from recourse.audit.pipeline import AuditStep, audit_image
    from recourse.audit.result import AuditResult, AuditSettings, product_settings
    from recourse.audit.scan_run import ScanResult
    from recourse.compression import QuantizedModel
    from recourse.generation import CounterfactualConfig
    from recourse.render.audit_html import audit_record


def __getattr__(name: str):
    """A public name, imported from its module the first time it is read."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'recourse' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # read once: later reads find it here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
