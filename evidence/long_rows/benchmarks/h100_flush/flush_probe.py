"""Does do_bench's L2 flush make a read-only kernel pay for dirty lines?

triton.testing.do_bench clears the L2 by zeroing a 256 MB buffer before every timed call, so
the L2 starts each call full of dirty lines that must be written back as the kernel's reads
evict them. A copy pays that too, but over twice the bytes (it reads and writes the tensor),
so a read-only kernel's "% of copy" falls at sizes near the L2's. This times copy, the long_rows
kernels and the Triton peer three ways, in one process, CUDA events around one call, median:
  do_bench   triton.testing.do_bench as the benchmark calls it (warmup 25, rep 100)
  dirty      events, after zeroing the 256 MB buffer (what do_bench does)
  clean      events, after zeroing it and then reading another 256 MB buffer (the L2 then
             holds clean lines only: the write-back happens before the timed call)
    python flush_probe.py LONG_ROWS_BENCHMARKS_DIR OUT.json
"""

from __future__ import annotations

import json
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, sys.argv[1])
import long_rows_kernels as K  # noqa: E402
import triton_lse  # noqa: E402

SHAPES = [(512, 151936, torch.bfloat16), (512, 32000, torch.float32), (512, 50257, torch.float32),
          (512, 50257, torch.bfloat16), (2048, 32000, torch.bfloat16), (4096, 32000, torch.bfloat16),
          (4096, 151936, torch.bfloat16)]
WORDS = int(256e6 // 4)  # do_bench's flush buffer
dirty = torch.empty(WORDS, dtype=torch.int, device="cuda")
clean = torch.ones(WORDS, dtype=torch.int, device="cuda")
MODES = ("do_bench", "dirty", "clean")


def flush_dirty() -> None:
    dirty.zero_()


def flush_clean() -> None:
    dirty.zero_()
    torch.sum(clean, dtype=torch.int64)  # reads 256 MB: every dirty line written back now


def events(fn, flush, reps: int = 100, warmup: int = 10) -> float:
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
    return t[len(t) // 2] * 1e3  # us


def measure(rows: int, vocab: int, dtype: torch.dtype) -> dict:
    x = (torch.randn(rows, vocab, device="cuda") * 3).to(dtype)
    t = torch.randint(0, vocab, (rows,), device="cuda")
    y = torch.empty_like(x)
    nb = x.numel() * x.element_size()
    err = (K.logsumexp(x) - torch.logsumexp(x.float(), -1)).abs().max().item()
    fns = {"copy": lambda: y.copy_(x), "lse": lambda: K.logsumexp(x), "ce": lambda: K.cross_entropy(x, t),
           "triton_lse": lambda: triton_lse.logsumexp(x)}
    rec = {"rows": rows, "vocab": vocab, "dtype": str(dtype).replace("torch.", ""), "mbytes": nb / 1e6,
           "lse_max_abs_err": err, "us": {}}
    for name, fn in fns.items():
        rec["us"][name] = {"do_bench": float(do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3,
                           "dirty": events(fn, flush_dirty), "clean": events(fn, flush_clean)}
    # % of copy as the benchmark counts it: (bytes / t) / (2 bytes / t_copy), per timer
    rec["pct_of_copy"] = {f"{n}_{m}": 100 * rec["us"]["copy"][m] / (2 * rec["us"][n][m])
                          for n in ("lse", "ce", "triton_lse") for m in MODES}
    return rec


def main() -> int:
    out: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "shapes": []}
    for rows, vocab, dtype in SHAPES:
        rec = measure(rows, vocab, dtype)
        out["shapes"].append(rec)
        p, us = rec["pct_of_copy"], rec["us"]
        print(f"{rows}x{vocab} {rec['dtype']} {rec['mbytes']:.0f} MB | copy us "
              + " / ".join(f"{us['copy'][m]:.1f}" for m in MODES)
              + " | lse % of copy " + " / ".join(f"{p[f'lse_{m}']:.1f}" for m in MODES)
              + " | ce " + " / ".join(f"{p[f'ce_{m}']:.1f}" for m in MODES)
              + " | lse us " + " / ".join(f"{us['lse'][m]:.1f}" for m in MODES), flush=True)
        with open(sys.argv[2], "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
