"""__NAME__: a gated-activation (GLU) CUDA kernel built the kernel-builder way.

    gate, up = halves of x's last dimension (gate first or second)
    y = act(gate) * up        act: "silu" (SwiGLU), "gelu" (GEGLU, erf), "gelu_tanh"

CUDA tensors in float32/float16/bfloat16 run the kernel; everything else (CPU tensors,
float64, inputs that need gradients) runs the PyTorch reference in `reference.py`, so
callers never need to check where they are.
"""

from __future__ import annotations

import torch

from . import reference
from ._fake import register_fake
from ._ops import ops

__all__ = ["glu", "reference"]

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _kernel_supports(x: torch.Tensor) -> bool:
    if not x.is_cuda or x.dtype not in _KERNEL_DTYPES or x.dim() == 0 or x.shape[-1] % 2:
        return False
    # The kernel has no backward; let autograd differentiate the reference instead.
    return not (x.requires_grad and torch.is_grad_enabled())


def glu(x: torch.Tensor, activation: str = "silu", gate_first: bool = True) -> torch.Tensor:
    """act(gate) * up over the halves of the last dimension of `x` (any leading dims, any strides).

    Returns a new contiguous tensor shaped like x with the last dimension halved.
    """
    if activation not in reference.ACTIVATIONS:
        raise ValueError(f"glu: activation must be one of {sorted(reference.ACTIVATIONS)}, got {activation!r}")
    if _kernel_supports(x):
        return ops.glu(x, activation, gate_first)
    return reference.glu(x, activation, gate_first)


# torch.compile traces with fake tensors: tell it what the op returns without running it.
# register_fake (in _fake.py) adds this build's namespace to the op name.
def _glu_fake(input: torch.Tensor, activation: str, gate_first: bool) -> torch.Tensor:
    # The binding refuses an odd last dimension; so must the fake, or torch.compile traces a
    # shape the real op never returns.
    torch._check(input.dim() >= 1 and input.shape[-1] % 2 == 0,
                 lambda: f"glu: the last dimension must be even, got shape {tuple(input.shape)}")
    return input.new_empty((*input.shape[:-1], input.shape[-1] // 2))  # contiguous, like the kernel's output


register_fake("glu", _glu_fake)
