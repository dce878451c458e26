"""__NAME__: a LayerNorm + AdaLN modulation CUDA kernel built the kernel-builder way.

    n = (x - mean) / sqrt(var + eps)                 (over the last dimension, fp32 math)
    y = (n * weight + bias) * (1 + scale) + shift    (result rounded once to x.dtype)

DiT blocks (LTX-Video, PixArt, Flux) call it with weight = bias = None and per-sample
scale/shift from the timestep embedding. CUDA tensors in float32/float16/bfloat16 run the
kernel; everything else (CPU tensors, float64, operands of another dtype, inputs that
need gradients) runs the PyTorch reference in `reference.py`.
"""

from __future__ import annotations

import torch

from . import reference
from ._fake import register_fake
from ._ops import ops

__all__ = ["layer_norm", "reference"]

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _kernel_supports(x: torch.Tensor, *others: torch.Tensor | None) -> bool:
    if not x.is_cuda or x.dtype not in _KERNEL_DTYPES:
        return False
    present = [t for t in others if t is not None]
    if any(t.device != x.device or t.dtype != x.dtype for t in present):
        return False
    needs_grad = x.requires_grad or any(t.requires_grad for t in present)
    return not (needs_grad and torch.is_grad_enabled())  # the kernel has no backward


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
               eps: float = 1e-5, scale: torch.Tensor | None = None, shift: torch.Tensor | None = None) -> torch.Tensor:
    """LayerNorm over the last dimension of `x` with optional affine and AdaLN modulation.

    Returns a new contiguous tensor with x's shape and dtype. Bad shapes or a negative or
    non-finite eps are a ValueError on every device.
    """
    reference.check_arguments(x, weight, bias, scale, shift, eps)
    contiguous_params = all(t is None or t.is_contiguous() for t in (weight, bias))
    if _kernel_supports(x, weight, bias, scale, shift) and contiguous_params:
        return ops.layer_norm(x, weight, bias, scale, shift, eps)
    return reference.layer_norm(x, weight, bias, eps, scale, shift)


# torch.compile traces with fake tensors: tell it what the op returns without running it.
def _layer_norm_fake(input: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                     scale: torch.Tensor | None, shift: torch.Tensor | None, epsilon: float) -> torch.Tensor:
    return input.new_empty(input.shape)  # contiguous, like the kernel's output


register_fake("layer_norm", _layer_norm_fake)
