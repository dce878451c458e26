"""The benchmark's Triton peer (benchmarks/triton_peer.py) computes the same LayerNorm + AdaLN.

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
for name, dtype, shape in [("bf16 2x3x1000", torch.bfloat16, (2, 3, 1000)), ("fp16 2x1x96", torch.float16, (2, 1, 96)),
                           ("fp32 1x1x7", torch.float32, (1, 1, 7))]:
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) * 2 + 3).to(dtype)
    w, b = (torch.randn(shape[-1], generator=gen, dtype=torch.float64).to(dtype) for _ in range(2))
    sc, sh = (torch.randn(shape[0], shape[-1], generator=gen, dtype=torch.float64).to(dtype) for _ in range(2))
    xd = x.double()
    mean = xd.mean(-1, keepdim=True)
    n = (xd - mean) * torch.rsqrt((xd - mean).square().mean(-1, keepdim=True) + 1e-5)
    refs = {"affine": n * w.double() + b.double(), "adaln": n * (1 + sc.double()[:, None]) + sh.double()[:, None]}
    for tag, y in (("affine", triton_peer.layer_norm(x, w, b, 1e-5)),
                   ("adaln", triton_peer.layer_norm(x, None, None, 1e-5, sc, sh))):
        ref = refs[tag]
        out[f"{name} {tag}"] = [str(y.dtype), list(y.shape), ((y.double() - ref).abs().max() / ref.abs().max()).item()]
out["empty"] = [None, list(triton_peer.layer_norm(torch.empty(0, 64)).shape), 0.0]
print(json.dumps(out))
"""

BOUND = {"torch.bfloat16": 1.6e-2, "torch.float16": 2e-3, "torch.float32": 2e-5}


def test_triton_peer_matches_float64_on_awkward_inputs(triton_interpreter: Callable[[str], Any]) -> None:
    results = triton_interpreter(CHECK)
    assert results.pop("empty")[1] == [0, 64]
    assert len(results) == 6
    for case, (dtype, _shape, rel) in results.items():
        assert rel <= BOUND[dtype], f"{case}: relative error {rel:.3g}"
