"""The plain Triton gated activation the benchmark measures the CUDA kernel against.

One program per block of output elements of one row (a 2-D grid: rows x column blocks),
no autotuning: what a straightforward Triton kernel gets. It is a peer, not a reference,
so the benchmark validates it against float64 like the kernel before timing it.
Importing this module needs triton; without it the benchmark leaves the peer out.
TRITON_INTERPRET=1 runs it on CPU tensors (slowly), which is how tests/test_triton_peer.py
checks it without a GPU.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

_ACTIVATION_IDS = {"silu": 0, "gelu": 1, "gelu_tanh": 2}
_BLOCK = 1024


@triton.jit
def _glu_kernel(x_ptr, y_ptr, x_row_stride, d, gate_offset, up_offset, ACT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # row * stride passes 2^31 on large inputs
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < d
    base = x_ptr + row * x_row_stride
    g = tl.load(base + gate_offset + cols, mask=inside, other=0.0).to(tl.float32)
    u = tl.load(base + up_offset + cols, mask=inside, other=0.0).to(tl.float32)
    if ACT == 0:
        a = g / (1.0 + tl.exp(-g))
    elif ACT == 1:
        a = 0.5 * g * (1.0 + tl.erf(g * 0.7071067811865476))
    else:
        inner = 0.7978845608028654 * (g + 0.044715 * g * g * g)
        # tanh(z) = 2 / (1 + exp(-2z)) - 1, exact at the extremes (exp overflows to inf -> -1)
        a = 0.5 * g * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))
    tl.store(y_ptr + row * d + cols, (a * u).to(y_ptr.dtype.element_ty), mask=inside)


def glu(x: torch.Tensor, activation: str = "silu", gate_first: bool = True) -> torch.Tensor:
    """act(gate) * up over the halves of the last dimension; rows may be strided."""
    width = x.shape[-1]
    d = width // 2
    rows = x.reshape(-1, width)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    out = torch.empty((rows.shape[0], d), dtype=x.dtype, device=x.device)
    if out.numel() > 0:
        grid = (rows.shape[0], triton.cdiv(d, _BLOCK))
        _glu_kernel[grid](rows, out, rows.stride(0), d, 0 if gate_first else d, d if gate_first else 0,
                          ACT=_ACTIVATION_IDS[activation], BLOCK=_BLOCK, num_warps=4)
    return out.view(*x.shape[:-1], d)
