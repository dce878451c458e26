"""The benchmark's Triton peer (benchmarks/triton_peer.py) computes the same activations.

A peer that is wrong makes every speedup meaningless, so it is checked like the kernel:
against float64, on awkward inputs. Without a GPU this runs the peer under Triton's
interpreter (the `triton_interpreter` fixture in conftest.py). Needs triton; skipped
without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CHECK = """
import json, torch, torch.nn.functional as F, triton_peer
acts = {"silu": F.silu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh")}
gen = torch.Generator().manual_seed(3)
out = {}
for dtype, shape in [(torch.bfloat16, (5, 1100)), (torch.float16, (2, 3, 7)), (torch.float32, (1,))]:
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) * 3).to(dtype)
    strided = torch.cat([x, x], dim=-1)[..., : shape[-1]]
    for act in acts:
        ref = acts[act](x.double())
        for tag, inp in (("", x), (" strided", strided)):
            y = triton_peer.elementwise(inp, act)
            out[f"{dtype} {shape} {act}{tag}"] = [str(y.dtype), list(y.shape),
                                                  ((y.double() - ref).abs().max() / ref.abs().max()).item()]
out["empty"] = [None, list(triton_peer.elementwise(torch.empty(0, 64), "silu").shape), 0.0]
print(json.dumps(out))
"""

BOUND = {"torch.bfloat16": 8e-3, "torch.float16": 1e-3, "torch.float32": 2e-6}


def test_triton_peer_matches_float64_on_awkward_inputs(triton_interpreter: Callable[[str], Any]) -> None:
    results = triton_interpreter(CHECK)
    assert results.pop("empty")[1] == [0, 64]
    assert len(results) == 3 * 2 * 2
    for case, (dtype, _shape, rel) in results.items():
        assert rel <= BOUND[dtype], f"{case}: relative error {rel:.3g}"
