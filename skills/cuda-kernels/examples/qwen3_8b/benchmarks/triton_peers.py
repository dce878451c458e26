"""Plain Triton RMSNorm and fused add + RMSNorm: the "what a straightforward Triton kernel
gets" peer in the benchmarks (one program per row, the whole row in one block).

Deliberately untuned: no row packing, no autotuning. For rows of 128 elements this is the
configuration that leaves the memory system mostly idle, which the CUDA kernel's packed
path is measured against.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_row(
    X, R, W, Y, S, stride_x, stride_r, stride_y, stride_s, N, eps,
    BLOCK: tl.constexpr, HAS_W: tl.constexpr, ADD: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    if ADD:
        r = tl.load(R + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        s = (x + r).to(S.dtype.element_ty)
        tl.store(S + row * stride_s + cols, s, mask=mask)
        x = s.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    y = x * rstd
    if HAS_W:
        y = y * tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)


def _launch(x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor | None, eps: float):  # noqa: ANN202
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    r2 = residual.reshape(-1, n) if residual is not None else x2
    y = torch.empty_like(x2)
    s = torch.empty_like(x2) if residual is not None else y
    block = triton.next_power_of_2(n)
    num_warps = min(max(block * x.element_size() // 512, 1), 8)
    if x2.shape[0] > 0:
        _rms_norm_row[(x2.shape[0],)](
            x2, r2, weight if weight is not None else x2, y, s,
            x2.stride(0), r2.stride(0), y.stride(0), s.stride(0), n, eps,
            BLOCK=block, HAS_W=weight is not None, ADD=residual is not None, num_warps=num_warps,
        )
    return y.view(x.shape), s.view(x.shape)


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    return _launch(x, None, weight, eps)[0]


def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    return _launch(x, residual, weight, eps)
