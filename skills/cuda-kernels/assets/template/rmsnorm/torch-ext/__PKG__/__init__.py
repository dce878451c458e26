"""__NAME__: an RMSNorm CUDA kernel built the kernel-builder way.

    y = x * rsqrt(mean(x**2, dim=-1) + eps) * weight        (fp32 math, result in x.dtype)

CUDA tensors in float32/float16/bfloat16 run the kernel; everything else (CPU tensors,
float64, a weight of another dtype, inputs that need gradients) runs the PyTorch
reference in `reference.py`, so callers never need to check where they are.
"""

from __future__ import annotations

import torch

from . import reference
from ._fake import register_fake
from ._ops import ops

__all__ = ["rms_norm", "reference"]

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _kernel_supports(x: torch.Tensor, weight: torch.Tensor | None) -> bool:
    # Shapes were checked by reference.check_arguments; here only what the kernel serves.
    if not x.is_cuda or x.dtype not in _KERNEL_DTYPES:
        return False
    if weight is not None and not (
        weight.device == x.device and weight.dtype == x.dtype and weight.is_contiguous()
    ):
        return False
    # The kernel has no backward; let autograd differentiate the reference instead.
    needs_grad = x.requires_grad or (weight is not None and weight.requires_grad)
    return not (needs_grad and torch.is_grad_enabled())


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None = None, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension of `x` (any leading dims, any strides).

    Returns a new contiguous tensor with x's shape and dtype. A weight that is not
    [x.shape[-1]] or a negative or non-finite eps is a ValueError on every device.
    """
    reference.check_arguments(x, weight, eps)
    if _kernel_supports(x, weight):
        return ops.rms_norm(x, weight, eps)
    return reference.rms_norm(x, weight, eps)


# torch.compile traces with fake tensors: tell it what the op returns without running it.
# register_fake (in _fake.py) adds this build's namespace to the op name.
def _rms_norm_fake(input: torch.Tensor, weight: torch.Tensor | None, epsilon: float) -> torch.Tensor:
    return input.new_empty(input.shape)  # contiguous, like the kernel's output


register_fake("rms_norm", _rms_norm_fake)
