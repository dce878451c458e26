"""The plain Triton peer of the benchmark: one program per row, a running (max, sum) per
lane over BLOCK-wide chunks of the row, fp32 math. What a Triton user writes first."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _lse_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * stride
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(m, x)
        finite = new_m != float("-inf")
        s = tl.where(finite, s * tl.exp(m - new_m) + tl.exp(x - new_m), 0.0)
        m = new_m
    big = tl.max(m, 0)
    total = tl.sum(tl.where(m != float("-inf"), s * tl.exp(m - big), 0.0), 0)
    out = tl.where(big == float("-inf"), big, big + tl.log(total))
    tl.store(out_ptr + row, out)


def logsumexp(x: torch.Tensor) -> torch.Tensor:
    """lse over the last dim of a 2-D CUDA tensor with a contiguous last dim (fp32 result)."""
    rows, cols = x.shape
    out = torch.empty(rows, device=x.device, dtype=torch.float32)
    block = min(triton.next_power_of_2(cols), 4096)
    _lse_kernel[(rows,)](x, out, x.stride(0), cols, BLOCK=block, num_warps=8)
    return out
