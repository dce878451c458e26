"""The plain Triton elementwise kernel the benchmark measures the CUDA kernel against.

One program per 1024 elements of one row, no autotuning: what a straightforward Triton
kernel gets. It is a peer, not a reference, so the benchmark validates it against float64
like the kernel before timing it. Importing this module needs triton; without it the
benchmark leaves the peer out. TRITON_INTERPRET=1 runs it on CPU tensors (slowly), which
is how tests/test_triton_peer.py checks it without a GPU.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

_ACTIVATION_IDS = {"gelu_tanh": 0, "silu": 1}
_BLOCK = 1024


@triton.jit
def _kernel(x_ptr, y_ptr, x_row_stride, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < n
    v = tl.load(x_ptr + row * x_row_stride + cols, mask=inside, other=0.0).to(tl.float32)
    if ACT == 0:
        inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
        # tanh(z) = 2 / (1 + exp(-2z)) - 1, exact at the extremes (exp overflows to inf -> -1)
        y = 0.5 * v * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))
    else:
        y = v / (1.0 + tl.exp(-v))
    tl.store(y_ptr + row * n + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


def elementwise(x: torch.Tensor, activation: str = "gelu_tanh") -> torch.Tensor:
    """f(x); a contiguous tensor is one row, otherwise rows of the last dimension."""
    if x.is_contiguous():
        rows = x.reshape(1, -1)
    else:
        rows = x.reshape(-1, x.shape[-1])
        if rows.stride(-1) != 1:
            rows = rows.contiguous()
    out = torch.empty(rows.shape, dtype=x.dtype, device=x.device)
    if out.numel() > 0:
        grid = (rows.shape[0], triton.cdiv(rows.shape[1], _BLOCK))
        _kernel[grid](rows, out, rows.stride(0), rows.shape[1], ACT=_ACTIVATION_IDS[activation], BLOCK=_BLOCK,
                      num_warps=4)
    return out.view(x.shape)
