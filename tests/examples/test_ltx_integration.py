"""Wiring ltx_video_kernels into diffusers' LTX-Video transformer (diffusers 0.42.1).

CPU tests run the whole integration on tiny random-weight transformers through the
package's PyTorch fallback; `gpu` tests run the CUDA kernels on the full-size transformer
(49 frames x 512 x 768 = 2688 latent tokens) against a float64 reference.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import subprocess
import sys
import textwrap
import types
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

from torch import nn  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
INTEGRATION = REPO / "skills" / "cuda-kernels" / "examples" / "ltx_video" / "integration"
INJECTION_SCRIPT = REPO / "skills" / "cuda-kernels" / "scripts" / "ltx_kernel_injection_example.py"
RESULTS_MD_CLI = REPO / "benchmarks" / "ltx_video" / "make_results_md.py"  # the repository's renderer CLI
if str(INTEGRATION) not in sys.path:
    sys.path.insert(0, str(INTEGRATION))

import ltx_setup as S  # noqa: E402
import patch_ltx as P  # noqa: E402
from diffusers import LTXVideoTransformer3DModel  # noqa: E402
from diffusers.models.activations import GELU  # noqa: E402
from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm  # noqa: E402
from diffusers.models.transformers import transformer_ltx  # noqa: E402

# Whole-tensor relative L2 error allowed between patched and unpatched outputs. fp32: the
# kernels and diffusers do the same fp32 math in a different order. bf16/fp16: diffusers
# rounds after every elementwise op and the fused kernels round once, so both sit about one
# rounding step (2^-8 for bf16) from the exact value, compounded over the blocks.
REL_TOL = {torch.float32: 1e-5, torch.bfloat16: 3e-2, torch.float16: 5e-3}
# On CPU the patched block runs diffusers' own expressions except its gated residual adds,
# one torch.addcmul (one rounding where diffusers rounds the product first): measured 3.3e-3
# (bf16) and 4.3e-4 (fp16) on the tiny transformer, so these bounds leave a 3x margin and
# still fail on any real formula change (the GPU bounds above also cover the kernels' fp32 math).
CPU_REL_TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 1.5e-3}

EXPECTED_DEFAULT_COUNTS = {
    P.KIND_RMSNORM_DIFFUSERS: 56,  # norm1 + norm2 of 28 blocks, no weight, eps 1e-6
    P.KIND_RMSNORM_TORCH: 112,  # norm_q + norm_k of attn1 + attn2 of 28 blocks
    P.KIND_GELU_TANH: 28,
    P.KIND_GELU_TANH_TORCH: 1,  # caption projection
    P.KIND_BLOCK_ADALN: 28,
    P.KIND_ATTENTION: 56,
}


def tiny(dtype=torch.float32, **overrides) -> nn.Module:
    return S.build_transformer({**S.TINY_CONFIG, **overrides}, device="cpu", dtype=dtype, seed=0)


def forward(model: nn.Module, inputs: dict) -> torch.Tensor:
    with torch.inference_mode():
        return model(**inputs)[0]


# --------------------------------------------------------------------------- the diffusers facts


def test_default_transformer_has_168_rmsnorms_28_gelu_tanh_feedforwards_and_1_92b_params():
    # plus one more GELU-tanh, torch's, in the caption projection
    with torch.device("meta"):
        model = LTXVideoTransformer3DModel()
    norms = Counter()
    activations = Counter()
    for module in model.modules():
        if type(module) in (DiffusersRMSNorm, nn.RMSNorm):
            norms[(type(module).__module__, module.weight is not None, module.eps)] += 1
        if type(module).__name__ in {"GELU", "GEGLU", "ApproximateGELU", "SwiGLU"}:
            activations[(type(module).__module__, type(module).__name__, getattr(module, "approximate", None))] += 1
    assert norms == {
        ("diffusers.models.normalization", False, 1e-6): 56,
        ("torch.nn.modules.normalization", True, 1e-5): 112,
    }
    assert activations == {
        ("diffusers.models.activations", "GELU", "tanh"): 28,  # FeedForward.net[0]: not GEGLU
        ("torch.nn.modules.activation", "GELU", "tanh"): 1,  # caption_projection.act_1
    }
    assert all(type(b.ff.net[0]) is GELU for b in model.transformer_blocks)
    assert sum(p.numel() for p in model.parameters()) == 1_923_385_472
    # q/k norms normalise across all heads at once (2048 = 32 heads x 64), not per head
    attn = model.transformer_blocks[0].attn1
    assert tuple(attn.norm_q.normalized_shape) == (2048,)
    # scale/shift come from a [6, dim] table: shift/scale/gate for attention and for the MLP
    assert tuple(model.transformer_blocks[0].scale_shift_table.shape) == (6, 2048)


def test_49_frames_at_512x768_is_a_7x16x24_latent_of_2688_tokens():
    assert S.FULL_SHAPE.latent() == (7, 16, 24)
    assert S.FULL_SHAPE.tokens() == 2688
    with torch.device("meta"):
        model = LTXVideoTransformer3DModel()
    inputs = S.make_inputs(model, 2, S.FULL_SHAPE)
    assert tuple(inputs["hidden_states"].shape) == (2, 2688, 128)
    assert tuple(inputs["encoder_hidden_states"].shape) == (2, 128, 4096)
    assert tuple(inputs["encoder_attention_mask"].shape) == (2, 128)
    assert (inputs["num_frames"], inputs["height"], inputs["width"]) == (7, 16, 24)
    assert inputs["rope_interpolation_scale"] == (8 / 25, 32, 32)
    with pytest.raises(ValueError, match="8k \\+ 1"):
        S.VideoShape(frames=48).latent()


def test_latents_are_packed_like_the_pipeline_does():
    from diffusers.pipelines.ltx.pipeline_ltx import LTXPipeline

    model = tiny()
    inputs = S.make_inputs(model, 2, S.TINY_SHAPE, seed=3)
    f, h, w = S.TINY_SHAPE.latent()
    gen = torch.Generator().manual_seed(3)
    latents = torch.randn(2, model.config.in_channels, f, h, w, generator=gen)
    assert torch.equal(LTXPipeline._pack_latents(latents, 1, 1), inputs["hidden_states"])


def test_every_diffusers_api_the_integration_calls_binds_to_the_installed_signature():
    from diffusers.models.attention import AttentionModuleMixin
    from diffusers.models.attention_dispatch import dispatch_attention_fn
    from diffusers.models.modeling_utils import ModelMixin

    model = tiny()
    inputs = S.make_inputs(model, 1, S.TINY_SHAPE)
    inspect.signature(LTXVideoTransformer3DModel.forward).bind(model, **inputs)
    inspect.signature(LTXVideoTransformer3DModel.__init__).bind(model, **S.TINY_CONFIG)
    inspect.signature(ModelMixin.compile_repeated_blocks).bind(model, fullgraph=True, dynamic=False, backend="inductor")
    assert "LTXVideoTransformerBlock" in LTXVideoTransformer3DModel._repeated_blocks
    inspect.signature(AttentionModuleMixin.set_processor).bind(model.transformer_blocks[0].attn1, object())
    inspect.signature(transformer_ltx.LTXAttention.prepare_attention_mask).bind(
        model.transformer_blocks[0].attn2, torch.ones(1, 3), 3, 1
    )
    inspect.signature(dispatch_attention_fn).bind(
        1, 2, 3, attn_mask=None, dropout_p=0.0, is_causal=False, backend=None, parallel_config=None
    )
    inspect.signature(DiffusersRMSNorm.__init__).bind(None, 8, eps=1e-6, elementwise_affine=True, bias=True)
    inspect.signature(GELU.__init__).bind(None, 8, 16, approximate="tanh", bias=True)


def test_replacement_forwards_take_exactly_the_arguments_of_what_they_replace(ltx_kernels):
    # same names (keyword callers) and kinds (kernels' kernelize checks them)
    layers = P._load_layers(ltx_kernels)
    pairs = [
        (layers.DiffusersRMSNorm.forward, DiffusersRMSNorm.forward),
        (layers.TorchRMSNorm.forward, nn.RMSNorm.forward),
        (layers.GELUTanh.forward, GELU.forward),
        (layers.TorchGELUTanh.forward, nn.GELU.forward),
        (layers.LTXVideoBlockAdaLN.forward, transformer_ltx.LTXVideoTransformerBlock.forward),
        (P.LTXKernelAttnProcessor.__call__, transformer_ltx.LTXVideoAttnProcessor.__call__),
    ]
    for ours, theirs in pairs:
        ours_p = [(p.name, p.kind) for p in inspect.signature(ours).parameters.values()]
        theirs_p = [(p.name, p.kind) for p in inspect.signature(theirs).parameters.values()]
        assert ours_p == theirs_p, ours.__qualname__


def test_the_reimplemented_diffusers_sources_are_the_verified_ones():
    # CI pins diffusers 0.42.1; a newer diffusers must be re-verified before the hashes move.
    assert P._unverified_sources(list(P.VERIFIED_SOURCES)) == []


# --------------------------------------------------------------------------- patching


def test_patching_the_default_transformer_replaces_every_verified_site(ltx_kernels):
    with torch.device("meta"):
        model = LTXVideoTransformer3DModel()
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        assert dict(report.counts) == EXPECTED_DEFAULT_COUNTS
        assert report.skipped == []
        assert report.total == 281
        for block in model.transformer_blocks:
            assert "forward" in block.__dict__
            assert isinstance(block.attn1.processor, P.LTXKernelAttnProcessor)
    finally:
        report.restore()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("per_token_timestep", [False, True], ids=["timestep-per-video", "timestep-per-token"])
def test_patched_tiny_transformer_matches_diffusers(ltx_kernels, dtype, per_token_timestep):
    model = tiny(dtype)
    inputs = S.make_inputs(model, 2, S.TINY_SHAPE, seed=1, per_token_timestep=per_token_timestep)
    expected = forward(model, inputs)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        actual = forward(model, inputs)
    finally:
        report.restore()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert S.relative_error(actual, expected) <= CPU_REL_TOL[dtype]


def test_on_fake_cuda_tensors_every_site_calls_a_cuda_op_not_the_fallback(ltx_kernels):
    # FakeTensorMode gives tensors that claim to be on CUDA without a GPU: the package takes
    # its CUDA branch and runs the ops' fake kernels, so this checks on CPU that the full-size
    # patched transformer (bf16, 2688 tokens, batch 2) reaches a kernel at every site.
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    calls: Counter[str] = Counter()

    class CountOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            qualified = func._schema.name
            if "ltx_video_kernels" in qualified or qualified == "aten::_addmm_activation":
                calls[qualified.split("::")[-1]] += 1
            return func(*args, **(kwargs or {}))

    default_dtype = torch.get_default_dtype()
    with FakeTensorMode(allow_non_fake_inputs=True):
        torch.set_default_dtype(torch.bfloat16)
        try:
            with torch.device("cuda"):
                model = LTXVideoTransformer3DModel().eval()
        finally:
            torch.set_default_dtype(default_dtype)
        expected = {
            "rms_norm_modulate": 28,  # norm1 + AdaLN
            "rms_norm_rope_qk": 28,  # attn1 q/k norm + RoPE
            "rms_norm": 56,  # attn2 norm_q, norm_k
            "add_rms_norm_modulate": 28,  # attn2 residual + norm2 + AdaLN
            "gelu_tanh": 29,  # 28 feed-forwards + the caption projection
        }
        for per_token, epilogue in [(False, False), (True, True)]:
            inputs = S.make_inputs(model, 2, S.FULL_SHAPE, per_token_timestep=per_token)
            calls.clear()
            report = P.patch_ltx_transformer(model, ltx_kernels, gelu_epilogue=epilogue)
            try:
                with torch.inference_mode(), CountOps():
                    out = model(**inputs)[0]
            finally:
                report.restore()
            assert out.is_cuda and out.dtype == torch.bfloat16 and tuple(out.shape) == (2, 2688, 128)
            if epilogue:
                assert dict(calls) == {**expected, "gelu_tanh": 1, "_addmm_activation": 28}
            else:
                assert dict(calls) == expected


def test_patched_output_is_no_further_from_float64_than_diffusers_in_bf16(ltx_kernels):
    model64 = tiny(torch.float64)
    inputs = S.make_inputs(model64, 2, S.TINY_SHAPE, seed=2)
    exact = forward(model64, inputs)
    model = tiny(torch.bfloat16)
    bf16_inputs = S.cast_inputs(inputs, torch.bfloat16)
    stock = S.relative_error(forward(model, bf16_inputs), exact)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        patched = S.relative_error(forward(model, bf16_inputs), exact)
    finally:
        report.restore()
    assert patched <= 1.25 * stock + 1e-3, (patched, stock)


def test_each_family_can_be_patched_alone(ltx_kernels):
    model = tiny()
    inputs = S.make_inputs(model, 1, S.TINY_SHAPE)
    expected = forward(model, inputs)
    families = {
        "norms": {P.KIND_RMSNORM_DIFFUSERS: 4, P.KIND_RMSNORM_TORCH: 8},
        "adaln": {P.KIND_BLOCK_ADALN: 2},
        "gelu": {P.KIND_GELU_TANH: 2, P.KIND_GELU_TANH_TORCH: 1},
        "attention": {P.KIND_ATTENTION: 4},
    }
    for family, counts in families.items():
        flags = {name: name == family for name in families}
        report = P.patch_ltx_transformer(model, ltx_kernels, **flags)
        try:
            assert dict(report.counts) == counts, family
            assert S.relative_error(forward(model, inputs), expected) <= REL_TOL[torch.float32]
        finally:
            report.restore()


def test_restore_puts_back_the_original_forwards_and_processors(ltx_kernels):
    model = tiny(torch.bfloat16)
    inputs = S.make_inputs(model, 1, S.TINY_SHAPE)
    expected = forward(model, inputs)
    processors = [m.processor for m in model.modules() if isinstance(m, transformer_ltx.LTXAttention)]

    report = P.patch_ltx_transformer(model, ltx_kernels)
    assert report.active
    with pytest.raises(P.PatchError, match="already patched"):
        P.patch_ltx_transformer(model, ltx_kernels)
    assert P.unpatch_ltx_transformer(model) is True
    assert not report.active
    assert P.unpatch_ltx_transformer(model) is False

    assert not any("forward" in m.__dict__ for m in model.modules())
    assert [m.processor for m in model.modules() if isinstance(m, transformer_ltx.LTXAttention)] == processors
    assert torch.equal(forward(model, inputs), expected)
    # and it can be patched again
    P.patch_ltx_transformer(model, ltx_kernels).restore()


def test_restore_refuses_while_a_hook_wraps_a_patched_forward_and_changes_nothing(ltx_kernels):
    # diffusers' HookRegistry (and accelerate) wrap the forward they find, the kernel one if
    # the model was patched first. Restoring must neither drop the hook nor leave kernel
    # code running in a model that reports itself restored.
    from diffusers.hooks import HookRegistry, ModelHook

    class Count(ModelHook):
        calls = 0

        def pre_forward(self, module, *args, **kwargs):
            Count.calls += 1
            return args, kwargs

    model = tiny(torch.float32)
    inputs = S.make_inputs(model, 1, S.TINY_SHAPE)
    expected = forward(model, inputs)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    block = model.transformer_blocks[0]
    registry = HookRegistry.check_if_exists_or_initialize(block)
    registry.register_hook(Count(), "count")
    with pytest.raises(P.PatchError, match="remove those hooks first"):
        report.restore()
    assert report.active and "forward" in model.transformer_blocks[1].norm1.__dict__  # nothing was restored
    forward(model, inputs)
    assert Count.calls == 1
    registry.remove_hook("count")
    report.restore()
    assert not report.active
    assert torch.equal(forward(model, inputs), expected)


def test_a_hook_added_to_a_q_or_k_norm_after_patching_still_fires(ltx_kernels):
    # The fused norm + RoPE reads the norms' weights instead of calling them; a norm that
    # gets a hook later is called as a module again, so the hook sees every call.
    model = tiny(torch.float32)
    inputs = S.make_inputs(model, 1, S.TINY_SHAPE)
    expected = forward(model, inputs)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    seen: list[tuple[int, ...]] = []
    model.transformer_blocks[0].attn1.norm_q.register_forward_hook(lambda mod, args, out: seen.append(tuple(out.shape)))
    try:
        actual = forward(model, inputs)
    finally:
        report.restore()
    assert len(seen) == 1
    assert S.relative_error(actual, expected) <= CPU_REL_TOL[torch.float32]


@pytest.mark.parametrize("wrapper", ["accelerate_style_forward", "diffusers_registry"])
def test_a_q_norm_wrapped_after_patching_is_called_through_its_wrapper(ltx_kernels, wrapper):
    # accelerate replaces `forward` (and sets _hf_hook); diffusers' HookRegistry wraps it too.
    # Offloading hooks load the weight inside the wrapper, so the fused path must not read
    # the weight behind their back. Once diffusers' registry is empty, fusion resumes.
    from diffusers.hooks import HookRegistry, ModelHook

    model = tiny(torch.float32)
    inputs = S.make_inputs(model, 1, S.TINY_SHAPE)
    expected = forward(model, inputs)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    norm = model.transformer_blocks[0].attn1.norm_q
    calls: list[str] = []

    class Count(ModelHook):
        def pre_forward(self, module, *args, **kwargs):
            calls.append("hook")
            return args, kwargs

    try:
        if wrapper == "accelerate_style_forward":
            inner = norm.forward
            norm.forward = lambda *a, **k: (calls.append("hook"), inner(*a, **k))[1]
            norm._hf_hook = object()
        else:
            HookRegistry.check_if_exists_or_initialize(norm).register_hook(Count(), "count")
        actual = forward(model, inputs)
        assert calls == ["hook"]
        if wrapper == "diffusers_registry":
            HookRegistry.check_if_exists_or_initialize(norm).remove_hook("count")
            forward(model, inputs)
            assert calls == ["hook"]  # the empty registry no longer blocks the fused path
        else:
            norm.forward = inner
            del norm._hf_hook
    finally:
        report.restore()
    assert S.relative_error(actual, expected) <= CPU_REL_TOL[torch.float32]


def test_patching_keeps_parameters_and_state_dict(ltx_kernels):
    model = tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        after = model.state_dict()
        assert before.keys() == after.keys()
        assert all(torch.equal(before[k], after[k]) for k in before)
    finally:
        report.restore()


class GemmaStyleRMSNorm(nn.RMSNorm):
    """x * (1 + w): an RMSNorm subclass with another formula, which must not be patched."""

    def forward(self, x):
        return nn.functional.rms_norm(x, self.normalized_shape, None, self.eps) * (1 + self.weight)


class MyRMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.weight


class CustomProcessor(transformer_ltx.LTXVideoAttnProcessor):
    pass


def test_modules_that_are_not_proven_equivalent_are_refused_and_left_alone(ltx_kernels):
    model = tiny()
    dim = model.config.num_attention_heads * model.config.attention_head_dim
    b0, b1 = model.transformer_blocks
    b0.norm2 = DiffusersRMSNorm(dim, eps=1e-6, elementwise_affine=True, bias=True)
    b0.attn1.norm_q = GemmaStyleRMSNorm(dim, eps=1e-5)
    b0.attn2.norm_k = MyRMSNorm(dim)
    b1.ff.net[0].approximate = "none"  # erf GELU: not the tanh kernel
    b1.attn2.set_processor(CustomProcessor())
    b1.attn1.norm_k.register_forward_hook(lambda *args: None)  # torch hook: fine, forward kept
    b1.norm1.forward = types.MethodType(DiffusersRMSNorm.forward, b1.norm1)  # someone else's patch

    inputs = S.make_inputs(model, 1, S.TINY_SHAPE)
    expected = forward(model, inputs)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        reasons = {s.name: s.reason for s in report.skipped}
        assert "bias" in reasons["transformer_blocks.0.norm2"]
        assert "subclass of torch.nn.RMSNorm" in reasons["transformer_blocks.0.attn1.norm_q"]
        assert "unverified formula" in reasons["transformer_blocks.0.attn2.norm_k"]
        assert "approximate='none'" in reasons["transformer_blocks.1.ff.net.0"]
        assert "CustomProcessor" in reasons["transformer_blocks.1.attn2"]
        assert "already replaced" in reasons["transformer_blocks.1.norm1"]
        # a block whose norms cannot be fused keeps diffusers' forward
        assert "norm1/norm2" in reasons["transformer_blocks.0"]
        assert "hooks" in reasons["transformer_blocks.1"]
        assert set(reasons) == {
            "transformer_blocks.0.norm2", "transformer_blocks.0.attn1.norm_q", "transformer_blocks.0.attn2.norm_k",
            "transformer_blocks.1.ff.net.0", "transformer_blocks.1.attn2", "transformer_blocks.1.norm1",
            "transformer_blocks.0", "transformer_blocks.1",
        }
        for name in ("transformer_blocks.0.norm2", "transformer_blocks.0.attn1.norm_q", "transformer_blocks.1.ff.net.0"):
            assert "forward" not in model.get_submodule(name).__dict__
        assert type(b1.attn2.processor) is CustomProcessor
        assert report.counts[P.KIND_RMSNORM_TORCH] == 6  # 8 minus the Gemma-style and MyRMSNorm
        assert report.counts[P.KIND_RMSNORM_DIFFUSERS] == 2  # 4 minus the biased and the taken one
        assert report.counts[P.KIND_ATTENTION] == 3
        assert S.relative_error(forward(model, inputs), expected) <= REL_TOL[torch.float32]
    finally:
        report.restore()
    assert type(b1.attn2.processor) is CustomProcessor
    assert "forward" in b1.norm1.__dict__  # the other patch survives our restore


def test_a_changed_diffusers_source_is_refused_unless_reverified(ltx_kernels, monkeypatch):
    monkeypatch.setitem(P.VERIFIED_SOURCES, "LTXVideoTransformerBlock.forward", "0" * 16)
    model = tiny()
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        assert report.counts[P.KIND_BLOCK_ADALN] == 0
        assert all("re-verify" in s.reason for s in report.skipped if s.name in {"transformer_blocks.0", "transformer_blocks.1"})
        assert report.counts[P.KIND_RMSNORM_TORCH] == 8  # the other families are unaffected
    finally:
        report.restore()
    report = P.patch_ltx_transformer(model, ltx_kernels, verify_source=False)
    try:
        assert report.counts[P.KIND_BLOCK_ADALN] == 2
    finally:
        report.restore()


def test_torch_rmsnorm_with_eps_none_uses_the_float32_epsilon_like_torch(ltx_kernels):
    # torch documents finfo(x.dtype).eps; ATen uses the eps of the fp32 computation dtype.
    norm = nn.RMSNorm(64, eps=None).to(torch.bfloat16)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(64) + 0.5)
    x = (torch.randn(5, 64) * 1e-2).to(torch.bfloat16)  # small values: eps dominates if wrong
    expected = norm(x)
    layers = P._load_layers(ltx_kernels)
    actual = types.MethodType(layers.TorchRMSNorm.forward, norm)(x)
    assert layers.torch_rms_norm_default_eps(torch.bfloat16) == torch.finfo(torch.float32).eps
    assert S.relative_error(actual, expected) < 1e-2
    wrong = nn.functional.rms_norm(x.float(), (64,), norm.weight.float(), torch.finfo(torch.bfloat16).eps)
    assert S.relative_error(wrong, expected) > 0.5


def test_rmsnorm_over_two_dims_is_refused(ltx_kernels):
    model = tiny()
    model.transformer_blocks[0].attn1.norm_q = nn.RMSNorm((2, 20), eps=1e-5)
    report = P.patch_ltx_transformer(model, ltx_kernels, adaln=False, gelu=False, attention=False)
    try:
        assert any("normalizes over (2, 20)" in s.reason for s in report.skipped)
    finally:
        report.restore()


def test_weightless_norms_never_allocate_a_ones_weight(ltx_kernels, monkeypatch):
    layers = P._load_layers(ltx_kernels)
    norm = DiffusersRMSNorm(40, eps=1e-6, elementwise_affine=False)
    x = torch.randn(3, 7, 40)
    expected = norm(x)

    def forbidden(*args, **kwargs):
        raise AssertionError("a weightless norm must not build a ones weight per call")

    monkeypatch.setattr(torch, "ones", forbidden)
    monkeypatch.setattr(torch, "ones_like", forbidden)
    actual = types.MethodType(layers.DiffusersRMSNorm.forward, norm)(x)
    assert S.relative_error(actual, expected) < 1e-6


def test_diffusers_rmsnorm_with_fp32_weight_keeps_diffusers_fp32_output(ltx_kernels):
    layers = P._load_layers(ltx_kernels)
    norm = DiffusersRMSNorm(40, eps=1e-6, elementwise_affine=True)  # fp32 weight
    x = torch.randn(3, 40).to(torch.bfloat16)
    expected = norm(x)
    assert expected.dtype == torch.float32  # diffusers promotes to the weight's dtype
    actual = types.MethodType(layers.DiffusersRMSNorm.forward, norm)(x)
    assert actual.dtype == torch.float32 and torch.equal(actual, expected)


def test_hub_layers_follow_the_kernel_hub_layer_rules(ltx_kernels):
    layers = P._load_layers(ltx_kernels)
    module_members = {name for name, _ in inspect.getmembers(nn.Module)}
    for name in ("DiffusersRMSNorm", "TorchRMSNorm", "GELUTanh", "TorchGELUTanh", "LTXVideoBlockAdaLN"):
        layer = getattr(layers, name)
        assert layer.__init__ is nn.Module.__init__, name  # stateless
        extra = {m for m, _ in inspect.getmembers(layer)} - module_members
        assert extra <= {"can_torch_compile", "has_backward"}, (name, extra)
        assert layer.can_torch_compile is True and layer.has_backward is False


def test_gelu_epilogue_option_never_uses_the_epilogue_op_off_cuda(ltx_kernels):
    # torch._addmm_activation(use_gelu=True) is tanh-GELU on CUDA (cuBLASLt epilogue) but erf
    # GELU on CPU: the opt-in layer must take the kernel path there.
    x, w, b = torch.randn(5, 16), torch.randn(32, 16), torch.randn(32)
    cpu = torch._addmm_activation(b, x, w.t(), use_gelu=True)
    assert torch.allclose(cpu, nn.functional.gelu(nn.functional.linear(x, w, b)), atol=1e-6)
    assert not torch.allclose(cpu, nn.functional.gelu(nn.functional.linear(x, w, b), approximate="tanh"), atol=1e-6)

    model = tiny()
    inputs = S.make_inputs(model, 1, S.TINY_SHAPE)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        kernel_path = forward(model, inputs)
    finally:
        report.restore()
    report = P.patch_ltx_transformer(model, ltx_kernels, gelu_epilogue=True)
    try:
        assert report.counts[P.KIND_GELU_TANH_EPILOGUE] == 2 and report.counts[P.KIND_GELU_TANH] == 0
        assert torch.equal(forward(model, inputs), kernel_path)
    finally:
        report.restore()


def test_patch_refuses_compiled_models_and_non_modules(ltx_kernels):
    model = tiny()
    model.compile_repeated_blocks(backend="eager")
    with pytest.raises(P.PatchError, match="patch first, then torch.compile"):
        P.patch_ltx_transformer(model, ltx_kernels)
    with pytest.raises(P.PatchError, match="pipe.transformer"):
        P.patch_ltx_transformer(object(), ltx_kernels)
    with pytest.raises(P.PatchError, match="lacks"):
        P.patch_ltx_transformer(tiny(), types.ModuleType("ltx_video_kernels_fake_no_layers"))


def test_patched_transformer_compiles_as_one_graph(ltx_kernels):
    import torch._dynamo

    model = tiny()
    inputs = S.make_inputs(model, 2, S.TINY_SHAPE, per_token_timestep=True)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        expected = forward(model, inputs)
        torch._dynamo.reset()
        compiled = torch.compile(model, fullgraph=True, dynamic=False, backend="aot_eager")
        actual = forward(compiled, inputs)
        assert S.relative_error(actual, expected) <= REL_TOL[torch.float32]
    finally:
        torch._dynamo.reset()
        report.restore()


def _host_reads(model: nn.Module, inputs: dict) -> list[str]:
    """Ops of one forward that need the host to wait for the device or feed it host data.

    Run under FakeTensorMode with tensors that claim to be on CUDA, so the package takes its
    CUDA branch on a CPU-only machine. Such ops - ``.item()`` / ``.tolist()`` / ``bool(t)``
    (``_local_scalar_dense``), outputs whose shape depends on the data (``nonzero``), copies
    between the GPU and the host - cannot be captured in a CUDA graph.
    """
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    found: list[str] = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func._schema.name
            tensors_in = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
            tensors_out = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            devices_in = {t.device.type for t in tensors_in}
            devices_out = {t.device.type for t in tensors_out}
            if (
                name == "aten::_local_scalar_dense"
                or torch.Tag.data_dependent_output in func.tags
                or torch.Tag.dynamic_output_shape in func.tags
                or ("cuda" in devices_in and "cpu" in devices_out)
                or ("cpu" in devices_in and "cuda" in devices_out and tensors_in[0].numel() > 1)
            ):
                found.append(name)
            return out

    with torch.inference_mode(), Watch():
        model(**inputs)
    return found


def test_patched_step_makes_no_host_reads_so_it_can_be_captured_in_a_cuda_graph(ltx_kernels):
    # A CUDA graph replays device work only: a host read (an .item(), a shape that depends on
    # data) or a host-to-device copy inside the step would fail the capture or be frozen into
    # it. Default widths (real kernel paths), 2 blocks, batch 2, both timestep layouts.
    from torch._subclasses.fake_tensor import FakeTensorMode

    default_dtype = torch.get_default_dtype()
    with FakeTensorMode(allow_non_fake_inputs=True):
        torch.set_default_dtype(torch.bfloat16)  # fake parameters cannot be cast in place
        try:
            with torch.device("cuda"):
                model = LTXVideoTransformer3DModel(num_layers=2).eval()
        finally:
            torch.set_default_dtype(default_dtype)
        for per_token in (False, True):
            inputs = S.make_inputs(model, 2, S.FULL_SHAPE, per_token_timestep=per_token)
            assert _host_reads(model, inputs) == []  # diffusers' own step is capturable
            report = P.patch_ltx_transformer(model, ltx_kernels)
            try:
                assert report.total > 0
                assert _host_reads(model, inputs) == []
            finally:
                report.restore()


def test_patch_layers_and_processor_source_has_no_host_syncs():
    # The static half of the check above, for code paths the tiny run may not reach.
    import ast

    layers_py = INTEGRATION.parent / "torch-ext" / "ltx_video_kernels" / "layers.py"
    forbidden = {"item", "tolist", "cpu", "numpy", "synchronize", "nonzero"}
    for path in (layers_py, INTEGRATION / "patch_ltx.py"):
        tree = ast.parse(path.read_text())
        calls = {
            node.func.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        assert not calls & forbidden, (path.name, calls & forbidden)


# --------------------------------------------------------------------------- scripts


def _load_benchmark_module():
    # The qwen3 integration ships a module of the same name; importing by path under
    # a unique name keeps the two from shadowing each other in one pytest session.
    import importlib.util

    spec = importlib.util.spec_from_file_location("ltx_benchmark_e2e", INTEGRATION / "benchmark_e2e.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def test_benchmark_cpu_path_writes_json_and_markdown(ltx_kernels, tmp_path):
    benchmark_e2e = _load_benchmark_module()

    package_root = Path(ltx_kernels.__file__).resolve().parent.parent
    out, md = tmp_path / "e2e.json", tmp_path / "RESULTS.md"
    rc = benchmark_e2e.main([
        "--device", "cpu", "--package-path", str(package_root), "--iters", "2", "--warmup", "0",
        "--out", str(out), "--markdown", str(md),
    ])
    data = json.loads(out.read_text())
    assert rc == 0, data["errors"]
    assert [r["config"] for r in data["results"]] == ["eager", "patched", "compile", "patched+compile"]
    assert all(r["median_ms"] > 0 for r in data["results"])
    assert all(r["rel_err_vs_eager"] <= REL_TOL[torch.float32] for r in data["results"])
    assert data["patch"]["counts"] == {
        P.KIND_ATTENTION: 4, P.KIND_BLOCK_ADALN: 2, P.KIND_GELU_TANH: 2, P.KIND_GELU_TANH_TORCH: 1,
        P.KIND_RMSNORM_DIFFUSERS: 4, P.KIND_RMSNORM_TORCH: 8,
    }
    assert set(data["speedups"]["1"]) >= {"patched_vs_eager", "patched+compile_vs_compile"}
    text = md.read_text()
    assert "| 1 | patched+compile |" in text and "generated by" in text

    cli = subprocess.run([sys.executable, str(RESULTS_MD_CLI), str(out), "-o", str(tmp_path / "again.md")],
                         capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert (tmp_path / "again.md").read_text() == text


def test_benchmark_refuses_cuda_only_configurations_on_cpu(capsys):
    benchmark_e2e = _load_benchmark_module()
    with pytest.raises(SystemExit) as exc:
        benchmark_e2e.parse_args(["--device", "cpu", "--configs", "eager", "patched+cudagraph"])
    assert exc.value.code == 2
    assert "patched+cudagraph" in capsys.readouterr().err


def test_benchmark_reports_the_goal_with_and_without_cuda_graphs():
    benchmark_e2e = _load_benchmark_module()
    ms = {"eager": 35.0, "compile": 24.0, "patched+compile": 27.0,
          "eager+cudagraph": 30.0, "compile+cudagraph": 22.0, "patched+compile+cudagraph": 21.0}
    results = [{"batch": 1, "config": name, "median_ms": t} for name, t in ms.items()]
    speedups, goal, goal_graphed = benchmark_e2e._speedups(results, [1])
    assert goal == {"1": False} and goal_graphed == {"1": True}
    assert speedups["1"]["patched+compile+cudagraph_vs_compile+cudagraph"] == round(22.0 / 21.0, 3)
    assert speedups["1"]["compile+cudagraph_vs_eager+cudagraph"] == round(30.0 / 22.0, 3)
    assert "patched_vs_eager" not in speedups["1"]  # not measured, not invented


def test_benchmark_pairs_the_pdl_off_configurations_with_their_baselines(capsys):
    benchmark_e2e = _load_benchmark_module()
    args = benchmark_e2e.parse_args(["--configs", "patched+compile+nopdl", "patched+compile+cudagraph+nopdl"])
    assert args.configs == ["patched+compile+nopdl", "patched+compile+cudagraph+nopdl"]
    with pytest.raises(SystemExit):  # CUDA-only: set_pdl is a CUDA launch setting
        benchmark_e2e.parse_args(["--device", "cpu", "--configs", "patched+compile+nopdl"])
    assert "patched+compile+nopdl" in capsys.readouterr().err
    ms = {"compile": 24.0, "patched+compile+nopdl": 23.0, "compile+cudagraph": 22.0,
          "patched+compile+cudagraph+nopdl": 20.0}
    speedups, _, _ = benchmark_e2e._speedups([{"batch": 1, "config": k, "median_ms": v} for k, v in ms.items()], [1])
    assert speedups["1"]["patched+compile+nopdl_vs_compile"] == round(24.0 / 23.0, 3)
    assert speedups["1"]["patched+compile+cudagraph+nopdl_vs_compile+cudagraph"] == round(22.0 / 20.0, 3)


def test_benchmark_runs_the_cache_hint_configurations_with_the_switch_on_and_restores_it(capsys):
    benchmark_e2e = _load_benchmark_module()
    args = benchmark_e2e.parse_args(["--configs", "patched+compile+hints", "patched+compile+cudagraph+hints"])
    assert args.configs == ["patched+compile+hints", "patched+compile+cudagraph+hints"]
    with pytest.raises(SystemExit):  # CUDA-only, like +nopdl
        benchmark_e2e.parse_args(["--device", "cpu", "--configs", "patched+compile+hints"])
    assert "patched+compile+hints" in capsys.readouterr().err
    assert benchmark_e2e.SWITCHES == {"nopdl": ("set_pdl", False), "hints": ("set_cache_hints", True)}
    ms = {"compile": 24.0, "patched+compile+hints": 22.5, "compile+cudagraph": 22.0,
          "patched+compile+cudagraph+hints": 21.0}
    speedups, _, _ = benchmark_e2e._speedups([{"batch": 1, "config": k, "median_ms": v} for k, v in ms.items()], [1])
    assert speedups["1"]["patched+compile+hints_vs_compile"] == round(24.0 / 22.5, 3)
    assert speedups["1"]["patched+compile+cudagraph+hints_vs_compile+cudagraph"] == round(22.0 / 21.0, 3)


@pytest.mark.parametrize("modifier", ["nopdl", "hints"])
def test_results_md_renders_the_switch_rows_next_to_their_plain_rows(modifier: str):
    render = _load_benchmark_module().render
    data = json.loads((INTEGRATION / "results" / "e2e_h200.json").read_text())
    median = {(r["batch"], r["config"]): r["median_ms"] for r in data["results"]}
    for batch in (1, 2):  # a run without this A/B gets rows 3 % slower than patched+compile
        for base in ("patched+compile", "patched+compile+cudagraph"):
            name = f"{base}+{modifier}"
            if (batch, name) not in median:
                median[(batch, name)] = round(median[(batch, base)] * 1.03, 4)
                data["results"].append({"batch": batch, "config": name, "median_ms": median[(batch, name)]})
    text = render(data)
    for batch in (1, 2):
        plain = f"| {batch} | patched+compile+{modifier} | {median[(batch, f'patched+compile+{modifier}')]:.2f} |"
        graphed = (f"| {batch} | patched+compile+cudagraph+{modifier} | "
                   f"{median[(batch, f'patched+compile+cudagraph+{modifier}')]:.2f} |")
        assert plain in text and graphed in text
        vs_compile = median[(batch, "compile")] / median[(batch, f"patched+compile+{modifier}")]
        row = next(line for line in text.splitlines() if line.startswith(plain))
        assert f"| {vs_compile:.2f}x |" in row  # compared with compile like patched+compile
    assert text.index(f"patched+compile+cudagraph+{modifier}") > text.index("## With CUDA graphs")


def test_results_md_renders_cuda_graph_rows_in_their_own_table_only_when_measured():
    render = _load_benchmark_module().render

    data = json.loads((INTEGRATION / "results" / "e2e_h200.json").read_text())
    # start from the committed run without its +cudagraph rows (a run that did not measure them)
    data["results"] = [r for r in data["results"] if "cudagraph" not in r["config"].split("+")]
    data.pop("goal_patched_compile_faster_than_compile_cudagraph", None)
    data.get("settings", {}).pop("cudagraph", None)
    plain = render(data)
    assert "cudagraph" not in plain and "With CUDA graphs" not in plain

    data["results"] += [
        {"batch": 1, "config": "eager+cudagraph", "median_ms": 30.0, "min_ms": 29.9, "max_ms": 30.2,
         "rel_err_vs_eager": 0.0, "first_call_s": 1.5},
        {"batch": 1, "config": "compile+cudagraph", "median_ms": 22.0, "rel_err_vs_eager": 0.015,
         "first_call_s": 9.0},
        {"batch": 1, "config": "patched+compile+cudagraph", "median_ms": 20.0, "rel_err_vs_eager": 0.0064,
         "first_call_s": 4.0},
    ]
    data["goal_patched_compile_faster_than_compile_cudagraph"] = {"1": True}
    text = render(data)
    remaining = iter(text.splitlines())
    assert all(line in remaining for line in plain.splitlines())  # everything else unchanged, in order
    assert "| 1 | patched+compile+cudagraph | 20.00 | - | " in text
    eager_ms = next(r["median_ms"] for r in data["results"] if r["config"] == "eager" and r["batch"] == 1)
    assert f"| {eager_ms / 20.0:.2f}x | 1.50x | 1.10x | 6.4e-03 | 4.0 |" in text
    assert "| 1 | compile+cudagraph | 22.00 |" in text and "| 1 | patched+cudagraph |" not in text
    assert "Goal with CUDA graphs - patched + compile faster than compile alone: batch 1: yes." in text


_NO_TORCH = textwrap.dedent(
    """
    import runpy, sys
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"torch", "diffusers"}:
                raise ImportError("blocked " + name)
    sys.meta_path.insert(0, Block())
    sys.argv = [sys.argv[1], "--help"]
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)


