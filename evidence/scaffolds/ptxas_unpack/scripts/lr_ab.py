"""A/B timing of one long_rows build: copy, logsumexp and cross-entropy at the target shapes.

    PYTHONPATH=BUILD python lr_ab.py OUT.json LABEL

Timer: triton.testing.do_bench median (L2 flushed), us. Run once per tree in the same call;
compare the trees by % of the copy measured in each process.
"""

import json
import sys
import time

import long_rows_kernels as K
import torch
import torch.nn.functional as F
from triton.testing import do_bench


def bench(fn) -> float:
    return float(do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3


def measure(rows: int, vocab: int, d: str) -> dict:
    dt = torch.bfloat16 if d == "bf16" else torch.float32
    x = (torch.randn(rows, vocab, device="cuda") * 3).to(dt)
    t = torch.randint(0, vocab, (rows,), device="cuda")
    nbytes = x.numel() * x.element_size()
    dst = torch.empty_like(x)
    ref = torch.logsumexp(x.double(), -1)
    err = ((K.logsumexp(x).double() - ref).abs() / ref.abs().clamp_min(1)).max().item()
    ce_err = (K.cross_entropy(x, t)[0].double() - F.cross_entropy(x.double(), t, reduction="none")).abs().max().item()
    copy_us = bench(lambda: dst.copy_(x))
    lse_us = bench(lambda: K.logsumexp(x))
    ce_us = bench(lambda: K.cross_entropy(x, t))
    copy_gbps = 2 * nbytes / copy_us / 1e3
    return {
        "rows": rows,
        "vocab": vocab,
        "dtype": d,
        "mbytes": nbytes / 1e6,
        "copy_us": copy_us,
        "copy_gbps": copy_gbps,
        "lse_us": lse_us,
        "ce_us": ce_us,
        "lse_pct_copy": 100 * nbytes / lse_us / 1e3 / copy_gbps,
        "ce_pct_copy": 100 * nbytes / ce_us / 1e3 / copy_gbps,
        "lse_rel_err_vs_fp64": err,
        "ce_abs_err_vs_fp64": ce_err,
    }


out, label = sys.argv[1], sys.argv[2]
rows_out = []
shapes = [(r, v, d) for d in ("bf16", "fp32") for v in (151936, 50257, 32000) for r in (512, 4096)] + [(7, 151936, "bf16")]
for rows, vocab, d in shapes:
    rec = measure(rows, vocab, d)
    rows_out.append(rec)
    print(
        f"{label} {d} {rows:>5}x{vocab:<6} {rec['mbytes']:7.1f} MB copy {rec['copy_gbps']:6.0f} GB/s | lse "
        f"{rec['lse_us']:7.1f} us {rec['lse_pct_copy']:5.1f}% | ce {rec['ce_us']:7.1f} us {rec['ce_pct_copy']:5.1f}% | "
        f"err {rec['lse_rel_err_vs_fp64']:.1e} {rec['ce_abs_err_vs_fp64']:.1e}",
        flush=True,
    )
    torch.cuda.empty_cache()
json.dump(
    {
        "label": label,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "timer": "triton.testing.do_bench median (L2 flushed), us",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "results": rows_out,
    },
    open(out, "w"),
    indent=1,
)
