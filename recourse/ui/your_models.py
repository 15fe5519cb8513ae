"""The Audit tab's "Your models" (local mode only): an auditor's own pair, given as two model
cards (``recourse.foreign``), audited and ranked in place of a committed variant.

A public app has no such control, and its audit and scan refuse card paths, so a stranger can
never make the server read a file of its choosing.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from recourse.data import ATTRIBUTES
from recourse.ui import limits
from recourse.ui.texts import PUBLIC_CARDS_REFUSED
from recourse.ui.errors import Refusal


@dataclass(frozen=True, eq=False)
class YourModels:
    """The controls of "Your models" (build_your_models)."""

    model_card: gr.Textbox
    variant_card: gr.Textbox
    use: gr.Button
    status: gr.Markdown


def build_your_models() -> YourModels:
    """The "Your models" accordion, where the layout stands (local mode only: a card path is a
    path on the server, never offered to strangers)."""
    with gr.Accordion("Your models (local only): two model cards", open=False, elem_id="your-models"):
        model_card = gr.Textbox(label="Full-precision model card (file or folder; empty: the "
                                      "committed classifier)", placeholder="out/foreign/fp32-pt2")
        variant_card = gr.Textbox(label="Compressed model card (file or folder)", placeholder="out/foreign/ort-int8")
        use = gr.Button("Use these models")
        status = gr.Markdown("Auditing the committed models.", label="Models in use")
    return YourModels(model_card, variant_card, use, status)


def card_pair(model_card: str | None, variant_card: str | None):
    """The pair of "Your models" (recourse.foreign.pairs), or None when no variant card is
    given. Refused outright in public mode: a card path is a path on the server."""
    model_card, variant_card = (str(v).strip() if v else "" for v in (model_card, variant_card))
    if not variant_card and not model_card:
        return None
    if limits.PUBLIC:
        raise Refusal(PUBLIC_CARDS_REFUSED)
    if not variant_card:
        raise Refusal("Give the compressed model's card too (the full-precision card alone has nothing to audit).")
    from recourse.foreign.loaders import ForeignModelError
    from recourse.foreign.pairs import cached_pair

    try:
        return cached_pair(model_card or None, variant_card)
    except (ForeignModelError, ValueError, OSError, ImportError) as error:
        raise Refusal(f"Your models: {error}") from None


def use_cards(model_card, variant_card, attribute, scan_attribute=None):
    """The "Use these models" event: load both cards and offer only the attributes both predict,
    on the Audit tab and on Find failures (which ranks the same pair)."""
    pair = card_pair(model_card, variant_card)
    offered = list(ATTRIBUTES) if pair is None else list(pair.attributes)
    dropdowns = [gr.Dropdown(choices=offered, value=value if value in offered else offered[0])
                 for value in (attribute, scan_attribute or attribute)]
    if pair is None:
        return *dropdowns, "Auditing the committed models."
    kind = "a black box: gradients estimated from forward passes" if pair.black_box is not None else "differentiable"
    return (*dropdowns,
            f"Auditing **{pair.name}** ({kind}) against "
            f"{'your full-precision model' if model_card else 'the committed classifier'}; "
            f"{len(pair.attributes)} attributes both predict. Find failures ranks this pair too. Clear both boxes "
            "to go back to the committed models.")


def black_box_passes(pair, before: int) -> str:
    """What a black-box variant's forward passes came to since ``before`` (empty for others)."""
    if pair is None or pair.black_box is None:
        return ""
    return f" · {pair.name} is a black box: {pair.black_box.forward_passes - before:,} forward passes"
