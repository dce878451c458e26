"""Route 1 of references/transformers-integration.md, run as printed: `patch_rmsnorms` swaps
every Qwen3RMSNorm of a tiny model and keeps transformers' output, values and dtype, also when
the weight's dtype is not the input's."""

from __future__ import annotations

import pytest

import skilldocs

DOC = skilldocs.SKILL / "references" / "transformers-integration.md"


def _route1() -> dict:
    block = next(b for b in skilldocs.parse_blocks(DOC) if b.lang == "python" and "def patch_rmsnorms" in b.text)
    namespace: dict = {}
    exec(compile(block.text, block.where, "exec"), namespace)
    return namespace


def kernel_like_rms_norm(x, weight, eps):
    """What a kernel returns: fp32 math, one rounding to x's dtype; weight may be None."""
    import torch

    y = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.float()
    return y.to(x.dtype)


@pytest.mark.parametrize("weight_dtype", ["float32", "bfloat16"])
def test_route1_patches_every_norm_and_keeps_transformers_result(weight_dtype: str) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm

    config = transformers.Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=1, head_dim=16)
    model = transformers.Qwen3ForCausalLM(config).eval()
    norms = [m for m in model.modules() if type(m) is Qwen3RMSNorm]
    g = torch.Generator().manual_seed(0)
    for norm in norms:
        norm.weight.data = torch.randn(norm.weight.shape, generator=g).to(getattr(torch, weight_dtype))
    x = torch.randn(3, 5, 32, generator=g).to(torch.bfloat16)
    head_norm = next(n for n in norms if n.weight.numel() == 16)  # q_norm: per head
    calls = [(model.model.norm, x), (head_norm, x[..., :16])]
    expected = [norm(inp) for norm, inp in calls]

    assert _route1()["patch_rmsnorms"](model, kernel_like_rms_norm) == len(norms) == 2 * 4 + 1  # q, k, input, post-attention; final

    got = [norm(inp) for norm, inp in calls]
    for want, out in zip(expected, got):
        assert out.dtype == want.dtype  # fp32 weight with bf16 x: fp32, as transformers returns
        # One rounding where transformers rounds twice (normalized x, then the product): one bf16 step.
        torch.testing.assert_close(out.float(), want.float(), rtol=1e-2, atol=1e-2)
    if weight_dtype == "float32":
        assert got[0].dtype == torch.float32 and torch.equal(got[0], expected[0])
