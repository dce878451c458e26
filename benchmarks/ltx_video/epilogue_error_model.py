#!/usr/bin/env python3
"""Error budget of an fp32 Linear + tanh-GELU, on the CPU: which error comes from where.

    python epilogue_error_model.py [--rows 48] [--seed 0]

The GPU test of ``layers.GELUTanhEpilogue`` (tests/examples/test_ltx_integration.py) compares
``torch._addmm_activation(..., use_gelu=True)`` - cuBLASLt's bias + GELU epilogue - with a
float64 ``gelu_tanh(x @ W.T + b)`` for LTX's feed-forward (K = 2048 -> N = 8192). On the H200
the epilogue's fp32 output had a relative L2 error of 2.69e-6 against float64, the unfused
cuBLAS GEMM + torch's GELU 9.45e-7. This script models the candidate causes with exact
arithmetic where the GPU rounds, on a sample of rows with the same distribution (x ~ randn,
nn.Linear(2048, 8192) initialization), and prints the relative L2 error each produces:

- fp32 GEMM with one rounding per multiply-add, accumulated sequentially over K (what one
  thread of a SIMT SGEMM does), and the same in 8 slices of 256 summed at the end;
- TF32 inputs (10-bit mantissa), the reduced-precision tensor-core path;
- the erf form of GELU instead of the tanh form;
- a tanh evaluated with a given relative error (uniform), e.g. PTX tanh.approx.f32's bound 2^-11.

Every number is the relative L2 error ||y - y64|| / ||y64|| over the sampled rows. CPU only;
takes about a minute for 48 rows.
"""

from __future__ import annotations

import argparse
import math


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=48, help="rows of x sampled (default 48)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch

    torch.manual_seed(args.seed)
    lin = torch.nn.Linear(2048, 8192)
    x = torch.randn(args.rows, 2048)
    w, b = lin.weight.detach(), lin.bias.detach()
    xd, wd, bd = x.double(), w.double(), b.double()
    c = math.sqrt(2 / math.pi)

    def gelu_tanh64(z: torch.Tensor) -> torch.Tensor:
        return 0.5 * z * (1 + torch.tanh(c * (z + 0.044715 * z**3)))

    pre64 = xd @ wd.T + bd
    exact = gelu_tanh64(pre64)

    def rel(y: torch.Tensor) -> float:
        return float(torch.linalg.vector_norm(y.double() - exact) / torch.linalg.vector_norm(exact))

    def fma_sum(k_lo: int, k_hi: int) -> torch.Tensor:
        # products are exact in float64 (24 + 24 bits); one rounding to fp32 per step = an FMA
        acc = torch.zeros(args.rows, 8192, dtype=torch.float32)
        for k in range(k_lo, k_hi):
            acc = (acc.double() + xd[:, k : k + 1] * wd[:, k]).float()
        return acc

    rows: list[tuple[str, float]] = []
    seq = (fma_sum(0, 2048).double() + bd).float()
    rows.append(("fp32 GEMM, sequential FMA over K, exact GELU", rel(gelu_tanh64(seq.double()).float())))
    sliced = fma_sum(0, 256)
    for s in range(1, 8):
        sliced = sliced + fma_sum(256 * s, 256 * (s + 1))
    sliced = (sliced.double() + bd).float()
    rows.append(("fp32 GEMM, 8 slices of 256 summed, exact GELU", rel(gelu_tanh64(sliced.double()).float())))

    def tf32(t: torch.Tensor) -> torch.Tensor:
        bits = t.view(torch.int32)
        return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)  # keep 10 mantissa bits, round

    tf = torch.nn.functional.linear(tf32(x), tf32(w), b)
    rows.append(("TF32 inputs, fp32 accumulation", rel(gelu_tanh64(tf.double()).float())))
    erf = 0.5 * seq.double() * (1 + torch.erf(seq.double() / math.sqrt(2)))
    rows.append(("erf GELU instead of tanh GELU", rel(erf.float())))
    z = seq.double()
    t = torch.tanh(c * (z + 0.044715 * z**3))
    gen = torch.Generator().manual_seed(args.seed + 1)
    for exp in (11, 14, 16, 17, 19):
        noisy = t * (1 + 2.0**-exp * (2 * torch.rand(t.shape, generator=gen, dtype=t.dtype) - 1))
        rows.append((f"sequential fp32 GEMM + tanh with rel. error up to 2^-{exp}", rel((0.5 * z * (1 + noisy)).float())))

    width = max(len(name) for name, _ in rows)
    print(f"K = 2048, N = 8192, {args.rows} rows; sqrt(K) * 2^-24 = {math.sqrt(2048) * 2**-24:.2e}")
    for name, err in rows:
        print(f"{name:<{width}}  {err:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
