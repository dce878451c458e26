"""One launch of each RMSNorm variant at one shape, side by side, for Nsight Compute.

Why: at 1024 rows of 4096 (bf16, 17 MB) the plain Triton kernel (the example's benchmarks/triton_peers.py)
takes about 9 % less time than this example's row kernel with the same launch shape (256
threads x 2 packs, one row per block, 8 blocks per SM). The graph timer only says *that*;
ncu says where the time goes (DRAM throughput, SM active cycles, achieved occupancy,
registers, executed instructions, blocks per SM):

    ncu --clock-control none --kernel-name regex:'rms_norm|triton' --section SpeedOfLight \\
        --section Occupancy --section LaunchStats \\
        python benchmarks/qwen3_8b/profile_norm.py --package-path PKG [--rows 1024] [--hidden 4096] [--fused]

Variants: the op's default, the row kernel forced to 512 / 256 / 128 threads (1 / 2 / 4
packs per thread for 4096 bf16; rows of 512 packs run the full-row instance) and the same
forced to the generic instance (hint 4), and the Triton peer; --fused profiles the fused residual
add + RMSNorm instead. Each is launched twice (the first launch compiles Triton and warms
the allocator; read the second one of each name). Without ncu the script only checks the
outputs against a float64 reference and prints the relative error. Exit code 2 without a GPU.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any, Callable


def variants(k: Any, triton_peers: Any, x: Any, r: Any, w: Any, eps: float) -> dict[str, Callable[[], Any]]:
    """r is None: plain RMSNorm; else the fused residual add + RMSNorm (rms_norm_tuned takes both)."""
    if r is None:
        default, triton = (lambda: k.rms_norm(x, w, eps)), (lambda: triton_peers.rms_norm(x, w, eps))
    else:
        default = lambda: k.fused_add_rms_norm(x, r, w, eps)[0]  # noqa: E731
        triton = lambda: triton_peers.fused_add_rms_norm(x, r, w, eps)[0]  # noqa: E731
    runs: dict[str, Callable[[], Any]] = {"default": default}
    for t in (512, 256, 128):
        runs[f"t={t}"] = lambda t=t: k.ops.rms_norm_tuned(x, r, w, eps, t, 0, 0, 0)[0]
        # hint 4: the generic row kernel where hint 0 runs the full-row instance (rows of 512 packs)
        runs[f"t={t} generic"] = lambda t=t: k.ops.rms_norm_tuned(x, r, w, eps, t, 0, 0, 4)[0]
    runs["triton"] = triton
    return runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--package-path", required=True, help="directory containing the built qwen3_8b_kernels")
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--fused", action="store_true", help="profile the fused residual add + RMSNorm")
    args = p.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("profile_norm.py needs a CUDA GPU", file=sys.stderr)
        return 2
    sys.path.insert(0, args.package_path)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "skills/cuda-kernels/examples/qwen3_8b/benchmarks"))
    k = importlib.import_module("qwen3_8b_kernels")
    triton_peers = importlib.import_module("triton_peers")

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(args.rows, args.hidden, device="cuda", dtype=torch.bfloat16, generator=g)
    r = torch.randn_like(x) if args.fused else None
    w = torch.randn(args.hidden, device="cuda", dtype=torch.bfloat16, generator=g)
    eps = 1e-6
    # The fused kernels normalize the sum rounded to bf16, as transformers does.
    h = (x + r).double() if r is not None else x.double()
    ref = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w.double()
    for name, run in variants(k, triton_peers, x, r, w, eps).items():
        try:
            for _ in range(2):
                out = run()
            torch.cuda.synchronize()
        except RuntimeError as exc:  # a forced launch shape this row length cannot take
            print(f"{name:10s} refused: {str(exc).splitlines()[0]}", flush=True)
            continue
        err = ((out.double() - ref).norm() / ref.norm()).item()
        print(f"{name:10s} rows={args.rows} hidden={args.hidden} fused={args.fused} rel err {err:.2e}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
