"""PyTorch reference for the __NAME__ kernels: the CPU path and the ground truth in tests."""

from __future__ import annotations

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None = None, eps: float = 1e-6) -> torch.Tensor:
    """y = x * rsqrt(mean(x**2, -1) + eps) * weight, computed in at least float32.

    Same operation order and rounding as the CUDA kernel: widen, normalise, multiply by
    the widened weight, round once to x.dtype.
    """
    compute = torch.promote_types(x.dtype, torch.float32)
    xf = x.to(compute)
    y = xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.to(compute)
    return y.to(x.dtype).contiguous()
