"""The app's audit of "Your models" in process: what its screen and its export show.

``app.use_cards`` then ``app.run_audit`` on the first gallery face with the app's default
settings, in process (not the browser), as a local user would press "Use these models" and
"Audit"; prints what the screen and the export show.

    python -m scripts.measurements.app_pair_check out/foreign-run/fp32-pt2 out/foreign-run/torchao-int8   # PYTHONPATH=torchao's
    python -m scripts.measurements.app_pair_check out/foreign-run/fp32-onnx out/foreign-run/ort-int8 --attribute Smiling
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np
from PIL import Image


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_card", help="the full-precision model's card ('' for the committed classifier)")
    parser.add_argument("variant_card", help="the compressed model's card")
    parser.add_argument("--attribute", default="Smiling")
    args = parser.parse_args(argv)
    import app

    if app.PUBLIC:
        parser.error("a public app (RECOURSE_PUBLIC=1) has no 'Your models'")
    started = time.perf_counter()
    dropdown, _, status = app.use_cards(args.model_card, args.variant_card, args.attribute)
    print(f"Use these models ({time.perf_counter() - started:.1f} s): {status} [{len(dropdown.choices)} offered]")
    face, caption = app.gallery_faces()[0]
    d = app.DEFAULTS
    started = time.perf_counter()
    final = list(app.run_audit(None, np.array(Image.open(face).convert("RGB")), app.VARIANTS[0], args.attribute,
                               next(iter(app.TARGETS)), d.finish_steps, d.cone_degrees, d.seed, d.margin, d.method,
                               d.edit_steps, d.sigma, args.model_card, args.variant_card,
                               progress=lambda *a, **k: None))[-1]
    record = json.loads(Path(final[app.export_json]).read_text())
    r = record["recourse"]
    print(f"face: {caption}; audit {time.perf_counter() - started:.1f} s wall")
    print("status:", final[app.status])
    print("verdict:", final[app.verdict].removeprefix("### "))
    print("chart:", re.search(r"<p><b>(.*?)</b></p>", final[app.chart]).group(1))
    print(f"variant {record['variant']} ({record['student_model']} decides), target {record['target']}, "
          f"{len(record['predicted_attributes'])} attributes predicted by both")
    print({k: r[k] for k in ("teacher_valid", "student_accepts_teacher", "student_valid", "teacher_cost",
                             "student_cost", "crg", "dirsim")}, "compared:", r["noise_floor"]["compared"])
    print("seconds:", record["seconds"], "missing:", record["missing"])
    print("exports:", final[app.export_json], final[app.export_html])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
