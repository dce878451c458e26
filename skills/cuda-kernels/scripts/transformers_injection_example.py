#!/usr/bin/env python3
"""Wire custom CUDA kernels into a transformers Qwen3 / Llama model, and prove it changed nothing.

    python transformers_injection_example.py --device cpu                  # tiny random Qwen3 (CI; PyTorch fallback)
    python transformers_injection_example.py --device cpu --model llama    # the same on a Llama block
    python transformers_injection_example.py --device cuda                 # real Qwen3-8B sizes, random weights, bf16
    python transformers_injection_example.py --device cuda --route hub     # through kernels.kernelize instead
    python transformers_injection_example.py --device cuda --package-path DIR --out report.json

The pattern, with the example project examples/qwen3_8b (kernels + integration code):

1. Get the kernel package: build it with build_local.py (or pass --package-path, a
   directory on which `import qwen3_8b_kernels` works). CPU tensors use the package's
   PyTorch reference, so the whole flow runs without a GPU.
2. Build the model from a config with random weights, directly on the device in the
   target dtype (never download weights to test wiring). transformers 5: `dtype=`.
3. Keep the unpatched logits, then patch:
   - route "patch" (default): `patch_qwen3(model, kernels)` replaces, by exact class
     (never by name) and only after probing that the class computes the kernel's
     formula: every RMSNorm (incl. Qwen3's per-head q_norm/k_norm), the residual add +
     post-attention norm (one fused kernel), the MLP's silu(gate) * up (with gate/up
     merged into one matmul) and RoPE. Gemma-style x * (1 + w) norms are refused.
   - route "hub": `kernels.kernelize` with a layer mapping to the package's `layers`
     (norms and MLPs), the Kernel Hub mechanism; needs `pip install kernels`.
4. Compare logits with the unpatched model (relative L2 error, top-1 agreement). In
   fp32 (CPU) they must agree to ~1e-6; in bf16 the kernels round differently from
   PyTorch's op-by-op code, so expect ~1e-2 relative error on a 36-layer random model,
   the same size as transformers' own bf16 error against an fp32 run (the example's
   tests check exactly that).
5. On a GPU, time one prefill before and after (CUDA events, median).
6. Undo the patch and check the model is transformers' again, bit for bit.

Exit status: 0 ok, 1 a check failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
EXAMPLE = SCRIPTS.parent / "examples" / "qwen3_8b"
INTEGRATION = EXAMPLE / "integration"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Inject the qwen3_8b example kernels into a random-weight transformers Qwen3/Llama model "
        "and verify the logits.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--device", choices=["cpu", "cuda"], required=True, help="cpu: tiny config; cuda: real Qwen3-8B sizes")
    p.add_argument("--model", choices=["qwen3", "llama"], default="qwen3", help="model family (llama: tiny only)")
    p.add_argument("--route", choices=["patch", "hub"], default="patch", help="patch_qwen3 or kernels.kernelize")
    p.add_argument("--package-path", type=Path, help="directory on which `import qwen3_8b_kernels` works")
    p.add_argument("--build-dir", type=Path, help="build_local.py build directory")
    p.add_argument("--seq-len", type=int, help="prompt length (default 512 on cuda, 24 on cpu)")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], help="default: bfloat16 on cuda, float32 on cpu")
    p.add_argument("--tiny", action="store_true", help="use the tiny config on cuda too")
    p.add_argument("--out", type=Path, help="write a JSON report here")
    args = p.parse_args(argv)
    if args.model == "llama" and args.device == "cuda" and not args.tiny:
        p.error("--model llama has only a tiny config here; add --tiny")
    return args


def load_package(args: argparse.Namespace):
    if args.package_path is not None:
        sys.path.insert(0, str(args.package_path.resolve()))
        return importlib.import_module("qwen3_8b_kernels")
    sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project

    archs = None
    if args.device == "cuda":
        import torch

        major, minor = torch.cuda.get_device_capability()
        archs = [f"{major}.{minor}"]
    result = build_project(EXAMPLE, archs=archs, build_dir=args.build_dir)
    sys.path.insert(0, str(result.path))
    return importlib.import_module(result.package)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda, but torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    sys.path.insert(0, str(INTEGRATION))
    from patch_qwen3 import patch_qwen3, patched_roles, unpatch_qwen3
    from qwen3_models import (
        build_random_model,
        compare_logits,
        count_modules,
        qwen3_8b_config,
        random_input_ids,
        tiny_llama_config,
        tiny_qwen3_config,
    )

    kernels_pkg = load_package(args)
    tiny = args.device == "cpu" or args.tiny
    dtype = getattr(torch, args.dtype or ("float32" if args.device == "cpu" else "bfloat16"))
    seq = args.seq_len or (24 if tiny else 512)
    if args.model == "llama":
        config = tiny_llama_config()
    else:
        config = tiny_qwen3_config() if tiny else qwen3_8b_config()

    t0 = time.perf_counter()
    model = build_random_model(config, device=args.device, dtype=dtype)
    ids = random_input_ids(1, seq, config.vocab_size, device=args.device)
    counts = count_modules(model)
    print(f"model: {args.model} {'tiny' if tiny else 'Qwen3-8B'} {dtype} on {args.device} "
          f"({counts['parameters']:,} parameters, built in {time.perf_counter() - t0:.1f}s)")
    print(f"  decoder layers {counts['decoder_layers']}, RMSNorm modules {counts['rms_norm_modules']} "
          f"{counts['rms_norm_by_role']}")

    def forward():
        return model(input_ids=ids, use_cache=False).logits

    def timed() -> float | None:
        if args.device != "cuda":
            return None
        for _ in range(2):
            forward()
        samples = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            forward()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        return statistics.median(samples)

    report: dict = {"model": args.model, "device": args.device, "dtype": str(dtype), "seq_len": seq, "counts": counts}
    with torch.no_grad():
        reference = forward().clone()
        report["unpatched_ms"] = timed()

        if args.route == "patch":
            patch_report = patch_qwen3(model, kernels_pkg)
            print("patched:\n  " + patch_report.summary().replace("\n", "\n  "))
            report["patch"] = patch_report.counts()
            report["installed_forwards"] = dict(patched_roles(model))
        else:
            try:
                import kernels  # noqa: F401
            except ImportError:
                print("error: --route hub needs the `kernels` package (pip install kernels)", file=sys.stderr)
                return 1
            import tempfile

            from kernel_hub import kernelize_qwen3, local_repository, unkernelize

            repo = local_repository(kernels_pkg, Path(tempfile.mkdtemp(prefix="qwen3-kernel-repo-")))
            swapped = kernelize_qwen3(model, repo, device=args.device)
            print(f"kernelized: {swapped}")
            report["kernelized"] = swapped

        patched = forward()
        report["patched_ms"] = timed()
        err = compare_logits(patched, reference)
        report["logits_vs_unpatched"] = err
        print(f"logits vs unpatched: rel L2 {err['rel_l2']:.3e}, max abs {err['max_abs']:.3e}, "
              f"top-1 agreement {err['top1_agreement']:.4f} over {err['positions']} positions")
        if report["unpatched_ms"] is not None:
            print(f"prefill {seq} tokens: unpatched {report['unpatched_ms']:.2f} ms, patched {report['patched_ms']:.2f} ms "
                  f"({report['unpatched_ms'] / report['patched_ms']:.2f}x)")

        if args.route == "patch":
            unpatch_qwen3(model)
        else:
            unkernelize(model)
        restored = forward()
        report["restored_bitwise"] = bool(torch.equal(restored, reference))
        print(f"after restoring: logits identical to the unpatched run: {report['restored_bitwise']}")

    # fp32: same math as the reference up to op order. Low precision: the kernels round
    # once where PyTorch rounds after every op, and the difference grows through the
    # layers; 0.1 is a wiring check (a wrong weight or a swapped operand gives ~1). The
    # example's tests make the precise claim: the patched bf16 model is as close to an
    # fp32 run as transformers' own bf16 model.
    limit = 1e-4 if dtype == torch.float32 else 0.1
    swapped = report.get("patch", {}).get("rms_norm", 0) or sum(report.get("kernelized", {}).values())
    if not swapped:
        print("nothing was replaced: is this a Qwen3/Llama model of the verified transformers classes?")
    ok = bool(swapped) and err["finite"] and err["rel_l2"] <= limit and report["restored_bitwise"]
    report["ok"] = bool(ok)
    report["rel_l2_limit"] = limit
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    print("OK" if ok else f"FAILED (rel L2 limit {limit:g}, restored {report['restored_bitwise']})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
