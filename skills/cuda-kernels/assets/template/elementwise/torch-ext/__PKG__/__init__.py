"""__NAME__: an elementwise-activation CUDA kernel built the kernel-builder way.

    y = f(x)        f: "gelu_tanh" (GELU, tanh approximation) or "silu"; fp32 math, one rounding

The formula is one function in kernel_src/elementwise.cu (apply<>); reference.py holds
the same formula in PyTorch. CUDA tensors in float32/float16/bfloat16 run the kernel;
everything else (CPU tensors, float64, inputs that need gradients) runs the reference.
"""

from __future__ import annotations

import torch

from . import reference
from ._fake import register_fake
from ._ops import ops

__all__ = ["elementwise", "reference"]

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def elementwise(x: torch.Tensor, activation: str = "gelu_tanh") -> torch.Tensor:
    """f(x) for any shape and strides; returns a new contiguous tensor of x's dtype."""
    reference.check_arguments(activation)
    needs_grad = x.requires_grad and torch.is_grad_enabled()  # the kernel has no backward
    if x.is_cuda and x.dtype in _KERNEL_DTYPES and not needs_grad:
        return ops.elementwise(x, activation)
    return reference.elementwise(x, activation)


# torch.compile traces with fake tensors: tell it what the op returns without running it.
def _elementwise_fake(input: torch.Tensor, activation: str) -> torch.Tensor:
    return input.new_empty(input.shape)  # contiguous, like the kernel's output


register_fake("elementwise", _elementwise_fake)
