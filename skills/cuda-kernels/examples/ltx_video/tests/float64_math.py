"""The exact-math oracle for the tests: every op evaluated in float64.

Written from the formulas, independently of reference.py (which copies diffusers'
expressions and their dtype behaviour): both the CUDA kernels and reference.py are
judged against these.
"""

from __future__ import annotations

import math

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    x = x.double()
    y = x / torch.sqrt(x.square().mean(-1, keepdim=True) + eps)
    return y * weight.double() if weight is not None else y


def modulate(y: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    return y * (1.0 + scale.double()) + shift.double()


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), evaluated as x / (1 + exp(-2u)).

    The same function; written this way because 1 + tanh(u) cancels to exactly 0 in float64
    once u < -19, which would make the oracle less exact than the kernel for x < -8.
    """
    x = x.double()
    u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))
    return x / (1.0 + torch.exp(-2.0 * u))


def rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """out[2i] = x[2i] cos[2i] - x[2i+1] sin[2i]; out[2i+1] = x[2i+1] cos[2i+1] + x[2i] sin[2i+1]."""
    x, cos, sin = x.double(), cos.double(), sin.double()
    x, cos, sin = torch.broadcast_tensors(x, cos, sin)
    out = torch.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * cos[..., 0::2] - x[..., 1::2] * sin[..., 0::2]
    out[..., 1::2] = x[..., 1::2] * cos[..., 1::2] + x[..., 0::2] * sin[..., 1::2]
    return out
