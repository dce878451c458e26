"""Sweep: long_rows at 512 rows, row kernel vs multipass chunks vs cluster sizes (env overrides)."""
import json, os, sys
import torch
from triton.testing import do_bench
sys.path.insert(0, sys.argv[1])  # benchmarks dir of the experimental copy
import long_rows_kernels as K

def bench(fn):
    return float(do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3

out = []
for rows, vocab, dt in [(512, 151936, torch.bfloat16), (512, 50257, torch.float32), (512, 32000, torch.float32),
                        (512, 151936, torch.float32), (512, 50257, torch.bfloat16), (4096, 32000, torch.bfloat16),
                        (1024, 32000, torch.float32), (2048, 32000, torch.bfloat16)]:
    x = torch.randn(rows, vocab, device="cuda", dtype=dt)
    t = torch.randint(0, vocab, (rows,), device="cuda")
    y = torch.empty_like(x)
    nb = x.numel() * x.element_size()
    copy = bench(lambda: y.copy_(x))
    ref = torch.logsumexp(x.float(), -1)
    rec = {"rows": rows, "vocab": vocab, "dtype": str(dt), "mb": nb / 1e6, "copy_us": copy}
    rec["row"] = bench(lambda: K.logsumexp(x, path="row"))
    rec["ce_row"] = bench(lambda: K.cross_entropy(x, t, path="row"))
    for c in (2, 4, 8, 16):
        os.environ["LR_CHUNKS"] = str(c)
        got = K.logsumexp(x, path="multipass")
        err = (got - ref).abs().max().item()
        rec[f"mp{c}"] = bench(lambda: K.logsumexp(x, path="multipass"))
        rec[f"ce_mp{c}"] = bench(lambda: K.cross_entropy(x, t, path="multipass"))
        rec[f"mp{c}_err"] = err
    os.environ.pop("LR_CHUNKS")
    os.environ["LR_SPAN"] = "1"
    for m in (1, 2, 4):
        os.environ["LR_SPAN_MULT"] = str(m)
        got = K.logsumexp(x, path="multipass")
        rec[f"span{m}_err"] = (got - ref).abs().max().item()
        rec[f"span{m}"] = bench(lambda: K.logsumexp(x, path="multipass"))
        rec[f"ce_span{m}"] = bench(lambda: K.cross_entropy(x, t, path="multipass"))
        gloss, gl = K.cross_entropy(x, t, path="multipass")
        rec[f"ce_span{m}_err"] = (gloss - torch.nn.functional.cross_entropy(x.float(), t, reduction="none")).abs().max().item()
    os.environ.pop("LR_SPAN"); os.environ.pop("LR_SPAN_MULT")
    for c in (2, 4):
        os.environ["LR_CLUSTER"] = str(c)
        try:
            rec[f"cl{c}"] = bench(lambda: K.logsumexp(x, path="cluster"))
        except Exception as exc:
            rec[f"cl{c}"] = str(exc)[:80]
    os.environ.pop("LR_CLUSTER")
    cbw = 2 * nb / copy  # bytes/us
    line = f"err {max(v for k, v in rec.items() if k.endswith('_err')):.1e} {rows}x{vocab} {dt} {nb/1e6:.0f}MB copy {copy:.1f}us"
    for k in ["row", "ce_row", "mp2", "mp4", "mp8", "mp16", "span1", "span2", "span4", "ce_span1", "ce_span2", "cl2"]:
        v = rec[k]
        line += f" | {k} {v:.1f} ({100 * nb / v / cbw:.1f}%)" if isinstance(v, float) else f" | {k} {v}"
    print(line, flush=True)
    out.append(rec)
    del x, y
json.dump(out, open(sys.argv[2], "w"), indent=1)
