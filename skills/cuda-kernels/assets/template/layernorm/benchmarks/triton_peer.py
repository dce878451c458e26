"""The plain Triton LayerNorm + AdaLN modulation the benchmark measures the CUDA kernel against.

One program per row, the whole row in one block, no autotuning: what a straightforward
Triton kernel gets. It is a peer, not a reference, so the benchmark validates it against
float64 like the kernel before timing it. Importing this module needs triton; without
it the benchmark leaves the peer out. TRITON_INTERPRET=1 runs it on CPU tensors (slowly),
which is how tests/test_triton_peer.py checks it without a GPU.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _row_kernel(x_ptr, w_ptr, b_ptr, sc_ptr, sh_ptr, y_ptr, x_row_stride, rows_per_mod, n_cols, eps,
                BLOCK: tl.constexpr, AFFINE: tl.constexpr, MODULATE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=inside, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(inside, x - mean, 0.0)
    y = d * tl.rsqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    if AFFINE:
        y = y * tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        y = y + tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    if MODULATE:
        m = (row // rows_per_mod) * n_cols
        y = y * (1.0 + tl.load(sc_ptr + m + cols, mask=inside, other=0.0).to(tl.float32))
        y = y + tl.load(sh_ptr + m + cols, mask=inside, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None,
               eps: float = 1e-5, scale: torch.Tensor | None = None, shift: torch.Tensor | None = None) -> torch.Tensor:
    """(layer_norm(x) * weight + bias) * (1 + scale) + shift; weight and bias together or
    neither, scale and shift together or neither (M rows each, as in reference.py)."""
    hidden = x.shape[-1]
    rows = x.reshape(-1, hidden)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    out = torch.empty((rows.shape[0], hidden), dtype=x.dtype, device=x.device)
    if rows.shape[0] > 0:
        modulate = scale is not None
        sc = scale.reshape(-1, hidden).contiguous() if modulate else rows
        sh = shift.reshape(-1, hidden).contiguous() if modulate else rows
        rows_per_mod = rows.shape[0] // sc.shape[0] if modulate else 1
        block = triton.next_power_of_2(hidden)
        warps = min(max(block * x.element_size() // 512, 1), 8)
        _row_kernel[(rows.shape[0],)](
            rows, weight if weight is not None else rows, bias if bias is not None else rows, sc, sh, out,
            rows.stride(0), rows_per_mod, hidden, eps,
            BLOCK=block, AFFINE=weight is not None, MODULATE=modulate, num_warps=warps,
        )
    return out.view(x.shape)
