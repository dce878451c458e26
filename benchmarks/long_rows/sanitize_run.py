"""Small launches of every path for compute-sanitizer (memcheck / racecheck / synccheck):
aligned and misaligned rows, each dtype, -inf rows, with targets."""

from __future__ import annotations

import long_rows_kernels as K
import torch

for dtype in (torch.float32, torch.bfloat16):
    for path in ("row", "cluster", "multipass"):
        for vocab, offset in ((10007, 1), (50257, 3)):
            x = torch.randn(3, vocab + offset, device="cuda").to(dtype)[:, offset:]
            x[0] = float("-inf")
            t = torch.randint(0, vocab, (3,), device="cuda")
            loss, lse = K.cross_entropy(x, t, path=path)
            ref = K.reference.logsumexp(x.double())
            torch.testing.assert_close(lse.double(), ref, rtol=1e-5, atol=1e-5)
torch.cuda.synchronize()
print("sanitize_run: ok")
