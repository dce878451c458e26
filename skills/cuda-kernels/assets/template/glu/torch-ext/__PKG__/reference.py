"""PyTorch reference for the __NAME__ kernels: the CPU path and the ground truth in tests."""

from __future__ import annotations

import torch
import torch.nn.functional as F

ACTIVATIONS = {
    "silu": F.silu,
    "gelu": F.gelu,  # exact (erf): diffusers' GEGLU
    "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
}


def glu(x: torch.Tensor, activation: str = "silu", gate_first: bool = True) -> torch.Tensor:
    """act(gate) * up over the two halves of the last dimension, computed in at least float32.

    Same rounding as the CUDA kernel: widen both halves, apply, multiply, round once to
    x.dtype. `gate_first` says which half is the gate (SwiGLU's fused gate/up projection:
    True; diffusers' GEGLU, `hidden, gate = proj(x).chunk(2, -1)`: False).
    """
    if activation not in ACTIVATIONS:
        raise ValueError(f"glu: activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    if x.dim() == 0 or x.shape[-1] % 2:
        raise ValueError(f"glu: the last dimension must be even (gate and up halves), got shape {tuple(x.shape)}")
    compute = torch.promote_types(x.dtype, torch.float32)
    first, second = x.to(compute).chunk(2, dim=-1)
    gate, up = (first, second) if gate_first else (second, first)
    return (ACTIVATIONS[activation](gate) * up).to(x.dtype).contiguous()
