"""The app's longer texts: its heading, the glossary, the budget a public app states, and notes."""

from __future__ import annotations

from recourse import faces
from recourse.audit.image_noise_floor import BOUNDARY_LOGIT, NOISE_FLOOR_COST
from recourse.ui import limits
from recourse.ui.settings import DEFAULTS

HEADING = ("## Recourse audit of a compressed face-attribute classifier\n"
           "Does the compressed model still accept the *recourse* — the smallest realistic change that flips "
           "an attribute — that the full-precision model gives, and would it suggest the same change?")

GALLERY_LABEL = "Gallery: public-domain portraits (sources: assets/gallery/SOURCES.md)"

BUDGET_NOTE = (f"This public app's budget: the denoised method at most {limits.MAX_EDIT_STEPS} denoiser steps "
               f"(optimiser steps through the face denoiser; at the default {DEFAULTS.edit_steps} a counterfactual "
               f"takes about 2 s on 2 cores, and an audit makes two), the walks at most {limits.MAX_STEPS} editing "
               f"steps and a cone of at least {limits.MIN_CONE:g}°; a margin of at most {limits.MAX_MARGIN:g}. An "
               f"audit stops after {limits.AUDIT_SECONDS:.0f} s, a scan after {limits.SCAN_SECONDS:.0f} s and at "
               f"most {limits.MAX_SCAN_EDIT_WORK} denoiser steps or {limits.MAX_SCAN_WORK} editing steps in all "
               f"(faces × steps); uploads of {faces.MAX_UPLOAD_BYTES // 2**20} MB a file and "
               f"{limits.UPLOAD_QUOTA // 2**20} MB per {limits.UPLOAD_WINDOW_S / 60:g} minutes.")

GLOSSARY = f"""
- **Recourse** `x'`: the smallest realistic change of the face that makes a model decide the target.
  `x'_f` is guided by the full-precision model, `x'_g` by the compressed one (same seed).
- The cards (each card's symbol shows when the pointer rests on its label):
  **Full-precision model accepts its own edit** (`V_f(x'_f)`); **Compressed model accepts the
  full-precision edit** (`V_g(x'_f)`; no = a *validity drop*); **Compressed model accepts its own
  edit** (`V_g(x'_g)`).
- **Size** of an edit, `c = mean |x' − x|` (0–1 scale). **Size gap (CRG)** `CRG_i = |c_g − c_f| / c_f`:
  how different the two recourses are in size (0 = equal). **Direction match (DirSim)**
  `DirSim_i = 100 · cos(x'_f − x, x'_g − x)`: 100 = same direction. Under the noise floor (a mean
  change under {NOISE_FLOOR_COST}, or a face within {BOUNDARY_LOGIT} logits of the full-precision
  boundary) neither is compared.
- **Stops** on each model's edit (logits past the decision boundary): the *boundary* (0, where the
  decision flips: verdicts there are mostly noise), the *benchmark's margin* (validated on held-out
  faces: the cards' numbers are read there) and the *visible stop* (chosen on validation as where
  judges trained on other faces stop seeing more change: the pictures; an edit inside a part's
  space has its attribute's own). The margin slider stands at the chosen attribute's stop and
  moves the pictures along the same edit; moved, it is your choice.
- **Artifact check** of each edit, under the cards: a black-and-white photo coloured in, colours
  the photo never shows (a teal mouth), or a face part unlike real faces' (a blob, a smear). An
  edit that fails it is said so with its reasons, and the judges' and dlib's ticks on it do not
  count. The status says which edit the pictures are: *edited inside a space of real face parts*
  (the mouth, the eyes, the whole face, the hair's colour) or *the model's pixel edit* (where no
  space models the part: bangs, wavy hair, ears).
- **Recourse path**: the straight line from the face to a model's whole edit, with both models'
  logits along it; where each model's decision flips tells how much more of the same change one
  needs than the other.
- **Attributions** (Captum): which pixels raise (red) or lower (blue) the attribute's logit;
  Spearman ρ and top-10% IoU compare the two models' maps.
- Definitions: `docs/metrics.md` in the repository.
"""

FAILURES_INTRO = ("Rank faces by how far the compressed model's recourse departs from the full-precision one: "
                  "+1 if it rejects the full-precision recourse, +1 if it finds none of its own, "
                  "+ (1 − DirSim_i/100)/2. Each face is audited with the settings of the Audit tab.")

YOUR_MODELS_SCAN_NOTE = ("Where **Your models** on the Audit tab names model cards, that pair is ranked in place of "
                         "the compressed variant (its attributes only).")

PUBLIC_CARDS_REFUSED = "This public app audits only its committed models; model cards are read in local mode only."
