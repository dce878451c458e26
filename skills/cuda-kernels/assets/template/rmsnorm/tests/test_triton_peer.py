"""The benchmark's Triton peer (benchmarks/triton_peer.py) computes the same RMSNorm (and fused add + RMSNorm).

A peer that is wrong makes every speedup meaningless, so it is checked like the kernel:
against float64, on awkward inputs. Without a GPU this runs the peer under Triton's
interpreter (the `triton_interpreter` fixture in conftest.py). Needs triton; skipped
without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CHECK = """
import json, torch, triton_peer
gen = torch.Generator().manual_seed(3)
out = {}
for name, dtype, shape, weighted in [("bf16 5x1000", torch.bfloat16, (5, 1000), True),
                                     ("fp16 2x3x96 no weight", torch.float16, (2, 3, 96), False),
                                     ("fp32 one row", torch.float32, (1, 7), True)]:
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) + 0.25).to(dtype)
    w = (torch.randn(shape[-1], generator=gen, dtype=torch.float64) + 1).to(dtype) if weighted else None
    strided = torch.cat([x, x], dim=-1)[..., : shape[-1]]  # same values, row stride 2x
    xd = x.double()
    ref = xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + 1e-6) * (w.double() if w is not None else 1)
    for tag, inp in (("", x), (" strided", strided)):
        y = triton_peer.rms_norm(inp, w, 1e-6)
        out[name + tag] = [str(y.dtype), list(y.shape), ((y.double() - ref).abs().max() / ref.abs().max()).item()]
x = (torch.randn(3, 1000, generator=gen, dtype=torch.float64) + 0.25).to(torch.bfloat16)
r = torch.randn(3, 1000, generator=gen, dtype=torch.float64).to(torch.bfloat16)
w = (torch.randn(1000, generator=gen, dtype=torch.float64) + 1).to(torch.bfloat16)
y, s = triton_peer.fused_add_rms_norm(x, r, w, 1e-6)
sd = (x.float() + r.float()).to(torch.bfloat16).double()
ref = sd * torch.rsqrt(sd.square().mean(-1, keepdim=True) + 1e-6) * w.double()
out["fused add"] = ["fused " + str(y.dtype), list(y.shape), max(((y.double() - ref).abs().max() / ref.abs().max()).item(),
                                                     ((s.double() - sd).abs().max() / sd.abs().max()).item())]
out["empty"] = [None, list(triton_peer.rms_norm(torch.empty(0, 64), None, 1e-6).shape), 0.0]
print(json.dumps(out))
"""

# The fused peer rounds twice to bf16 (the sum, then the output), and Triton's interpreter
# rounds to bf16 by truncation (up to 2^-7 relative): twice the one-rounding bound.
BOUND = {"torch.bfloat16": 8e-3, "torch.float16": 1e-3, "torch.float32": 2e-5, "fused torch.bfloat16": 1.6e-2}


def test_triton_peer_matches_float64_on_awkward_inputs(triton_interpreter: Callable[[str], Any]) -> None:
    results = triton_interpreter(CHECK)
    assert results.pop("empty")[1] == [0, 64]
    assert len(results) == 7
    for case, (dtype, shape, rel) in results.items():
        assert rel <= BOUND[dtype], f"{case}: relative error {rel:.3g}"
        assert len(shape) >= 2, case
