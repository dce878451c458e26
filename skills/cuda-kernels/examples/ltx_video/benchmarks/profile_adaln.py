"""One launch of each RMSNorm variant at one shape, for Nsight Compute to compare.

Why: rms_norm_modulate moves the same bytes as rms_norm (x in, y out) yet read 68-75 % of
copy bandwidth where rms_norm read 87-95 % (README "Why AdaLN missed"). Holding
scale/shift in registers across rows (column-stationary kernel) and reading them late with
fewer registers (flag 4) each moved it by at most a few percent, so this script gives ncu
the kernels side by side - plain with and without weight, the default modulate op,
modulate with scale/shift read late and the pipelined modulate kernel - on identical x, to
read DRAM throughput, L1/L2 traffic, occupancy, executed instructions and stall reasons
instead of guessing:

    ncu --clock-control none --kernel-name regex:rms_norm \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \\
        --section WarpStateStats --section LaunchStats \\
        python profile_adaln.py --package-path PKG [--shape 1 8192 2048]

Runs without ncu too (it then only checks that the outputs agree with the reference).
Exit code 2 without a CUDA GPU.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--package-path", help="build_local.py output dir (else LTX_VIDEO_KERNELS_PATH)")
    p.add_argument("--shape", type=int, nargs=3, default=[1, 8192, 2048], metavar=("B", "S", "D"))
    args = p.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("profile_adaln.py needs a CUDA GPU", file=sys.stderr)
        return 2
    path = args.package_path or os.environ.get("LTX_VIDEO_KERNELS_PATH")
    if path:
        sys.path.insert(0, str(Path(path)))
    k = importlib.import_module("ltx_video_kernels")
    b, s, d = args.shape
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (2.0 * torch.randn(b, s, d, device="cuda", generator=g)).bfloat16()
    w = (1.0 + 0.4 * torch.randn(d, device="cuda", generator=g)).bfloat16()
    table = (0.3 * torch.randn(b, 1, 6, d, device="cuda", generator=g)).bfloat16()
    scale, shift = table[:, :, 1], table[:, :, 0]
    n = 16 // x.element_size()
    tpr, vpt = (d // n // 4, 4) if (d // n) % 4 == 0 and d // n // 4 % 32 == 0 else (d // n // 2, 2)
    runs = {
        "rms_norm (weight)": (lambda: k.rms_norm(x, w, 1e-6), lambda: k.reference.rms_norm(x, w, 1e-6)),
        "rms_norm (no weight)": (lambda: k.rms_norm(x, None, 1e-6), lambda: k.reference.rms_norm(x, None, 1e-6)),
        "rms_norm_modulate (default)": (lambda: k.rms_norm_modulate(x, None, scale, shift, 1e-6),
                                        lambda: k.reference.rms_norm_modulate(x, None, scale, shift, 1e-6)),
        f"rms_norm_modulate ({tpr}x{vpt}, late scale/shift)": (
            lambda: k.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, tpr, vpt, 0, k.ADALN_LATE),
            lambda: k.reference.rms_norm_modulate(x, None, scale, shift, 1e-6)),
        f"rms_norm_modulate ({tpr}x{vpt}, pipelined, 2 stages)": (
            lambda: k.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, tpr, vpt, 0, k.ADALN_PIPE2),
            lambda: k.reference.rms_norm_modulate(x, None, scale, shift, 1e-6)),
    }
    worst = 0.0
    for name, (kernel, reference) in runs.items():
        out = kernel()
        want = reference().float()
        err = ((out.float() - want).norm() / want.norm()).item()
        worst = max(worst, err)
        print(f"{name:<48} rel err vs reference {err:.2e}")
    torch.cuda.synchronize()
    return 0 if worst < 2e-2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
