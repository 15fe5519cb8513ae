"""A straight-through form of a pt2e-quantized program, so gradients reach its input.

torchao's (and ``torch.ao``'s) pt2e ``convert_pt2e`` leaves quantized activations as pairs
``quantize_per_tensor → dequantize_per_tensor``; the first returns an int8 tensor, so autograd
stops there and the input gets no gradient. Each such pair is replaced by one function whose
forward runs the very same two ops (so every value, and hence every decision, is unchanged bit
for bit) and whose backward is the clipped straight-through estimator: the identity where the
value was inside the quantization grid, zero where it was clamped — the gradient QAT trains
with and the project's fake-quant variants give.
"""

from __future__ import annotations

import torch
from torch import fx

# The q/dq ops live in torch.ao's decomposed library; importing it registers them, which
# torch.export.load needs before it can resolve a quantized program's nodes.
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed ops)

_QD = torch.ops.quantized_decomposed
QUANTIZE = (_QD.quantize_per_tensor.default, _QD.quantize_per_tensor.tensor)
DEQUANTIZE = (_QD.dequantize_per_tensor.default, _QD.dequantize_per_tensor.tensor)


class _StraightThroughQDQ(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point, quant_min, quant_max, dtype):  # type: ignore[override]
        q = _QD.quantize_per_tensor(x, scale, zero_point, quant_min, quant_max, dtype)
        ctx.save_for_backward(_inside(x, scale, zero_point, quant_min, quant_max))
        return _QD.dequantize_per_tensor(q, scale, zero_point, quant_min, quant_max, dtype)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        (inside,) = ctx.saved_tensors
        return grad * inside, None, None, None, None, None


def _inside(x, scale, zero_point, quant_min, quant_max) -> torch.Tensor:
    """Whether ``x`` lies on the grid's span (a value exactly at an end still passes gradient)."""
    steps = x / scale + zero_point
    return (steps >= quant_min) & (steps <= quant_max)


def straight_through_qdq(x, scale, zero_point, quant_min, quant_max, dtype):
    """``dequantize(quantize(x))`` with the clipped straight-through gradient."""
    return _StraightThroughQDQ.apply(x, scale, zero_point, quant_min, quant_max, dtype)


def make_straight_through(module: fx.GraphModule) -> int:
    """Rewrite every activation ``quantize → dequantize`` pair of ``module`` in place; returns
    how many were rewritten (0 for a float program)."""
    graph = module.graph
    rewritten = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in DEQUANTIZE:
            continue
        source = node.args[0]
        if not isinstance(source, fx.Node) or source.op != "call_function" or source.target not in QUANTIZE:
            continue
        if node.kwargs or source.kwargs or tuple(node.args[1:]) != tuple(source.args[1:]):
            continue  # a requantization with other parameters: not a plain fake-quant pair
        with graph.inserting_before(node):
            replacement = graph.call_function(straight_through_qdq, tuple(source.args))
        replacement.meta = dict(node.meta)
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        if not source.users:
            graph.erase_node(source)
        rewritten += 1
    if rewritten:
        graph.lint()
        module.recompile()
    return rewritten
