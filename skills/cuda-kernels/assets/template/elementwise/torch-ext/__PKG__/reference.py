"""PyTorch reference for the __NAME__ kernels: the CPU path and the ground truth in tests."""

from __future__ import annotations

import torch
import torch.nn.functional as F

# The kernel's formulas (kernel_src/elementwise.cu, apply<>); add a new one in both places.
ACTIVATIONS = {
    "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
    "silu": F.silu,
}


def check_arguments(activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"elementwise: activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")


def elementwise(x: torch.Tensor, activation: str = "gelu_tanh") -> torch.Tensor:
    """f(x) in at least float32, rounded once to x.dtype (as the kernel does)."""
    check_arguments(activation)
    compute = torch.promote_types(x.dtype, torch.float32)
    return ACTIVATIONS[activation](x.to(compute)).to(x.dtype).contiguous()
