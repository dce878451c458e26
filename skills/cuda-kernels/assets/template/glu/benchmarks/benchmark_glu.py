"""Benchmark the __NAME__ gated-activation kernel against every peer that could replace it.

The peers: the eager PyTorch code a model runs (`act(gate) * up` in the input dtype),
torch.compile of that code (dynamo reset per shape) and a plain Triton kernel
(benchmarks/triton_peer.py, when triton is installed). The bar is the best of them; the
table ends with the kernel's speedup over it.

For every shape: validate the kernel and each peer against a float64 reference first (a
wrong result gets no number), then time them all in this process. Times are medians of
`triton.testing.do_bench` (which flushes L2 between runs) or, without triton, of CUDA
events around single calls after an L2 flush. Bandwidth is (bytes read + bytes written)
/ time = 3 x rows x d x element size / time; "% copy" compares it with a device-to-device
copy measured at the start of the same run, the practical ceiling for a memory-bound op.

    PYTHONPATH=$(python <skill>/scripts/build_local.py .) python benchmarks/benchmark_glu.py --out glu.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from benchmarking import (Timer, copy_bandwidth_gbps, import_package, package_missing, print_header, print_row, result,
                          time_peers, triton_peer, write_json)

# None (and the reason) when the package is not built yet: --help still works.
__PKG__, reference, ops, PACKAGE_ERROR = import_package("__PKG__")

# (rows, d): decode and prefill token counts at common MLP widths (d = intermediate size:
# the input is [rows, 2d]), sizes far beyond a 60 MB L2, and a d that is not a multiple of
# 8 (the scalar path in fp16/bf16; fp32 packs of 4 still fit) to show what alignment buys.
DEFAULT_SHAPES = [
    (1, 12288),
    (128, 12288),
    (512, 12288),
    (4096, 12288),
    (16384, 12288),
    (2688, 8192),
    (4096, 11008),
    (4096, 4100),
]
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
# The kernel rounds once; a peer in the input dtype rounds the activation and the product.
TOLERANCE = {torch.float32: 2e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}
PEER_TOLERANCE = {dtype: 2 * tol for dtype, tol in TOLERANCE.items()}

Glu = Callable[[torch.Tensor, str, bool], torch.Tensor]


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, d = (int(v) for v in text.lower().split("x"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"shape must look like ROWSxD (e.g. 4096x12288), got {text!r}") from exc
    if rows < 1 or d < 1:
        raise argparse.ArgumentTypeError(f"shape dimensions must be positive, got {text!r}")
    return rows, d


def eager(x: torch.Tensor, activation: str, gate_first: bool) -> torch.Tensor:
    """What a model's forward runs: chunk, activation and product in the input dtype."""
    first, second = x.chunk(2, dim=-1)
    gate, up = (first, second) if gate_first else (second, first)
    return reference.ACTIVATIONS[activation](gate) * up


def rel_err(out: torch.Tensor, x: torch.Tensor, activation: str, gate_first: bool) -> float:
    first, second = x.double().chunk(2, dim=-1)
    gate, up = (first, second) if gate_first else (second, first)
    ref = reference.ACTIVATIONS[activation](gate) * up
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


def make_peers(compile_too: bool) -> dict[str, Glu | None]:
    """name -> the peer (None: not available here); compile is compiled per shape in bench_shape."""
    peers: dict[str, Glu | None] = {"eager": eager, "compile": eager if compile_too else None}
    peers["triton"] = triton_peer("glu")  # benchmarks/triton_peer.py; None without triton
    return peers


def bench_shape(rows: int, d: int, dtype: torch.dtype, activation: str, gate_first: bool, timer: Timer,
                copy_gbps: float, peers: dict[str, Glu | None]) -> dict:
    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + d)
    x = torch.randn(rows, 2 * d, device="cuda", dtype=dtype, generator=gen) * 2 + 0.1

    err = rel_err(ops.glu(x, activation, gate_first), x, activation, gate_first)
    if not err <= TOLERANCE[dtype]:
        raise SystemExit(f"kernel output wrong for {rows}x{d} {dtype}: relative error {err:.3g}; not timing it")

    nbytes = 3 * rows * d * x.element_size()
    kernel_ms = timer(lambda: ops.glu(x, activation, gate_first))
    peer_us, skipped = time_peers(peers, lambda fn: fn(x, activation, gate_first),
                                  lambda out: rel_err(out, x, activation, gate_first), PEER_TOLERANCE[dtype], timer)
    return {
        "rows": rows,
        "d": d,
        "dtype": str(dtype).removeprefix("torch."),
        "activation": activation,
        "gate_first": gate_first,
        "max_rel_err": err,
        **result(kernel_ms, nbytes, copy_gbps, peer_us, skipped),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", nargs="+", choices=sorted(DTYPES), default=["bfloat16"])
    parser.add_argument("--shapes", nargs="+", type=parse_shape, metavar="ROWSxD", help="default: a model-shaped set")
    parser.add_argument("--activation", choices=sorted(reference.ACTIVATIONS) if reference else None, default="silu",
                        help="one of the package's reference.ACTIVATIONS (default: silu)")
    parser.add_argument("--gate-second", action="store_true", help="the second half is the gate (diffusers' GEGLU)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer (compiling every shape takes a while)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if PACKAGE_ERROR is not None:
        return package_missing("benchmark_glu", "__PKG__", PACKAGE_ERROR)
    if not torch.cuda.is_available():
        print("benchmark_glu: needs a CUDA GPU", file=sys.stderr)
        return 1

    timer = Timer()
    copy_gbps = copy_bandwidth_gbps(timer)
    gate_first = not args.gate_second
    peers = make_peers(compile_too=not args.no_compile)
    missing = print_header(timer, copy_gbps, peers, f"; {args.activation}, gate {'first' if gate_first else 'second'}")
    results = []
    for dtype_name in args.dtype:
        for rows, d in args.shapes or DEFAULT_SHAPES:
            r = bench_shape(rows, d, DTYPES[dtype_name], args.activation, gate_first, timer, copy_gbps, peers)
            results.append(r)
            print_row(rows, d, r)
    if args.out:
        write_json(args.out, {"op": "glu", "project": "__NAME__", "package_file": __PKG__.__file__}, timer, copy_gbps,
                   missing, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
