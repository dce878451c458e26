"""PyTorch reference implementations: what diffusers 0.42.1's LTX-Video transformer computes.

Each function is the diffusers (or torch) expression itself, operation for operation and
dtype for dtype, so a model patched to call this package produces bit-identical results on
CPU (where the package routes every call here). The CUDA kernels compute the same math in
fp32 with a single rounding at the end; tests compare both against a float64 evaluation.

Sources (diffusers 0.42.1):
- ``models/normalization.py`` ``RMSNorm.forward`` (norm1/norm2: ``elementwise_affine=False``)
- ``torch.nn.RMSNorm`` (the attention's norm_q/norm_k, over all heads: inner_dim 2048, eps 1e-5)
- ``models/transformers/transformer_ltx.py`` ``LTXVideoTransformerBlock.forward`` (AdaLN,
  residual adds) and ``apply_rotary_emb`` (interleaved RoPE)
- ``models/activations.py`` ``GELU`` with ``approximate="tanh"`` (the FeedForward activation)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = [
    "add_rms_norm_modulate",
    "gelu_tanh",
    "rms_norm",
    "rms_norm_modulate",
    "rms_norm_rope",
    "rms_norm_rope_qk",
    "rope_interleaved",
]


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """RMSNorm over the last dimension.

    ``weight=None``: diffusers ``RMSNorm(elementwise_affine=False)`` - the variance in fp32,
    ``x * rsqrt(var + eps)`` promoted to fp32, rounded once to x's dtype.
    With a weight: ``torch.nn.RMSNorm`` (``F.rms_norm``), which is what LTX's norm_q/norm_k
    are. (diffusers' own RMSNorm *with* a weight rounds to the weight's dtype before
    multiplying; LTX-Video does not use that variant.)
    """
    if weight is None:
        input_dtype = x.dtype
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return (x * torch.rsqrt(variance + eps)).to(input_dtype)
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def rms_norm_modulate(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """AdaLN as LTXVideoTransformerBlock writes it: ``norm(x) * (1 + scale) + shift``.

    scale/shift are ``[B, T, D]`` slices of the block's ``[B, T, 6, D]`` table (T = 1 for one
    timestep per sample, T = S for per-token timesteps); they broadcast against x.
    """
    return rms_norm(x, weight, eps) * (1 + scale) + shift


def add_rms_norm_modulate(
    x: torch.Tensor,
    residual: torch.Tensor,
    gate: torch.Tensor | None,
    weight: torch.Tensor | None,
    scale: torch.Tensor | None,
    shift: torch.Tensor | None,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The residual update followed by the next AdaLN norm, as the block writes them.

    ``h = residual + x * gate`` (``hidden_states + ff_output * gate_mlp``) or, with
    ``gate=None``, ``h = residual + x`` (``hidden_states + attn_hidden_states`` after attn2);
    returns ``(rms_norm(h) * (1 + scale) + shift, h)`` - without modulation when scale and
    shift are None.
    """
    h = residual + x * gate if gate is not None else residual + x
    normed = rms_norm(h, weight, eps)
    if scale is not None:
        normed = normed * (1 + scale) + shift
    return normed, h


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """diffusers ``GELU(approximate="tanh")`` after its projection: ``F.gelu(x, approximate="tanh")``."""
    return F.gelu(x, approximate="tanh")


def rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """diffusers ``transformer_ltx.apply_rotary_emb(x, (cos, sin))``.

    Consecutive pairs (x[2i], x[2i+1]) are (real, imaginary) parts:
    ``out = x * cos + rotated * sin`` with ``rotated = (-x[2i+1], x[2i])``, in fp32, rounded
    to x's dtype. diffusers unflattens dim 2 of a ``[B, S, C]`` tensor; this works on the
    last dim, which is the same thing for 3-D inputs.
    """
    x_real, x_imag = x.unflatten(-1, (-1, 2)).unbind(-1)
    x_rotated = torch.stack([-x_imag, x_real], dim=-1).flatten(-2)
    return (x.float() * cos + x_rotated.float() * sin).to(x.dtype)


def rms_norm_rope(
    x: torch.Tensor, weight: torch.Tensor | None, cos: torch.Tensor, sin: torch.Tensor, eps: float
) -> torch.Tensor:
    """``apply_rotary_emb(norm_q(x), (cos, sin))``: LTXVideoAttnProcessor's q (or k) path."""
    return rope_interleaved(rms_norm(x, weight, eps), cos, sin)


def rms_norm_rope_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    weight_q: torch.Tensor | None,
    weight_k: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both halves of the self-attention's ``norm_q``/``norm_k`` + ``apply_rotary_emb``."""
    return rms_norm_rope(q, weight_q, cos, sin, eps), rms_norm_rope(k, weight_k, cos, sin, eps)
