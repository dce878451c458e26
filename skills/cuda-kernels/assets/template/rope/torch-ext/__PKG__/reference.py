"""PyTorch reference for the __NAME__ kernels: the CPU path and the ground truth in tests."""

from __future__ import annotations

import torch


def check_arguments(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    """Refuse what the CUDA binding refuses, with the same words, on any device."""
    if x.dim() not in (3, 4):
        raise ValueError(f"rope: input must be [batch, seq, dim] or [batch, heads, seq, dim], got {list(x.shape)}")
    if x.shape[-1] % 2:
        raise ValueError(f"rope: the last dimension must be even, got {x.shape[-1]}")
    batch, seq, dim = x.shape[0], x.shape[-2], x.shape[-1]
    for name, t in (("cos", cos), ("sin", sin)):
        ok = (t.dim() == 2 and tuple(t.shape) == (seq, dim)) or (
            t.dim() == 3 and t.shape[0] in (1, batch) and tuple(t.shape[1:]) == (seq, dim))
        if not ok:
            raise ValueError(f"rope: {name} must be [seq, dim] or [batch, seq, dim] = [{batch}, {seq}, {dim}], "
                             f"got {list(t.shape)}")


def rotate(x: torch.Tensor, interleaved: bool) -> torch.Tensor:
    """rotate-half: [-x2, x1] over the halves; interleaved: (-x[2k+1], x[2k]) per pair."""
    if interleaved:
        pairs = x.unflatten(-1, (-1, 2))
        return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False) -> torch.Tensor:
    """x * cos + rotate(x) * sin in at least float32, rounded once to x.dtype.

    x: [batch, heads, seq, dim] (transformers' q/k) or [batch, seq, dim]; cos/sin:
    [seq, dim] or [batch, seq, dim] (transformers' position_embeddings: cat(freqs, freqs)
    for rotate-half; each frequency twice in a row for interleaved).
    """
    check_arguments(x, cos, sin)
    compute = torch.promote_types(x.dtype, torch.float32)
    c, s = cos.to(compute), sin.to(compute)
    if x.dim() == 4 and c.dim() == 3:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    xf = x.to(compute)
    return (xf * c + rotate(xf, interleaved) * s).to(x.dtype).contiguous()
