"""PyTorch reference for the __NAME__ kernels: the CPU path and the ground truth in tests."""

from __future__ import annotations

import math

import torch


def check_arguments(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                    scale: torch.Tensor | None, shift: torch.Tensor | None, eps: float) -> None:
    """Refuse what the CUDA binding refuses, with the same words, on any device."""
    if x.dim() == 0:
        raise ValueError("layer_norm: input must have at least one dimension")
    hidden = x.shape[-1]
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.shape[0] != hidden):
            raise ValueError(f"layer_norm: {name} must have shape [{hidden}], got {list(t.shape)}")
    rows = math.prod(x.shape[:-1])
    mods = {}
    for name, t in (("scale", scale), ("shift", shift)):
        if t is None:
            continue
        if t.dim() == 0 or t.shape[-1] != hidden:
            raise ValueError(f"layer_norm: {name} must end in {hidden}, got {list(t.shape)}")
        mods[name] = t.numel() // hidden
        if mods[name] == 0 or rows % mods[name]:
            raise ValueError(f"layer_norm: {name} has {mods[name]} rows, which do not divide the input's {rows} rows")
    if len(mods) == 2 and mods["scale"] != mods["shift"]:
        raise ValueError(f"layer_norm: scale has {mods['scale']} rows but shift has {mods['shift']}")
    if not (math.isfinite(eps) and eps >= 0.0):
        raise ValueError(f"layer_norm: epsilon must be finite and >= 0, got {eps}")


def _modulation(t: torch.Tensor, x: torch.Tensor, compute: torch.dtype) -> torch.Tensor:
    """t's M rows broadcast over x's rows split into M equal consecutive groups."""
    hidden = x.shape[-1]
    m = t.numel() // hidden
    return t.to(compute).reshape(m, 1, hidden)


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
               eps: float = 1e-5, scale: torch.Tensor | None = None, shift: torch.Tensor | None = None) -> torch.Tensor:
    """y = (layer_norm(x) * weight + bias) * (1 + scale) + shift in at least float32, rounded once.

    scale/shift hold M rows of [hidden] ([B, C] or [B, 1, C] for x = [B, T, C]): x's rows split
    into M equal consecutive groups, group g modulated by row g.
    """
    check_arguments(x, weight, bias, scale, shift, eps)
    compute = torch.promote_types(x.dtype, torch.float32)
    xf = x.to(compute)
    mean = xf.mean(dim=-1, keepdim=True)
    var = (xf - mean).square().mean(dim=-1, keepdim=True)
    y = (xf - mean) * torch.rsqrt(var + eps)
    if weight is not None:
        y = y * weight.to(compute)
    if bias is not None:
        y = y + bias.to(compute)
    if scale is not None or shift is not None:
        shape = y.shape
        groups = (scale if scale is not None else shift).numel() // x.shape[-1]
        y = y.reshape(groups, -1, x.shape[-1])
        if scale is not None:
            y = y * (1 + _modulation(scale, x, compute))
        if shift is not None:
            y = y + _modulation(shift, x, compute)
        y = y.reshape(shape)
    return y.to(x.dtype).contiguous()
