"""PyTorch reference for the __NAME__ kernels: the CPU path and the ground truth in tests."""

from __future__ import annotations

import math

import torch


def check_arguments(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> None:
    """Refuse what the CUDA binding refuses, with the same words, on any device.

    Without this a weight of shape [1] would broadcast silently on the reference path
    while the binding rejects it: the same call must not mean two things.
    """
    if x.dim() == 0:
        raise ValueError("rms_norm: input must have at least one dimension")
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != x.shape[-1]):
        raise ValueError(f"rms_norm: weight must have shape [{x.shape[-1]}], got {list(weight.shape)}")
    if not (math.isfinite(eps) and eps >= 0.0):
        raise ValueError(f"rms_norm: epsilon must be finite and >= 0, got {eps}")


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


def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None = None,
                       eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(s) * weight, s) with s = x + residual rounded to x.dtype, as the kernel does
    (and as transformers' bf16 decoder layers do before their norm)."""
    if residual.shape != x.shape:
        raise ValueError(f"rms_norm: residual must have the input's shape {list(x.shape)}, got {list(residual.shape)}")
    compute = torch.promote_types(x.dtype, torch.float32)
    s = (x.to(compute) + residual.to(compute)).to(x.dtype)
    return rms_norm(s, weight, eps), s.contiguous()
