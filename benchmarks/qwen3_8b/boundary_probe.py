#!/usr/bin/env python3
"""Where do the last few percent go at one-wave shapes? Times the two shapes where this
package's norm kernels trail a peer by more than the 2 % tie rule (RMSNorm 1x1024x4096
against plain Triton, fused add + RMSNorm 512x4096 against torch.compile), each provider
in three settings, all CUDA graphs of many calls on inputs rotated past L2:

  back-to-back  calls only, as bench_ops.py times them (each call starts when the one
                before it has finished, with that call's output lines still dirty in L2);
  spaced        every call followed by a spin kernel of about 3 us (torch.cuda._sleep),
                whose own time (a graph of spins alone) is subtracted: the next call no
                longer starts the moment the last one ends;
  cleaned       every call followed by a read of a buffer twice the size of L2
                (a sum, which dirties no line), its own time subtracted: the next call
                starts with a clean L2, the state Nsight Compute's cold launches see, so
                the last call's output is not written back while it runs.

If the gap to the peer is the same in all three, it is inside the kernel; if it appears
only back-to-back, it is how consecutive calls meet (the launch of the next call, or,
if only `cleaned` closes it, the write-back of the last call's output).

    python benchmarks/qwen3_8b/boundary_probe.py --package BUILD_DIR --json OUT.json

BUILD_DIR holds a built qwen3_8b_kernels (build_local.py prints it); needs a CUDA GPU,
triton, and transformers for the torch.compile peer's code.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# A repository tool: it reuses the shipped example's benchmark (loading, peers, copy bandwidth).
EXAMPLE_BENCHMARKS = Path(__file__).resolve().parents[2] / "skills" / "cuda-kernels" / "examples" / "qwen3_8b" / "benchmarks"
sys.path.insert(0, str(EXAMPLE_BENCHMARKS))  # bench_ops' own imports (triton_peers)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: example_modules
from example_modules import load_example_module  # noqa: E402

bench_ops = load_example_module("qwen3_8b", "benchmarks/bench_ops.py")

CALLS = 200  # per graph (each call, or each call and its gap)
SPIN_CYCLES = 4000  # 2.9 us per spin in a graph on an H100 at 1980 MHz (spaced_gap_us)


def probe(fn: Callable[[int], Any], n_sets: int, big: Any) -> dict[str, float]:
    """Microseconds per call in each setting, from bench_ops.time_cuda's graph timer."""
    import torch

    def per_call(step: Callable[[int], Any]) -> float:
        timing = bench_ops.time_cuda(step, 0, n_sets, calls=CALLS)
        if timing.method != "cuda-graph":
            raise RuntimeError("graph capture failed; the settings need CUDA graphs to compare")
        return timing.us

    spin = lambda: torch.cuda._sleep(SPIN_CYCLES)  # noqa: E731
    evict = lambda: big.sum(dtype=torch.float32)  # noqa: E731
    out = {"back_to_back_us": per_call(fn)}
    for name, gap in (("spaced", spin), ("cleaned", evict)):
        alone = per_call(lambda i, gap=gap: gap())
        out[f"{name}_us"] = per_call(lambda i, gap=gap: (fn(i), gap())) - alone
        out[f"{name}_gap_us"] = alone
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", required=True, help="directory holding a built qwen3_8b_kernels")
    ap.add_argument("--json", required=True, help="where to write the results")
    args = ap.parse_args(argv)

    import torch
    import triton_peers

    pkg = bench_ops.load_package(args.package)
    eager = bench_ops.make_eager_peers()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    gen = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=gen)

    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                               "spin_cycles": SPIN_CYCLES, "shapes": {}}
    eps = bench_ops.EPS
    h = bench_ops.HIDDEN
    w = randn(h)
    big = torch.empty(l2, device="cuda", dtype=torch.bfloat16).normal_()  # 2x L2 in bytes

    # RMSNorm 1x1024x4096
    nbytes = 2 * 1024 * h * 2 + h * 2
    n = max(2, math.ceil(4 * l2 / nbytes))
    xs = [randn(1, 1024, h) for _ in range(n)]
    module = eager["rms_module"](w)
    compiled = torch.compile(module, fullgraph=True)
    providers = {
        "kernel": lambda i: pkg.rms_norm(xs[i], w, eps),
        "triton": lambda i: triton_peers.rms_norm(xs[i], w, eps),
        "compile": lambda i: compiled(xs[i]),
    }
    results["shapes"]["rms_norm 1x1024x4096"] = {
        "bytes": nbytes, "input_sets": n, **{k: probe(f, n, big) for k, f in providers.items()}}

    # fused add + RMSNorm 512x4096
    torch._dynamo.reset()
    nbytes = 4 * 512 * h * 2 + h * 2
    n = max(2, math.ceil(4 * l2 / nbytes))
    xs = [randn(512, h) for _ in range(n)]
    rs = [randn(512, h) for _ in range(n)]
    norm = eager["rms_module"](w)

    def decoder_tail(x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = residual + x
        return norm(s), s

    tail = torch.compile(decoder_tail, fullgraph=True)
    providers = {
        "kernel": lambda i: pkg.fused_add_rms_norm(xs[i], rs[i], w, eps),
        "triton": lambda i: triton_peers.fused_add_rms_norm(xs[i], rs[i], w, eps),
        "compile": lambda i: tail(xs[i], rs[i]),
    }
    results["shapes"]["fused_add_rms_norm 512x4096"] = {
        "bytes": nbytes, "input_sets": n, **{k: probe(f, n, big) for k, f in providers.items()}}

    for shape, r in results["shapes"].items():
        print(shape)
        for k in ("kernel", "triton", "compile"):
            t = r[k]
            print(f"  {k:8s} back-to-back {t['back_to_back_us']:7.2f} us  spaced {t['spaced_us']:7.2f} us"
                  f"  cleaned {t['cleaned_us']:7.2f} us")
    Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
