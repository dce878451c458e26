"""PyTorch reference implementations of the qwen3_8b_kernels ops.

They define what each kernel computes, serve CPU tensors and every case the CUDA kernels
do not take (see ``__init__``), and are what the tests compare against (run in float64).
Math runs in float32 (float64 for float64 inputs) with one rounding to the input dtype at
the end, like the kernels. transformers rounds some intermediates to the input dtype
(e.g. ``weight * hidden_states.to(input_dtype)``), so its bf16 results can differ from
these by about one bf16 ulp.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """y = x * rsqrt(mean(x^2, -1) + eps) * weight, returned in x.dtype."""
    acc = _acc_dtype(x.dtype)
    xf = x.to(acc)
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.to(acc)
    return y.to(x.dtype)


def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(s), s) with s = x + residual rounded to x.dtype, as transformers keeps it."""
    s = (x.to(_acc_dtype(x.dtype)) + residual.to(_acc_dtype(x.dtype))).to(x.dtype)
    return rms_norm(s, weight, eps), s


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up in float32, returned in gate.dtype."""
    acc = _acc_dtype(gate.dtype)
    return (F.silu(gate.to(acc)) * up.to(acc)).to(gate.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rope_one(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    acc = _acc_dtype(x.dtype)
    xf = x.to(acc)
    c = cos.to(acc).unsqueeze(1)  # [B, S, D] -> [B, 1, S, D]: broadcast over heads
    s = sin.to(acc).unsqueeze(1)
    return (xf * c + rotate_half(xf) * s).to(x.dtype)


def rope(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1), out of place.

    q: [B, Hq, S, D], k: [B, Hk, S, D], cos/sin: [B or 1, S, D].
    """
    return _rope_one(q, cos, sin), _rope_one(k, cos, sin)


def rope_(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    """In-place rope(): q and k are overwritten (views stay views)."""
    q_embed, k_embed = rope(q, k, cos, sin)
    q.copy_(q_embed)
    k.copy_(k_embed)


def qk_norm_rope_(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
) -> None:
    """Qwen3's q_norm / k_norm followed by apply_rotary_pos_emb, in place, one rounding.

    q: [B, S, Hq, D], k: [B, S, Hk, D] (heads before the transpose), cos/sin: [B or 1, S, D].
    """
    for x, w in ((q, q_weight), (k, k_weight)):
        acc = _acc_dtype(x.dtype)
        xf = x.to(acc)
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.to(acc)
        c = cos.to(acc).unsqueeze(2)  # [B, S, D] -> [B, S, 1, D]: broadcast over heads
        s = sin.to(acc).unsqueeze(2)
        x.copy_((y * c + rotate_half(y) * s).to(x.dtype))
