"""Auditing an auditor's own classifier: model cards (:mod:`.cards`), loaders that unpickle
nothing (:mod:`.loaders`), the adapter to the project's 64×64 → 40-logit contract
(:mod:`.adapter`), the straight-through form of pt2e-quantized programs
(:mod:`.straight_through`) and zeroth-order gradients for black boxes (:mod:`.blackbox`).

Import from the submodules; this package imports nothing heavy on its own."""
