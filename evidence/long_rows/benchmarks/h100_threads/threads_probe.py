"""Row-kernel block size against the 512-row misses: all rows resident in one wave?

bf16 rows take 62 registers, fp32 43 (ptxas -v, sm_90): 512-thread blocks fit 2 per SM, so
512 rows run in two waves of 264 blocks on an H100 (132 SMs); 256-thread blocks fit 4 per SM
(528 at once: one wave). threads_variant.patch reads LR_ROW_THREADS in the launcher. Times the
row path with the launcher's choice and with 256 and 128 threads, and copy, in one process.
Timer: triton.testing.do_bench median (L2 flushed), as the benchmark.
    python threads_probe.py LONG_ROWS_BENCHMARKS_DIR OUT.json
"""

from __future__ import annotations

import json
import os
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, sys.argv[1])
import long_rows_kernels as K  # noqa: E402

SHAPES = [(512, 151936, torch.bfloat16), (512, 32000, torch.float32), (512, 50257, torch.float32),
          (512, 151936, torch.float32), (512, 50257, torch.bfloat16), (512, 32000, torch.bfloat16),
          (1024, 32000, torch.float32), (2048, 32000, torch.bfloat16), (4096, 32000, torch.bfloat16),
          (4096, 151936, torch.bfloat16), (7, 151936, torch.bfloat16), (1, 151936, torch.float32)]
THREADS = [None, 256, 128]


def bench(fn) -> float:
    return float(do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3


def measure(rows: int, vocab: int, dtype: torch.dtype) -> dict:
    x = (torch.randn(rows, vocab, device="cuda") * 3).to(dtype)
    t = torch.randint(0, vocab, (rows,), device="cuda")
    y = torch.empty_like(x)
    nb = x.numel() * x.element_size()
    ref = torch.logsumexp(x.float(), -1)
    ref_ce = torch.nn.functional.cross_entropy(x.float(), t, reduction="none")
    rec = {"rows": rows, "vocab": vocab, "dtype": str(dtype).replace("torch.", ""), "mbytes": nb / 1e6,
           "copy_us": bench(lambda: y.copy_(x)), "runs": []}
    for th in THREADS:
        if th is None:
            os.environ.pop("LR_ROW_THREADS", None)
        else:
            os.environ["LR_ROW_THREADS"] = str(th)
        err = (K.logsumexp(x, path="row") - ref).abs().max().item()
        err_ce = (K.cross_entropy(x, t, path="row")[0] - ref_ce).abs().max().item()
        lse = bench(lambda: K.logsumexp(x, path="row"))
        ce = bench(lambda: K.cross_entropy(x, t, path="row"))
        rec["runs"].append({"threads": th or "launcher", "lse_us": lse, "ce_us": ce, "lse_max_abs_err": err,
                            "ce_max_abs_err": err_ce, "lse_pct_copy": 100 * rec["copy_us"] / (2 * lse),
                            "ce_pct_copy": 100 * rec["copy_us"] / (2 * ce)})
    os.environ.pop("LR_ROW_THREADS", None)
    return rec


def main() -> int:
    out: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                 "timer": "triton.testing.do_bench median (L2 flushed), us", "shapes": []}
    for rows, vocab, dtype in SHAPES:
        rec = measure(rows, vocab, dtype)
        out["shapes"].append(rec)
        print(f"{rows}x{vocab} {rec['dtype']} {rec['mbytes']:.0f} MB copy {rec['copy_us']:.1f} us | "
              + " | ".join(f"{r['threads']}: lse {r['lse_us']:.1f} ({r['lse_pct_copy']:.1f} %) ce {r['ce_us']:.1f} "
                           f"({r['ce_pct_copy']:.1f} %) err {max(r['lse_max_abs_err'], r['ce_max_abs_err']):.1e}"
                           for r in rec["runs"]), flush=True)
        with open(sys.argv[2], "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
