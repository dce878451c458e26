"""One launch of each RMSNorm-family variant at one shape, for Nsight Compute to compare.

Why: the AdaLN ops move the same bytes per element as RMSNorm yet read fewer percent of
copy bandwidth (README "Why AdaLN missed"), and at 4 x 1024 x 2048 torch.compile's fused
add + AdaLN beat ours while at 1 x 4096 x 2048 (same bytes) it lost. Guessing why costs
GPU runs; this script gives ncu the kernels side by side on identical inputs, to read DRAM
throughput, occupancy, launch shape, executed instructions and stall reasons instead:

    ncu --clock-control none --kernel-name regex:'rms_norm|triton' \\
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \\
        python profile_adaln.py --package-path PKG [--op modulate|add] [--shape 1 8192 2048] \\
                                [--compile] [--dump-compiled FILE]

--op modulate (default): plain norm with and without weight, the default modulate op, modulate
with scale/shift read late and the pipelined kernel. --op add: the default fused add +
AdaLN and its rows-kernel (4, 2, 1 chunks), lean (2, 1) and pipelined configurations. --compile also launches
torch.compile of the same reference code (after a warm-up that ncu also sees: profile the
last launch of each kernel name, e.g. --launch-skip-before-match, or read the last one);
--dump-compiled writes inductor's generated code for it to FILE.
Runs without ncu too (it then only checks that the outputs agree with the reference).
Exit code 2 without a CUDA GPU.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any, Callable

Run = tuple[Callable[[], Any], Callable[[], Any]]


def row_config(d: int, elem: int, chunks: int) -> tuple[int, int]:
    """threads x chunks per thread covering a row of d elements with 16-byte chunks."""
    n = 16 // elem
    return d // n // chunks, chunks


def modulate_runs(k, x, w, scale, shift) -> dict[str, Run]:
    tpr, vpt = row_config(x.shape[-1], x.element_size(), 4)
    ref = k.reference
    return {
        "rms_norm (weight)": (lambda: k.rms_norm(x, w, 1e-6), lambda: ref.rms_norm(x, w, 1e-6)),
        "rms_norm (no weight)": (lambda: k.rms_norm(x, None, 1e-6), lambda: ref.rms_norm(x, None, 1e-6)),
        "rms_norm_modulate (default)": (lambda: k.rms_norm_modulate(x, None, scale, shift, 1e-6),
                                        lambda: ref.rms_norm_modulate(x, None, scale, shift, 1e-6)),
        f"rms_norm_modulate ({tpr}x{vpt}, late scale/shift)": (
            lambda: k.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, tpr, vpt, 0, k.ADALN_LATE),
            lambda: ref.rms_norm_modulate(x, None, scale, shift, 1e-6)),
        f"rms_norm_modulate ({tpr}x{vpt}, pipelined, 2 stages)": (
            lambda: k.rms_norm_modulate_with_config(x, None, scale, shift, 1e-6, tpr, vpt, 0, k.ADALN_PIPE2),
            lambda: ref.rms_norm_modulate(x, None, scale, shift, 1e-6)),
    }


def add_runs(k, x, r, gate, scale, shift) -> dict[str, Run]:
    ref = k.reference
    want = lambda: ref.add_rms_norm_modulate(x, r, gate, None, scale, shift, 1e-6)  # noqa: E731
    runs: dict[str, Run] = {
        "add_rms_norm_modulate (default)": (
            lambda: k.add_rms_norm_modulate(x, r, gate, None, scale, shift, 1e-6), want),
    }
    for chunks, flags, what in ((4, 0, "rows"), (2, 0, "rows"), (2, k.ADALN_LEAN, "lean"), (1, 0, "rows"),
                                (1, k.ADALN_LEAN, "lean"), (4, k.ADALN_PIPE2, "pipelined")):
        tpr, vpt = row_config(x.shape[-1], x.element_size(), chunks)
        runs[f"add_rms_norm_modulate ({tpr}x{vpt}, {what})"] = (
            lambda tpr=tpr, vpt=vpt, flags=flags: k.add_rms_norm_modulate_with_config(
                x, r, gate, None, scale, shift, 1e-6, tpr, vpt, 0, flags), want)
    return runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--package-path", help="build_local.py output dir (else LTX_VIDEO_KERNELS_PATH)")
    p.add_argument("--op", choices=("modulate", "add"), default="modulate")
    p.add_argument("--shape", type=int, nargs=3, default=[1, 8192, 2048], metavar=("B", "S", "D"))
    p.add_argument("--compile", action="store_true", help="also launch torch.compile of the reference")
    p.add_argument("--dump-compiled", metavar="FILE", help="write inductor's code for the compiled peer")
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
    # LTX's [B, 1, 6, D] table: shift, scale, gate, shift_mlp, scale_mlp, gate_mlp as strided views
    table = (0.3 * torch.randn(b, 1, 6, d, device="cuda", generator=g)).bfloat16()
    if args.op == "modulate":
        operands: tuple = (x, None, table[:, :, 1], table[:, :, 0])
        runs = modulate_runs(k, x, w, table[:, :, 1], table[:, :, 0])
        reference = k.reference.rms_norm_modulate
    else:
        r = (0.7 * torch.randn(b, s, d, device="cuda", generator=g)).bfloat16()
        operands = (x, r, table[:, :, 5], None, table[:, :, 4], table[:, :, 3])
        runs = add_runs(k, x, r, table[:, :, 5], table[:, :, 4], table[:, :, 3])
        reference = k.reference.add_rms_norm_modulate
    if args.compile or args.dump_compiled:
        compiled = torch.compile(lambda *a: reference(*a, 1e-6))
        if args.dump_compiled:
            from torch._inductor.utils import run_and_get_code

            _, code = run_and_get_code(compiled, *operands)
            Path(args.dump_compiled).write_text("\n\n".join(code))
        runs["torch.compile of the reference"] = (lambda: compiled(*operands), lambda: reference(*operands, 1e-6))
    worst = 0.0
    for name, (kernel, want_fn) in runs.items():
        out, want = kernel(), want_fn()
        pairs = zip(out, want) if isinstance(out, tuple) else [(out, want)]
        for got, ref_out in pairs:
            ref_out = ref_out.float()
            err = ((got.float() - ref_out).norm() / ref_out.norm()).item()
            worst = max(worst, err)
            print(f"{name:<52} rel err vs reference {err:.2e}")
    torch.cuda.synchronize()
    return 0 if worst < 2e-2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
