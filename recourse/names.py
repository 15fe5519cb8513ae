"""The names the command line offers before it runs anything: attributes, splits, methods.

Kept free of heavy imports (torch, diffusers, OpenCV) so that ``recourse --help`` and
argument errors answer at once; the modules that use these names import them from here.
``METHODS`` and ``STOP_SEARCHES`` repeat what the compression registry and the generator
define (tests/test_cli_install.py checks that they agree).
"""

from __future__ import annotations

ATTRIBUTES: tuple[str, ...] = (
    "5_o_Clock_Shadow", "Arched_Eyebrows", "Attractive", "Bags_Under_Eyes", "Bald",
    "Bangs", "Big_Lips", "Big_Nose", "Black_Hair", "Blond_Hair", "Blurry", "Brown_Hair",
    "Bushy_Eyebrows", "Chubby", "Double_Chin", "Eyeglasses", "Goatee", "Gray_Hair",
    "Heavy_Makeup", "High_Cheekbones", "Male", "Mouth_Slightly_Open", "Mustache",
    "Narrow_Eyes", "No_Beard", "Oval_Face", "Pale_Skin", "Pointy_Nose",
    "Receding_Hairline", "Rosy_Cheeks", "Sideburns", "Smiling", "Straight_Hair",
    "Wavy_Hair", "Wearing_Earrings", "Wearing_Hat", "Wearing_Lipstick",
    "Wearing_Necklace", "Wearing_Necktie", "Young",
)

# The attributes a recourse task asks about by default (benchmark, recourse points, quality).
DEFAULT_ATTRIBUTES: tuple[str, ...] = ("Smiling", "Young", "Male", "Eyeglasses")
# The generator is judged on these: the four above and four more, global and local.
QUALITY_ATTRIBUTES: tuple[str, ...] = (*DEFAULT_ATTRIBUTES, "Blond_Hair", "Bangs", "Mouth_Slightly_Open", "Heavy_Makeup")
# The benchmark's held-out tasks: attributes no counterfactual-aware method saw recourse
# points of (those are made on DEFAULT_ATTRIBUTES only).
HELD_OUT_ATTRIBUTES: tuple[str, ...] = ("Blond_Hair", "Bangs", "Mouth_Slightly_Open", "Heavy_Makeup", "Black_Hair",
                                        "Wavy_Hair", "High_Cheekbones", "Wearing_Lipstick")

SPLITS: tuple[str, ...] = ("train", "val", "test", "all")

# recourse.compression.METHODS, in its registration order (the order of every table).
METHODS: tuple[str, ...] = ("ptq-int8", "ptq-int4", "gptq", "cf-ptq", "cfq-qat", "mixedprec-qat", "kd-quant",
                            "prune-quant")
# recourse.generation.STOP_SEARCHES
STOP_SEARCHES: tuple[str, ...] = ("interpolate", "bisect")
# recourse.generation.METHODS (the counterfactual methods), in registration order
COUNTERFACTUAL_METHODS: tuple[str, ...] = ("denoised", "region-space", "pca-walk", "pca-walk-cone")
# recourse stability's checks: one pixel nudged by 1/255, and other memory layouts, batches and orders
STABILITY_CHECKS: tuple[str, ...] = ("nudge", "layout")
