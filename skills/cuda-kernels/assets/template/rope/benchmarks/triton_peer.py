"""The plain Triton RoPE the benchmark measures the CUDA kernel against.

One program per (batch, head, position) row, the whole row in one block, no autotuning:
what a straightforward Triton kernel gets. It is a peer, not a reference, so the
benchmark validates it against float64 like the kernel before timing it. Importing this
module needs triton; without it the benchmark leaves the peer out. TRITON_INTERPRET=1
runs it on CPU tensors (slowly), which is how tests/test_triton_peer.py checks it.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _row_kernel(x_ptr, c_ptr, s_ptr, y_ptr, heads, seq, x_sb, x_sh, x_ss, cs_sb, cs_ss, dim,
                BLOCK: tl.constexpr, INTERLEAVED: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    pos = row % seq
    bh = row // seq
    b = bh // heads
    x_row = x_ptr + b * x_sb + (bh % heads) * x_sh + pos * x_ss
    cols = tl.arange(0, BLOCK)
    inside = cols < dim
    if INTERLEAVED:
        partner = cols ^ 1
        sign = tl.where(cols % 2 == 0, -1.0, 1.0)
    else:
        half = dim // 2
        partner = tl.where(cols < half, cols + half, cols - half)
        sign = tl.where(cols < half, -1.0, 1.0)
    x = tl.load(x_row + cols, mask=inside, other=0.0).to(tl.float32)
    xp = tl.load(x_row + partner, mask=inside, other=0.0).to(tl.float32)
    c = tl.load(c_ptr + b * cs_sb + pos * cs_ss + cols, mask=inside, other=0.0).to(tl.float32)
    s = tl.load(s_ptr + b * cs_sb + pos * cs_ss + cols, mask=inside, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * dim + cols, (x * c + sign * xp * s).to(y_ptr.dtype.element_ty), mask=inside)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False) -> torch.Tensor:
    """x [batch, heads, seq, dim] or [batch, seq, dim]; cos/sin [seq, dim] or [batch, seq, dim]."""
    x4 = x.unsqueeze(1) if x.dim() == 3 else x
    if x4.stride(-1) != 1:
        x4 = x4.contiguous()
    c = cos.unsqueeze(0) if cos.dim() == 2 else cos
    s = sin.unsqueeze(0) if sin.dim() == 2 else sin
    c, s = c.contiguous(), s.contiguous()
    batch, heads, seq, dim = x4.shape
    out = torch.empty(x4.shape, dtype=x.dtype, device=x.device)
    if out.numel() > 0:
        block = triton.next_power_of_2(dim)
        warps = min(max(block * x.element_size() // 512, 1), 8)
        _row_kernel[(batch * heads * seq,)](
            x4, c, s, out, heads, seq, x4.stride(0), x4.stride(1), x4.stride(2),
            0 if c.shape[0] == 1 else c.stride(0), c.stride(1), dim, BLOCK=block, INTERLEAVED=interleaved,
            num_warps=warps,
        )
    return out.view(x.shape)
