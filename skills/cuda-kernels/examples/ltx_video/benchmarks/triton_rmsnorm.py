"""A plain Triton RMSNorm: the "what a competent first Triton kernel gets" peer.

One program per row, the whole row in one block (BLOCK = next power of two of D), fp32
math, one rounding - the textbook layout, no tuning beyond the usual warp-count rule.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_row(x_ptr, w_ptr, y_ptr, row_stride, d, eps, HAS_WEIGHT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < d
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / d + eps)
    y = x * rstd
    if HAS_WEIGHT:
        y = y * tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * d + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    rows = x2.shape[0]
    if rows == 0:
        return y
    block = triton.next_power_of_2(d)
    num_warps = min(max(block // 256, 1), 8)
    _rms_norm_row[(rows,)](
        x2, weight if weight is not None else x2, y, x2.stride(0), d, eps,
        HAS_WEIGHT=weight is not None, BLOCK=block, num_warps=num_warps,
    )
    return y
