"""PyTorch reference implementations: what diffusers 0.42.1's LTX-Video transformer computes.

Each function is the diffusers (or torch) expression itself, operation for operation and
dtype for dtype, so every call on CPU (where the package routes every call here) returns
what the diffusers expression it replaces returns, bit for bit. The patched transformer
block as a whole is not bit-identical in bf16/fp16: its gated residual adds are one
``torch.addcmul``, which rounds once where diffusers rounds ``y * gate`` before adding. The CUDA kernels compute the same math in
fp32 with a single rounding at the end; tests compare both against a float64 evaluation.

Sources (diffusers 0.42.1):
- ``models/normalization.py`` ``RMSNorm.forward`` (norm1/norm2: ``elementwise_affine=False``)
- ``torch.nn.RMSNorm`` (the attention's norm_q/norm_k, over all heads: inner_dim 2048, eps 1e-5)
- ``models/transformers/transformer_ltx.py`` ``LTXVideoTransformerBlock.forward`` (AdaLN,
  residual adds) and ``apply_rotary_emb`` (interleaved RoPE)
- ``models/activations.py`` ``GELU`` with ``approximate="tanh"`` (the FeedForward activation)
"""

from __future__ import annotations

import math

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
    "rope_tables",
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


def rope_tables(
    batch_size: int,
    num_frames: int,
    height: int,
    width: int,
    dim: int = 2048,
    rope_interpolation_scale: tuple[float, float, float] | None = (8 / 25, 32.0, 32.0),
    *,
    base_num_frames: int = 20,
    base_height: int = 2048,
    base_width: int = 2048,
    theta: float = 10000.0,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The (cos, sin) that ``LTXVideoRotaryPosEmbed`` returns for a latent video (patch size 1).

    float32, ``[batch_size, num_frames * height * width, dim]``. Per axis (frame, row, column)
    ``dim // 6`` frequencies ``theta ** linspace(0, 1) * pi / 2`` scale ``2 * coord - 1``, with
    coords divided by the base sizes (after ``rope_interpolation_scale``; LTXPipeline passes
    ``(8 / frame_rate, 32, 32)``, the default here is frame_rate 25); the angles are ordered
    frequency-major, axis-minor, each repeated twice (interleaved pairs), and ``dim % 6``
    leading entries are cos = 1, sin = 0 (2 of them for dim 2048). Provided so benchmarks and
    tests get LTX's real tables without importing diffusers.
    """
    grid_f = torch.arange(num_frames, dtype=torch.float32, device=device)
    grid_h = torch.arange(height, dtype=torch.float32, device=device)
    grid_w = torch.arange(width, dtype=torch.float32, device=device)
    grid = torch.stack(torch.meshgrid(grid_f, grid_h, grid_w, indexing="ij"), dim=0)
    grid = grid.unsqueeze(0).repeat(batch_size, 1, 1, 1, 1)
    if rope_interpolation_scale is not None:
        grid[:, 0:1] = grid[:, 0:1] * rope_interpolation_scale[0] * 1 / base_num_frames
        grid[:, 1:2] = grid[:, 1:2] * rope_interpolation_scale[1] * 1 / base_height
        grid[:, 2:3] = grid[:, 2:3] * rope_interpolation_scale[2] * 1 / base_width
    grid = grid.flatten(2, 4).transpose(1, 2)  # [B, S, 3]

    freqs = theta ** torch.linspace(
        math.log(1.0, theta), math.log(theta, theta), dim // 6, device=device, dtype=torch.float32
    )
    freqs = freqs * math.pi / 2.0
    freqs = freqs * (grid.unsqueeze(-1) * 2 - 1)  # [B, S, 3, dim // 6]
    freqs = freqs.transpose(-1, -2).flatten(2)  # [B, S, 3 * (dim // 6)], frequency-major
    cos = freqs.cos().repeat_interleave(2, dim=-1)
    sin = freqs.sin().repeat_interleave(2, dim=-1)
    if dim % 6 != 0:
        cos = torch.cat([torch.ones_like(cos[:, :, : dim % 6]), cos], dim=-1)
        sin = torch.cat([torch.zeros_like(cos[:, :, : dim % 6]), sin], dim=-1)
    return cos, sin
