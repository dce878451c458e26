"""The plain Triton RMSNorm the benchmark measures the CUDA kernel against.

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
def _row_kernel(x_ptr, w_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, eps,
                BLOCK: tl.constexpr, HAS_WEIGHT: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # row * stride passes 2^31 on large inputs
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=inside, other=0.0).to(tl.float32)
    y = x * tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    if HAS_WEIGHT:
        y = y * tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """RMSNorm over the last dimension; rows may be strided, elements must be contiguous."""
    hidden = x.shape[-1]
    rows = x.reshape(-1, hidden)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    out = torch.empty((rows.shape[0], hidden), dtype=x.dtype, device=x.device)
    if rows.shape[0] > 0:
        block = triton.next_power_of_2(hidden)
        # About one 16-byte access per thread per row, 1-8 warps: Triton's usual choice for
        # a row that fits in one block.
        warps = min(max(block * x.element_size() // 512, 1), 8)
        _row_kernel[(rows.shape[0],)](
            rows, weight if weight is not None else rows, out, rows.stride(0), out.stride(0), hidden, eps,
            BLOCK=block, HAS_WEIGHT=weight is not None, num_warps=warps,
        )
    return out.view(x.shape)


@triton.jit
def _fused_kernel(x_ptr, r_ptr, w_ptr, y_ptr, s_ptr, x_row_stride, r_row_stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=inside, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * r_row_stride + cols, mask=inside, other=0.0).to(tl.float32)
    s = (x + r).to(s_ptr.dtype.element_ty)  # rounded to the dtype, then normalized
    tl.store(s_ptr + row * n_cols + cols, s, mask=inside)
    sf = s.to(tl.float32)
    y = sf * tl.rsqrt(tl.sum(sf * sf, axis=0) / n_cols + eps)
    y = y * tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                       eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(x + residual) * weight, x + residual), the sum rounded to the dtype."""
    hidden = x.shape[-1]
    rows, res = x.reshape(-1, hidden), residual.reshape(-1, hidden)
    rows = rows if rows.stride(-1) == 1 else rows.contiguous()
    res = res if res.stride(-1) == 1 else res.contiguous()
    out = torch.empty((rows.shape[0], hidden), dtype=x.dtype, device=x.device)
    s = torch.empty_like(out)
    if rows.shape[0] > 0:
        block = triton.next_power_of_2(hidden)
        warps = min(max(block * x.element_size() // 512, 1), 8)
        _fused_kernel[(rows.shape[0],)](rows, res, weight, out, s, rows.stride(0), res.stride(0), hidden, eps,
                                        BLOCK=block, num_warps=warps)
    return out.view(x.shape), s.view(x.shape)
