"""__NAME__: RMSNorm and fused residual-add + RMSNorm CUDA kernels, built the kernel-builder way.

    y = x * rsqrt(mean(x**2, dim=-1) + eps) * weight        (fp32 math, result in x.dtype)
    fused: s = x + residual (rounded to x.dtype); returns (rms_norm(s) * weight, s)

CUDA tensors in float32/float16/bfloat16 run the kernel; everything else (CPU tensors,
float64, a weight of another dtype, inputs that need gradients) runs the PyTorch
reference in `reference.py`, so callers never need to check where they are.
"""

from __future__ import annotations

import torch

from . import reference
from ._fake import register_fake
from ._ops import ops

__all__ = ["fused_add_rms_norm", "reference", "rms_norm"]

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _kernel_supports(x: torch.Tensor, *others: torch.Tensor | None) -> bool:
    # Shapes were checked by reference.check_arguments; here only what the kernel serves.
    if not x.is_cuda or x.dtype not in _KERNEL_DTYPES:
        return False
    present = [t for t in others if t is not None]
    if any(t.device != x.device or t.dtype != x.dtype for t in present):
        return False
    # The kernel has no backward; let autograd differentiate the reference instead.
    needs_grad = x.requires_grad or any(t.requires_grad for t in present)
    return not (needs_grad and torch.is_grad_enabled())


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None = None, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension of `x` (any leading dims, any strides).

    Returns a new contiguous tensor with x's shape and dtype. A weight that is not
    [x.shape[-1]] or a negative or non-finite eps is a ValueError on every device.
    """
    reference.check_arguments(x, weight, eps)
    if _kernel_supports(x, weight) and (weight is None or weight.is_contiguous()):
        return ops.rms_norm(x, weight, eps)
    return reference.rms_norm(x, weight, eps)


def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None = None,
                       eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(x + residual) * weight, x + residual), the sum rounded to x.dtype once.

    One read of x and residual, one write of each output: the residual stream update and
    the norm of a decoder layer in one pass. Returns new contiguous tensors.
    """
    reference.check_arguments(x, weight, eps)
    if residual.shape != x.shape:
        raise ValueError(f"rms_norm: residual must have the input's shape {list(x.shape)}, got {list(residual.shape)}")
    if _kernel_supports(x, residual, weight) and (weight is None or weight.is_contiguous()):
        out, s = ops.fused_add_rms_norm(x, residual, weight, eps)
        return out, s
    return reference.fused_add_rms_norm(x, residual, weight, eps)


# torch.compile traces with fake tensors: tell it what the ops return without running them.
# register_fake (in _fake.py) adds this build's namespace to the op name.
def _rms_norm_fake(input: torch.Tensor, weight: torch.Tensor | None, epsilon: float) -> torch.Tensor:
    return input.new_empty(input.shape)  # contiguous, like the kernel's output


def _fused_add_rms_norm_fake(input: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None,
                             epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    return input.new_empty(input.shape), input.new_empty(input.shape)


register_fake("rms_norm", _rms_norm_fake)
register_fake("fused_add_rms_norm", _fused_add_rms_norm_fake)
