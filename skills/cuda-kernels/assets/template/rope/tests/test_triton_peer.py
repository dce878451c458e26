"""The benchmark's Triton peer (benchmarks/triton_peer.py) computes the same RoPE.

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
def rotate(x, interleaved):
    if interleaved:
        p = x.unflatten(-1, (-1, 2))
        return torch.stack((-p[..., 1], p[..., 0]), dim=-1).flatten(-2)
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)
for dtype, shape, table in [(torch.bfloat16, (2, 3, 5, 34), (5, 34)), (torch.float16, (2, 7, 96), (2, 7, 96)),
                            (torch.float32, (1, 1, 1, 2), (1, 2))]:
    x = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
    c, s = (torch.randn(table, generator=gen, dtype=torch.float64).to(dtype) for _ in range(2))
    for interleaved in (False, True):
        cd, sd = c.double(), s.double()
        if x.dim() == 4 and cd.dim() == 3:
            cd, sd = cd.unsqueeze(1), sd.unsqueeze(1)
        ref = x.double() * cd + rotate(x.double(), interleaved) * sd
        y = triton_peer.rope(x, c, s, interleaved)
        out[f"{dtype} {shape} {interleaved}"] = [str(y.dtype), list(y.shape),
                                                ((y.double() - ref).abs().max() / ref.abs().max()).item()]
print(json.dumps(out))
"""

BOUND = {"torch.bfloat16": 8e-3, "torch.float16": 1e-3, "torch.float32": 2e-6}


def test_triton_peer_matches_float64_on_awkward_inputs(triton_interpreter: Callable[[str], Any]) -> None:
    results = triton_interpreter(CHECK)
    assert len(results) == 6
    for case, (dtype, _shape, rel) in results.items():
        assert rel <= BOUND[dtype], f"{case}: relative error {rel:.3g}"