@pytest.mark.parametrize(
    "script",
    [INJECTION_SCRIPT, INTEGRATION / "benchmark_e2e.py", RESULTS_MD_CLI],
    ids=lambda p: p.name,
)
def test_script_help_works_without_torch(script):
    proc = subprocess.run([sys.executable, "-c", _NO_TORCH, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "usage:" in proc.stdout


def test_injection_example_cpu_path(ltx_kernels, tmp_path):
    package_root = Path(ltx_kernels.__file__).resolve().parent.parent
    out = tmp_path / "injection.json"
    proc = subprocess.run(
        [sys.executable, str(INJECTION_SCRIPT), "--device", "cpu", "--package-path", str(package_root),
         "--iters", "2", "--warmup", "0", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert data["patch"]["total"] == 21
    assert set(data["median_ms"]) == {"eager", "patched", "compile", "patched+compile"}
    assert data["rel_err_patched_vs_eager"] <= REL_TOL[torch.float32]
    assert "speedup" in proc.stdout
    times = data["median_ms"]
    assert data["speedups"]["patched+compile_vs_compile"] == pytest.approx(times["compile"] / times["patched+compile"])
    # Bandwidth context as every model script reports it; on CPU there is no copy bandwidth
    # to compare with, and the report says why.
    assert data["copy_bandwidth_gbps"] is None and "CUDA only" in data["copy_bandwidth_note"]
    assert data["weight_bytes"] > 0 and "lower bound" in data["weight_bytes_note"]
    assert "matmul- and attention-bound" in data["roofline_note"]
    assert set(data["traffic"]) == set(times)
    for name, ms in times.items():
        assert data["traffic"][name]["weight_gbps"] == pytest.approx(data["weight_bytes"] / (ms * 1e-3) / 1e9)
        assert data["traffic"][name]["weight_pct_of_copy_bw"] is None


def test_injection_example_rejects_bad_arguments():
    proc = subprocess.run([sys.executable, str(INJECTION_SCRIPT), "--iters", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--iters" in proc.stderr


# --------------------------------------------------------------------------- GPU


@pytest.fixture(scope="module")
def full_size_case():
    """Default-config transformer in fp32 on the GPU, batch-2 inputs and the float64 output."""
    model = S.build_transformer(S.DEFAULT_CONFIG, device="cuda", dtype=torch.float32, seed=0)
    inputs = S.make_inputs(model, 2, S.FULL_SHAPE, seed=0)
    model.double()
    exact = forward(model, S.cast_inputs(inputs, torch.float64)).cpu()
    model.float()
    torch.cuda.empty_cache()
    yield model, inputs, exact
    del model
    torch.cuda.empty_cache()


@pytest.mark.gpu
def test_full_size_fp32_patched_matches_diffusers(ltx_kernels, full_size_case):
    model, inputs, exact = full_size_case
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        stock = forward(model, inputs)
        report = P.patch_ltx_transformer(model, ltx_kernels)
        try:
            assert dict(report.counts) == EXPECTED_DEFAULT_COUNTS
            patched = forward(model, inputs)
        finally:
            report.restore()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    assert torch.isfinite(patched).all()
    assert S.relative_error(patched, stock) <= 1e-4
    assert S.relative_error(patched.cpu(), exact) <= 1.25 * S.relative_error(stock.cpu(), exact) + 1e-5


@pytest.mark.gpu
def test_full_size_bf16_patched_is_as_close_to_float64_as_diffusers(ltx_kernels, full_size_case):
    fp32_model, inputs, exact = full_size_case
    model = copy.deepcopy(fp32_model).bfloat16()  # keep the fixture's fp32 weights exact
    bf16_inputs = S.cast_inputs(inputs, torch.bfloat16)
    stock = forward(model, bf16_inputs)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        patched = forward(model, bf16_inputs)
    finally:
        report.restore()
    del model
    torch.cuda.empty_cache()
    err_stock = S.relative_error(stock.cpu(), exact)
    err_patched = S.relative_error(patched.cpu(), exact)
    print(f"\nfull size bf16 rel. error vs float64: diffusers {err_stock:.3e}, patched {err_patched:.3e}, "
          f"patched vs diffusers {S.relative_error(patched, stock):.3e}")
    assert torch.isfinite(patched).all()
    assert err_patched <= 1.25 * err_stock + 1e-3
    assert S.relative_error(patched, stock) <= REL_TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_gpu_tiny_transformer_with_per_token_timesteps(ltx_kernels, dtype):
    model = S.build_transformer(S.TINY_CONFIG, device="cuda", dtype=dtype, seed=0)
    inputs = S.make_inputs(model, 3, S.TINY_SHAPE, seed=5, per_token_timestep=True)
    expected = forward(model, inputs)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        actual = forward(model, inputs)
    finally:
        report.restore()
    assert S.relative_error(actual, expected) <= REL_TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_gpu_gelu_epilogue_layer_is_tanh_gelu(ltx_kernels, dtype):
    layers = P._load_layers(ltx_kernels)
    torch.manual_seed(0)
    module = GELU(2048, 8192, approximate="tanh").to("cuda", dtype)
    x = torch.randn(2, 2688, 2048, device="cuda", dtype=dtype)
    exact = nn.functional.gelu(
        nn.functional.linear(x.double(), module.proj.weight.double(), module.proj.bias.double()), approximate="tanh"
    )
    with torch.inference_mode():
        actual = types.MethodType(layers.GELUTanhEpilogue.forward, module)(x)
        stock = module(x)
    assert actual.dtype == dtype and actual.shape == (2, 2688, 8192)
    err = S.relative_error(actual, exact)
    if dtype is torch.float32:
        # What an fp32 GEMM + GELU epilogue can be asked for. Measured on the H200: stock
        # (cuBLAS fp32 GEMM, then torch's tanhf GELU) 9.45e-7, the cuBLASLt GELU epilogue
        # 2.69e-6 - it failed the old bound "<= 1.25 x stock + 1e-6". The CPU model
        # benchmarks/ltx_video/epilogue_error_model.py (same sizes and init) explains both: a plain fp32
        # GEMM accumulated sequentially over K = 2048 gives 9.45e-7 (stock measured the same), and
        # blocked summation orders give less, so the epilogue's extra ~2.5e-6 is not its GEMM's
        # summation order. It
        # is not TF32 either (3.1e-4 in the model) nor tanh.approx.f32's 2^-11 bound (1.5e-4),
        # but what a tanh accurate to ~2^-17 gives (2.6e-6): the epilogue evaluates tanh more
        # cheaply than libm, and cuBLASLt documents no accuracy for it. Comparing with stock
        # tested that tanh against torch's; the layer's contract is "tanh-GELU at fp32
        # accuracy". 1e-5 is ~4x the measurement and still 20x below the erf-vs-tanh gap
        # (2.0e-4) and 30x below a TF32 GEMM, so a wrong formula or a TF32 path fails.
        with torch.no_grad():
            erf_form = nn.functional.gelu(
                nn.functional.linear(x.double(), module.proj.weight.double(), module.proj.bias.double())
            )
        print(f"\nfp32 GELU epilogue rel. error vs float64 tanh-GELU {err:.2e} (stock "
              f"{S.relative_error(stock, exact):.2e}), vs erf-GELU {S.relative_error(actual, erf_form):.2e}")
        assert err <= 1e-5
        assert S.relative_error(actual, erf_form) >= 10 * err  # the tanh form, not erf
    else:
        # bf16: the output rounding (~2e-3) dwarfs GEMM and tanh differences; as close as stock.
        assert err <= 1.25 * S.relative_error(stock, exact) + 1e-6


@pytest.mark.gpu
def test_gpu_compiled_graph_calls_the_kernels_and_matches_eager(ltx_kernels):
    import torch._dynamo

    # default widths (2048, 32 heads), 2 blocks: real kernel shapes, short compile
    model = S.build_transformer({"num_layers": 2}, device="cuda", dtype=torch.bfloat16, seed=0)
    inputs = S.make_inputs(model, 1, S.FULL_SHAPE, seed=0)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    seen: set[str] = set()

    def recording_backend(gm, example_inputs):
        for node in gm.graph.nodes:
            target = node.target
            qualified = getattr(getattr(target, "_schema", None), "name", None) or getattr(
                target, "_qualified_op_name", ""
            )
            if node.op == "call_function" and "ltx_video_kernels" in qualified:
                seen.add(qualified.split("::")[-1])
        return gm.forward

    try:
        expected = forward(model, inputs)
        torch._dynamo.reset()
        forward(torch.compile(model, fullgraph=True, dynamic=False, backend=recording_backend), inputs)
        assert {"rms_norm", "rms_norm_modulate", "gelu_tanh"} <= seen, seen
        torch._dynamo.reset()
        actual = forward(torch.compile(model, fullgraph=True, dynamic=False), inputs)
        assert S.relative_error(actual, expected) <= 1e-2
    finally:
        torch._dynamo.reset()
        report.restore()


@pytest.mark.gpu
def test_gpu_patched_step_replays_in_a_cuda_graph_and_matches_eager(ltx_kernels):
    # What benchmark_e2e.py's +cudagraph configurations do, checked: capture the patched step
    # once, write new inputs into the captured tensors, replay, compare with eager.
    benchmark_e2e = _load_benchmark_module()
    model = S.build_transformer({"num_layers": 2}, device="cuda", dtype=torch.bfloat16, seed=0)
    static = S.make_inputs(model, 2, S.FULL_SHAPE, seed=0)
    fresh = S.make_inputs(model, 2, S.FULL_SHAPE, seed=1, per_token_timestep=False)
    fresh["timestep"] = torch.full_like(static["timestep"], 412.0)
    stock = forward(model, fresh)
    report = P.patch_ltx_transformer(model, ltx_kernels)
    try:
        with torch.inference_mode():
            graph, out = benchmark_e2e._capture_step(torch, lambda: model(**static)[0], warmup=2)
            first = out.clone()
            for key in ("hidden_states", "encoder_hidden_states", "timestep", "encoder_attention_mask"):
                static[key].copy_(fresh[key])
            graph.replay()
            torch.cuda.synchronize()
            replayed = out.clone()
            expected = model(**fresh)[0]
        del graph
    finally:
        report.restore()
    assert torch.isfinite(replayed).all()
    assert S.relative_error(replayed, first) > 0.1  # the replay computed the new inputs
    assert S.relative_error(replayed, expected) <= 1e-3
    assert S.relative_error(replayed, stock) <= REL_TOL[torch.bfloat16]


# --------------------------------------------------------------- committed results


def test_committed_e2e_json_and_its_report_in_evidence():
    # The skill ships the JSON (one record per line, as benchmark_e2e.py writes it); the full
    # Markdown report of that run is kept with its logs in evidence/.
    benchmark_e2e = _load_benchmark_module()
    path = INTEGRATION / "results" / "e2e_h200.json"
    data = json.loads(path.read_text())
    assert data["complete"] and not data["errors"] and data["environment"]["gpu"] == "NVIDIA H200"
    assert path.read_text(encoding="utf-8") == benchmark_e2e.dumps_records(data)
    report = REPO / "evidence" / "ltx_video" / "integration" / "RESULTS.md"
    source = os.path.relpath(path, report.parent)
    assert report.read_text() == benchmark_e2e.render(data, source=source)


def test_example_readme_end_to_end_table_is_the_committed_json():
    readme = (INTEGRATION.parent / "README.md").read_text()
    data = json.loads((INTEGRATION / "results" / "e2e_h200.json").read_text())
    median = {(r["batch"], r["config"]): r["median_ms"] for r in data["results"]}
    for batch in (1, 2):
        cells = [f"{median[(batch, c)]:.2f}" for c in ("eager", "patched", "compile", "patched+compile")]
        assert f"| {batch} | " + " | ".join(cells) + " |" in readme
        goal = data["goal_patched_compile_faster_than_compile"][str(batch)]
        ratio = median[(batch, "compile")] / median[(batch, "patched+compile")]
        assert f"{ratio:.2f}x - **{'met' if goal else 'not met'}**" in readme
