#!/usr/bin/env python3
"""Wire custom CUDA kernels into a transformers Qwen3 / Llama model, and prove it changed nothing.

    python transformers_injection_example.py --device cpu                  # tiny random Qwen3 (CI; PyTorch fallback)
    python transformers_injection_example.py --device cpu --model llama    # the same on a Llama block
    python transformers_injection_example.py --device cuda                 # real Qwen3-8B sizes, random weights, bf16
    python transformers_injection_example.py --device cuda --route hub     # through kernels.kernelize instead
    python transformers_injection_example.py --device cuda --package-path DIR --out report.json
    python transformers_injection_example.py --device cuda --no-compile    # skip the torch.compile peer

With examples/qwen3_8b (built by build_local.py or given by --package-path; CPU tensors use
its PyTorch reference) on a random-weight model in the target dtype: patch by route "patch"
(`patch_qwen3`: by exact class, after probing that the class computes the kernel's formula:
every RMSNorm incl. q/k norms, fused residual add + norm, the MLP with merged gate/up, RoPE;
Gemma-style x * (1 + w) is refused) or "hub" (`kernels.kernelize`, mapping to the package's
`layers`). Logits vs unpatched (relative L2, top-1): fp32 ~1e-6; bf16 ~1e-2 on 36 random
layers, the size of transformers' own bf16-vs-fp32 error. One prefill timed (median; CUDA
events, CPU wall clock) eager, compiled (`torch.compile(model, dynamic=False)` before
patching; "aot_eager" on CPU) and patched, each with `attention_mask={"full_attention": None}`
(under dynamo an [S, S] mask would make compile time a slower attention); 1 GiB copy
bandwidth and weight traffic as % of it are context, not a target (prefill is matmul-bound).
Finally the patch is undone and the model checked bit for bit.
Exit status: 0 ok, 1 a check failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

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
    p.add_argument("--arch", action="append", metavar="X.Y",
                   help="compute capability to build the example for (repeatable; default: the GPU's; on cpu, 9.0 only: a CPU check compiles and imports the build, it never runs it)")
    p.add_argument("--build-dir", type=Path, help="build_local.py build directory")
    p.add_argument("--seq-len", type=int, help="prompt length (default 512 on cuda, 24 on cpu)")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], help="default: bfloat16 on cuda, float32 on cpu")
    p.add_argument("--tiny", action="store_true", help="use the tiny config on cuda too")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer of the unpatched model")
    p.add_argument("--out", type=Path, help="write a JSON report here")
    args = p.parse_args(argv)
    if args.model == "llama" and args.device == "cuda" and not args.tiny:
        p.error("--model llama has only a tiny config here; add --tiny")
    return args


def measuring() -> Any:
    """benchmark_example.py, imported from this script's folder: the one definition of the
    same-run copy bandwidth and the weight bytes of a forward that every model script reports."""
    if str(Path(__file__).resolve().parent) not in sys.path:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
    import benchmark_example  # noqa: PLC0415 - lazily: `--help` must work without torch

    return benchmark_example


def median_ms(torch: Any, fn: Callable[[], Any], device: str, warmup: int, repeats: int) -> float:
    """CUDA events on a GPU (the GPU timeline, launch gaps included), wall clock on CPU."""
    return measuring().time_forward(torch, fn, device, warmup, repeats)["median_ms"]


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

    kernels_pkg = measuring().load_kernels(args)  # the same build / --package-path rules
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

    # Models whose forward takes the per-layer-type mask mapping (Qwen3; Llama in 5.17 does
    # not) and whose layers are all full attention get the mapping eager mode computes.
    layer_types = getattr(config, "layer_types", None)
    prepared = args.model == "qwen3" and bool(layer_types) and set(layer_types) == {"full_attention"}
    mask_kwargs = {"attention_mask": {"full_attention": None}} if prepared else {}

    def forward(runner=model):
        return runner(input_ids=ids, use_cache=False, **mask_kwargs).logits

    warmup, repeats = (2, 5) if args.device == "cuda" else (3, 3)  # CPU: the first calls are slow

    def timed(runner=model) -> float:
        return median_ms(torch, lambda: forward(runner), args.device, warmup, repeats)

    bandwidth = measuring().copy_bandwidth_gbps(torch, args.device)
    weight_bytes = measuring().weight_bytes_per_forward(model, ids.numel())
    variants: dict[str, dict[str, Any]] = {}
    report: dict = {"model": args.model, "device": args.device, "dtype": str(dtype), "seq_len": seq, "counts": counts}
    compile_failed = False
    with torch.no_grad():
        reference = forward().clone()
        report["unpatched_ms"] = timed()
        variants["eager"] = {"status": "ok", "median_ms": report["unpatched_ms"]}

        # The compile peer: the unpatched model, compiled here and dropped before patching,
        # so the compiled graph never sees (or guards on) the patched forwards.
        if args.no_compile:
            variants["compile"] = {"status": "skipped", "reason": "--no-compile"}
        else:
            backend = "inductor" if args.device == "cuda" else "aot_eager"
            entry: dict[str, Any] = {"status": "ok", "backend": backend, "dynamic": False}
            variants["compile"] = entry
            try:
                torch._dynamo.reset()
                compiled = torch.compile(model, dynamic=False, backend=backend)
                t0 = time.perf_counter()
                compiled_logits = forward(compiled)  # first call compiles the graph for this shape
                if args.device == "cuda":
                    torch.cuda.synchronize()
                entry["first_call_s"] = round(time.perf_counter() - t0, 2)
                entry["median_ms"] = timed(compiled)
                entry["logits_vs_unpatched"] = compare_logits(compiled_logits, reference)
                del compiled, compiled_logits
            except Exception as exc:  # a failed peer is reported, and fails the run
                compile_failed = True
                entry.update(status="failed", error=f"{type(exc).__name__}: {exc}"[:2000],
                             traceback=traceback.format_exc()[-3000:])
                print(f"torch.compile FAILED: {entry['error'][:300]} (--no-compile skips it)")
            finally:
                torch._dynamo.reset()

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
        variants["patched"] = {"status": "ok", "median_ms": report["patched_ms"]}
        err = compare_logits(patched, reference)
        report["logits_vs_unpatched"] = err
        print(f"logits vs unpatched: rel L2 {err['rel_l2']:.3e}, max abs {err['max_abs']:.3e}, "
              f"top-1 agreement {err['top1_agreement']:.4f} over {err['positions']} positions")
        if "logits_vs_unpatched" in variants["compile"]:
            cerr = variants["compile"]["logits_vs_unpatched"]
            print(f"compiled logits vs unpatched: rel L2 {cerr['rel_l2']:.3e}, top-1 agreement "
                  f"{cerr['top1_agreement']:.4f}")
        timer = (f"CUDA events, median of {repeats} after {warmup} warm-ups" if args.device == "cuda" else
                 f"wall clock, median of {repeats} after {warmup} warm-ups (CPU: checks the path, not a benchmark)")
        forward_text = ("model(input_ids, use_cache=False" + (", attention_mask={'full_attention': None}" if prepared
                                                              else "") + f"), prefill of {seq} tokens, all logits")
        perf = measuring().performance(variants, weight_bytes, bandwidth, "patched", timer, forward_text)
        report["performance"] = perf
        measuring().print_performance(perf, "patched", f"timing: {perf['timer']}")

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
    ok = ok and not compile_failed
    report["ok"] = bool(ok)
    report["rel_l2_limit"] = limit
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    print("OK" if ok else f"FAILED (rel L2 limit {limit:g}, restored {report['restored_bitwise']}"
          + (", torch.compile failed)" if compile_failed else ")"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
