"""__NAME__: a rotary position embedding (RoPE) CUDA kernel built the kernel-builder way.

    y = x * cos + rotate(x) * sin      rotate-half (Llama, Qwen) or interleaved (LTX-Video, GPT-J)

x is [batch, heads, seq, dim] (any strides: transformers' q/k after transpose(1, 2)) or
[batch, seq, dim]; cos/sin are [seq, dim] or [batch, seq, dim] in x's dtype. CUDA tensors
in float32/float16/bfloat16 run the kernel; everything else (CPU tensors, float64, tables
of another dtype, inputs that need gradients) runs the PyTorch reference in `reference.py`.
"""

from __future__ import annotations

import torch

from . import reference
from ._fake import register_fake
from ._ops import ops

__all__ = ["reference", "rope"]

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False) -> torch.Tensor:
    """Rotary embedding of x; returns a new contiguous tensor of x's shape and dtype."""
    reference.check_arguments(x, cos, sin)
    same = all(t.device == x.device and t.dtype == x.dtype for t in (cos, sin))
    needs_grad = any(t.requires_grad for t in (x, cos, sin)) and torch.is_grad_enabled()
    if x.is_cuda and x.dtype in _KERNEL_DTYPES and same and not needs_grad:
        return ops.rope(x, cos, sin, interleaved)
    return reference.rope(x, cos, sin, interleaved)


# torch.compile traces with fake tensors: tell it what the op returns without running it.
def _rope_fake(input: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool) -> torch.Tensor:
    return input.new_empty(input.shape)  # contiguous, like the kernel's output


register_fake("rope", _rope_fake)
