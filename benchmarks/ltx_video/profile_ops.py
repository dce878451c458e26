"""One launch of each variant of an ltx_video op at one shape, for Nsight Compute to compare.

Why: guessing why a kernel loses to a peer costs GPU runs; this script gives ncu the kernels
side by side on identical inputs, to read DRAM throughput, occupancy, launch shape, executed
instructions and stall reasons instead (the AdaLN ops read fewer percent of copy bandwidth
than RMSNorm, repository evidence/ltx_video/HISTORY.md, "Why AdaLN missed"; torch.compile's fused add beat ours at 4 x 1024 x 2048,
"The lean fused add"; RoPE alone trails compile by 1-3 %):

    ncu --clock-control none --kernel-name regex:'rms_norm|rope|triton' \\
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \\
        python profile_ops.py --package-path PKG [--op modulate|add|rope|qk] [--shape 1 8192 2048] \\
                              [--compile] [--dump-compiled FILE]

--op modulate (default): plain norm with and without weight, the default modulate op, modulate
with scale/shift read late and the pipelined kernel. --op add: the default fused add +
AdaLN and its rows-kernel (4, 2, 1 chunks), lean (2, 1) and pipelined configurations.
--op rope: rope_interleaved's default (the narrow flat kernel at 4 elements per thread), its
per-row kernel, the flat kernel at 1 and 2 chunks per thread and the narrow one at 2 elements,
on LTX's fp32 tables. --op qk: rms_norm_rope_qk's default and its
one-chunk kernel plain and lean (flag 64), and two chunks per thread. --compile also launches
torch.compile of the same reference code (after a warm-up that ncu also sees: profile the
last launch of each kernel name, e.g. --launch-skip-before-match, or read the last one);
--dump-compiled writes inductor's generated code for it to FILE.
Runs without ncu too (it then only checks that the outputs agree with the reference).
Exit code 2 without a CUDA GPU. (Named profile_adaln.py until run 19, when rope and qk came in.)
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


def rope_runs(k, x, cos, sin) -> dict[str, Run]:
    want = lambda: k.reference.rope_interleaved(x, cos, sin)  # noqa: E731
    runs: dict[str, Run] = {"rope_interleaved (default)": (lambda: k.rope_interleaved(x, cos, sin), want)}
    for cpt, elems, what in ((0, 0, "per-row kernel"), (1, 0, "flat, 1 chunk"), (2, 0, "flat, 2 chunks"),
                             (1, 2, "narrow, 2 elements")):
        runs[f"rope_interleaved ({what})"] = (
            lambda cpt=cpt, elems=elems: k.rope_interleaved_with_config(x, cos, sin, cpt, elems), want)
    return runs


def qk_runs(k, q, kk, wq, wk, cos, sin) -> dict[str, Run]:
    ref = k.reference
    want = lambda: ref.rms_norm_rope_qk(q, kk, wq, wk, cos, sin, 1e-6)  # noqa: E731
    runs: dict[str, Run] = {
        "rms_norm_rope_qk (default)": (lambda: k.rms_norm_rope_qk(q, kk, wq, wk, cos, sin, 1e-6), want),
    }
    for chunks, flags, what in ((1, 0, "rows"), (1, k.QK_LEAN, "lean"), (2, 0, "rows")):
        tpr, vpt = row_config(q.shape[-1], q.element_size(), chunks)
        runs[f"rms_norm_rope_qk ({tpr}x{vpt}, {what})"] = (
            lambda tpr=tpr, vpt=vpt, flags=flags: k.rms_norm_rope_qk_with_config(
                q, kk, wq, wk, cos, sin, 1e-6, tpr, vpt, flags), want)
    return runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--package-path", help="build_local.py output dir (else LTX_VIDEO_KERNELS_PATH)")
    p.add_argument("--op", choices=("modulate", "add", "rope", "qk"), default="modulate")
    p.add_argument("--shape", type=int, nargs=3, default=[1, 8192, 2048], metavar=("B", "S", "D"))
    p.add_argument("--compile", action="store_true", help="also launch torch.compile of the reference")
    p.add_argument("--dump-compiled", metavar="FILE", help="write inductor's code for the compiled peer")
    args = p.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("profile_ops.py needs a CUDA GPU", file=sys.stderr)
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
    elif args.op in ("rope", "qk"):
        # LTX's tables for a latent video of s tokens (frames x rows x columns = s x 1 x 1)
        cos, sin = k.reference.rope_tables(b, s, 1, 1, dim=d, device="cuda")
        if args.op == "rope":
            operands = (x, cos, sin)
            runs = rope_runs(k, x, cos, sin)
            reference = lambda *a, eps: k.reference.rope_interleaved(*a)  # noqa: E731
        else:
            kk = (1.5 * torch.randn(b, s, d, device="cuda", generator=g)).bfloat16()
            wk = (1.0 + 0.4 * torch.randn(d, device="cuda", generator=g)).bfloat16()
            operands = (x, kk, w, wk, cos, sin)
            runs = qk_runs(k, x, kk, w, wk, cos, sin)
            reference = lambda *a, eps: k.reference.rms_norm_rope_qk(*a, eps)  # noqa: E731
    else:
        r = (0.7 * torch.randn(b, s, d, device="cuda", generator=g)).bfloat16()
        operands = (x, r, table[:, :, 5], None, table[:, :, 4], table[:, :, 3])
        runs = add_runs(k, x, r, table[:, :, 5], table[:, :, 4], table[:, :, 3])
        reference = k.reference.add_rms_norm_modulate
    if args.compile or args.dump_compiled:
        compiled = torch.compile(lambda *a: reference(*a, eps=1e-6))
        if args.dump_compiled:
            from torch._inductor.utils import run_and_get_code

            _, code = run_and_get_code(compiled, *operands)
            Path(args.dump_compiled).write_text("\n\n".join(code))
        runs["torch.compile of the reference"] = (lambda: compiled(*operands), lambda: reference(*operands, eps=1e-6))
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
