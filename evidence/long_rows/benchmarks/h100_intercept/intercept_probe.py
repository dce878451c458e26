"""Is the row kernel's ~10 us fixed cost its own, or any read-only stream's?

h100_flush fitted t = 10.4 us + bytes / 3.16 TB/s to logsumexp bf16 at 512 and 4096 rows of
151,936 under a clean L2, where copy fits t = -1.0 us + 2 bytes / 3.05 TB/s. Two points fit
any line; this times six row counts per width and four read-only reductions over the same
tensor, so each gets its own intercept and slope:
  lse         long_rows' logsumexp (row path at these row counts: rows >= SMs)
  triton_lse  the benchmark's Triton peer (online max/sum, one program per row)
  amax        torch.amax(x, -1): PyTorch's reduction kernel, max only (no exp)
  sum         torch.sum(x, -1, dtype=float32)
and copy of the same tensor. If amax and sum carry the same intercept, the 512-row misses are
the cost of a read-only stream's start and end, not of this kernel. Timer: CUDA events around
one call after a clean L2 (h100_flush's "clean"), median of 60; also do_bench's median.
    python intercept_probe.py LONG_ROWS_BENCHMARKS_DIR OUT.json
"""

from __future__ import annotations

import json
import sys


def fit(points: list[tuple[float, float]]) -> dict[str, float]:
    """Least squares t = a + b * mbytes over (mbytes, us) points: intercept us, GB/s, worst residual us."""
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    b = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx
    a = my - b * mx
    return {"intercept_us": a, "gbps": 1e3 / b, "max_residual_us": max(abs(p[1] - a - b * p[0]) for p in points)}


def main() -> int:
    import torch
    from triton.testing import do_bench

    sys.path.insert(0, sys.argv[1])
    import long_rows_kernels as K  # noqa: PLC0415
    import triton_lse  # noqa: PLC0415

    series = {(151936, torch.bfloat16): (128, 256, 512, 1024, 2048, 4096),
              (32000, torch.float32): (512, 1024, 2048, 4096, 8192, 16384)}
    words = int(256e6 // 4)
    dirty = torch.empty(words, dtype=torch.int, device="cuda")
    clean = torch.ones(words, dtype=torch.int, device="cuda")

    def flush() -> None:
        dirty.zero_()
        torch.sum(clean, dtype=torch.int64)  # every dirty line written back before the timed call

    def events(fn, reps: int = 60, warmup: int = 5) -> float:
        for _ in range(warmup):
            flush()
            fn()
        pairs = []
        for _ in range(reps):
            flush()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            pairs.append((s, e))
        torch.cuda.synchronize()
        t = sorted(s.elapsed_time(e) for s, e in pairs)
        return t[len(t) // 2] * 1e3

    out: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "series": []}
    for (vocab, dtype), row_counts in series.items():
        rec: dict = {"vocab": vocab, "dtype": str(dtype).replace("torch.", ""), "points": []}
        for rows in row_counts:
            x = (torch.randn(rows, vocab, device="cuda") * 3).to(dtype)
            y = torch.empty_like(x)
            ref = torch.logsumexp(x.float(), -1)
            assert (K.logsumexp(x) - ref).abs().max().item() < 1e-3
            fns = {"copy": lambda: y.copy_(x), "lse": lambda: K.logsumexp(x), "triton_lse": lambda: triton_lse.logsumexp(x),
                   "amax": lambda: torch.amax(x, -1), "sum": lambda: torch.sum(x, -1, dtype=torch.float32)}
            point = {"rows": rows, "mbytes": x.numel() * x.element_size() / 1e6, "clean_us": {}, "do_bench_us": {}}
            for name, fn in fns.items():
                point["clean_us"][name] = events(fn)
                point["do_bench_us"][name] = float(do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3
            rec["points"].append(point)
            print(f"{vocab} {rec['dtype']} {rows} rows {point['mbytes']:.0f} MB clean us: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in point["clean_us"].items()), flush=True)
            del x, y
        rec["fits"] = {}
        for name in ("copy", "lse", "triton_lse", "amax", "sum"):
            # copy moves twice the tensor's bytes; the reductions read them once
            scale = 2 if name == "copy" else 1
            for timer in ("clean_us", "do_bench_us"):
                pts = [(scale * p["mbytes"], p[timer][name]) for p in rec["points"]]
                rec["fits"][f"{name}_{timer}"] = fit(pts)
        for k, f in rec["fits"].items():
            print(f"  fit {k}: {f['intercept_us']:.1f} us + bytes / {f['gbps']:.0f} GB/s "
                  f"(worst residual {f['max_residual_us']:.1f} us)", flush=True)
        out["series"].append(rec)
        with open(sys.argv[2], "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
