#!/usr/bin/env python3
"""Wire custom CUDA kernels into a diffusers model: LTX-Video, end to end, in one run.

The pattern, in the order this script runs it:

  1. Build (or import) the kernel package: the skill's example project
     examples/ltx_video (kernel-builder layout) compiled by scripts/build_local.py.
  2. Build the model from its config with random weights (never download weights to test
     wiring): diffusers' LTXVideoTransformer3DModel(), 1.92 B parameters.
  3. Feed it what one denoising step of LTXPipeline feeds it: 49 frames at 512x768 are
     latents [B, 128, 7, 16, 24] packed to hidden_states [B, 2688, 128], plus the latent
     sizes for the 3-D RoPE and the T5 prompt embeddings [B, 128, 4096].
  4. Patch only modules proven equivalent to a kernel (exact class, weight / no weight,
     eps, activation variant, the diffusers source the re-implementation was checked
     against) - examples/ltx_video/integration/patch_ltx.py:
       56 weightless diffusers RMSNorm + 112 torch.nn.RMSNorm (q/k, across heads),
       28 GELU(approximate="tanh") feed-forward activations (LTX uses GELU-tanh, not GEGLU),
       28 blocks with norm + AdaLN modulation `norm(x) * (1 + scale) + shift` fused,
       56 attention processors with q/k norm + interleaved RoPE in kernels.
     Module forwards are replaced per instance (what `kernels.kernelize` does) and
     attention through a diffusers attention processor; `report.restore()` undoes it.
  5. Check the patched output against the unpatched one, then time eager, patched,
     torch.compile and patched + torch.compile in the same run (the kernels are custom
     ops with fake registrations, so they compile into the graph).

    python ltx_kernel_injection_example.py --device cpu                 # tiny model, CI
    python ltx_kernel_injection_example.py --device cuda --out ltx.json # H200: full size

Reports the median time per denoising step of each configuration, the speedups vs eager
and vs torch.compile, the copy bandwidth measured in the same run (CUDA only) and each
configuration's weight traffic (parameter bytes per step / time) as GB/s and % of that
copy bandwidth. A step is matmul- and attention-bound, so that % is context for the
weight-bytes roofline, not a target: the kernels' own bandwidth figures are in
examples/ltx_video/RESULTS.md. Exit code 1 if the patched output is not within tolerance
of the unpatched one, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

SKILL = Path(__file__).resolve().parents[1]
INTEGRATION = SKILL / "examples" / "ltx_video" / "integration"

# Relative L2 error of the patched output vs the unpatched one that counts as equal:
# fp32 - same math, another summation order; bf16 - diffusers rounds after every
# elementwise op, the fused kernels once.
TOLERANCE = {"float32": 1e-5, "bfloat16": 3e-2}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    doc = __doc__ or ""
    p = argparse.ArgumentParser(
        description=doc.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(doc.split("\n\n")[1:]),
    )
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cuda: default LTX-Video config in bf16; cpu: tiny config in fp32 (default: cuda)")
    p.add_argument("--batch", type=int, default=1, help="videos per step; 2 = classifier-free guidance (default 1)")
    p.add_argument("--warmup", type=int, default=None, help="untimed calls per configuration (default 3; cpu 1)")
    p.add_argument("--iters", type=int, default=None, help="timed calls per configuration (default 10; cpu 3)")
    p.add_argument("--no-compile", action="store_true", help="skip the two torch.compile configurations")
    p.add_argument("--package-path", default=None,
                   help="directory that contains an already built ltx_video_kernels package")
    p.add_argument("--arch", action="append", default=None, metavar="X.Y",
                   help="compute capability to build for, e.g. 9.0 (repeatable; default: the GPU's; on cpu, 9.0 only: a CPU check compiles and imports the build, it never runs it)")
    p.add_argument("--build-dir", default=None, help="build directory for build_local.py")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    if args.batch < 1:
        p.error("--batch must be >= 1")
    if args.iters is not None and args.iters < 1:
        p.error("--iters must be >= 1")
    if args.warmup is not None and args.warmup < 0:
        p.error("--warmup must be >= 0")
    return args


def measuring():
    """benchmark_example.py, imported from this script's folder: the one definition of the
    same-run copy bandwidth and the weight bytes of a forward that every model script reports."""
    if str(Path(__file__).resolve().parent) not in sys.path:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
    import benchmark_example  # noqa: PLC0415 - lazily: `--help` must work without torch

    return benchmark_example


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    import torch  # after argparse: --help works without torch

    sys.path.insert(0, str(INTEGRATION))
    import ltx_setup as S
    from patch_ltx import patch_ltx_transformer

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("error: --device cuda but no CUDA device is visible (try --device cpu)", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    dtype = torch.bfloat16 if cuda else torch.float32
    shape = S.FULL_SHAPE if cuda else S.TINY_SHAPE
    warmup = args.warmup if args.warmup is not None else (3 if cuda else 1)
    iters = args.iters if args.iters is not None else (10 if cuda else 3)

    # 1. the kernel package
    archs = args.arch or (None if cuda else ["9.0"])  # one arch is enough for a build that only imports
    kernels = S.load_kernels(args.package_path, archs=archs, build_dir=args.build_dir)
    print(f"[1] kernels: {kernels.__name__} from {Path(kernels.__file__).parent}")

    # 2. the model, from its config
    model = S.build_transformer(S.DEFAULT_CONFIG if cuda else S.TINY_CONFIG, device=device, dtype=dtype)
    params = sum(p.numel() for p in model.parameters())
    print(f"[2] LTXVideoTransformer3DModel: {params:,} parameters, {dtype}, {device}")

    # 3. one denoising step's inputs
    inputs = S.make_inputs(model, args.batch, shape)
    print(f"[3] {shape.frames} frames {shape.height}x{shape.width} -> latent {shape.latent()} = "
          f"{shape.tokens()} tokens; hidden_states {tuple(inputs['hidden_states'].shape)}")

    def step(runner: torch.nn.Module) -> torch.Tensor:
        with torch.inference_mode():
            return runner(**inputs)[0]

    def timed(runner: torch.nn.Module) -> float:
        return S.median(S.time_call(lambda: step(runner), device=device, warmup=warmup, iters=iters))

    times: dict[str, float] = {}
    reference = step(model)
    times["eager"] = timed(model)

    # 4. patch
    report = patch_ltx_transformer(model, kernels)
    print("[4] " + report.summary().replace("\n", "\n    "))

    # 5. check, then time
    rel_err = S.relative_error(step(model), reference)
    tolerance = TOLERANCE[str(dtype).removeprefix("torch.")]
    print(f"[5] patched vs unpatched output: relative error {rel_err:.2e} (tolerance {tolerance:.0e})")
    times["patched"] = timed(model)

    if not args.no_compile:
        import torch._dynamo

        options = {"fullgraph": True, "dynamic": False, "backend": "inductor" if cuda else "aot_eager"}
        # Compile the 28 identical blocks once (regional compilation) instead of the whole model.
        model.compile_repeated_blocks(**options)
        times["patched+compile"] = timed(model)
        report.restore()  # unpatch and drop the compiled code, then compile diffusers' forward
        for block in model.transformer_blocks:
            block._compiled_call_impl = None
        torch._dynamo.reset()
        model.compile_repeated_blocks(**options)
        times["compile"] = timed(model)
        for block in model.transformer_blocks:
            block._compiled_call_impl = None
        torch._dynamo.reset()
    else:
        report.restore()

    print(f"    median ms per step (batch {args.batch}, {iters} calls after {warmup} warm-up):")
    for name in ("eager", "patched", "compile", "patched+compile"):
        if name in times:
            print(f"      {name:<16} {times[name]:10.3f}")
    speedups = {f"{name}_vs_eager": times["eager"] / times[name] for name in times if name != "eager"}
    if "compile" in times:
        speedups["patched+compile_vs_compile"] = times["compile"] / times["patched+compile"]
    print("    speedup: " + ", ".join(f"{k} {v:.2f}x" for k, v in sorted(speedups.items())))
    bandwidth = measuring().copy_bandwidth_gbps(torch, args.device)
    weight_bytes = measuring().weight_bytes_per_forward(model, args.batch * shape.tokens())
    traffic = {}
    for name, ms in times.items():
        gbps = weight_bytes / (ms * 1e-3) / 1e9
        traffic[name] = {"weight_gbps": gbps, "weight_pct_of_copy_bw": 100 * gbps / bandwidth if bandwidth else None}
    if bandwidth:
        print(f"    copy bandwidth (same run): {bandwidth:.0f} GB/s; weight bytes per step "
              f"{weight_bytes / 1e9:.2f} GB (a lower bound of the traffic):")
        for name, t in traffic.items():
            print(f"      {name:<16} {t['weight_gbps']:8.1f} GB/s = {t['weight_pct_of_copy_bw']:5.1f} % of copy")
        print("    (a step is matmul- and attention-bound: context for the roofline, not a target)")
    if not cuda:
        print("    (tiny model on CPU, compiled with aot_eager: this checks the wiring; the times mean nothing)")

    if args.out:
        result = {
            "script": "skills/cuda-kernels/scripts/ltx_kernel_injection_example.py",
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "environment": S.environment(device),
            "params": params,
            "dtype": str(dtype).removeprefix("torch."),
            "batch": args.batch,
            "tokens": shape.tokens(),
            "warmup": warmup,
            "iters": iters,
            "patch": report.as_dict(),
            "rel_err_patched_vs_eager": rel_err,
            "median_ms": times,
            "speedups": speedups,
            "copy_bandwidth_gbps": bandwidth,
            "copy_bandwidth_note": ("median of 1 GiB device-to-device copies in this run, read + write bytes"
                                    if bandwidth else "CUDA only: a CPU copy says nothing about the GPU"),
            "weight_bytes": weight_bytes,
            "weight_bytes_note": "parameter bytes one step reads; activations and re-reads not counted: "
                                 "a lower bound of the traffic",
            "roofline_note": "a denoising step is matmul- and attention-bound: weight GB/s and % of copy "
                             "bandwidth are context for the weight-bytes roofline, not a target",
            "traffic": traffic,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")

    if rel_err > tolerance:
        print(f"error: patched output differs from diffusers' by {rel_err:.2e} > {tolerance:.0e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
