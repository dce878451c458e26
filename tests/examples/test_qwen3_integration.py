"""qwen3_8b integration: the patch module, the Kernel Hub layers, the benchmarks and scripts.

CPU tests (CI) run tiny random-weight models through the package's PyTorch fallback and
the real Qwen3-8B architecture on the meta device; `gpu` tests run the full-size model in
bf16 on the GPU. Every transformers / kernels call the integration makes is bound
against the installed signatures here, so API drift fails a test instead of a user.
"""

from __future__ import annotations

import inspect
import json
import os
import contextvars
import functools
import subprocess
import sys
import textwrap
import types
import warnings
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[2]
SKILL = REPO / "skills" / "cuda-kernels"
EXAMPLE = SKILL / "examples" / "qwen3_8b"
INTEGRATION = EXAMPLE / "integration"
TOOLS = REPO / "benchmarks" / "qwen3_8b"  # results_md.py, profile_e2e.py: repository tools, not shipped
SCRIPTS = SKILL / "scripts"
LAYERS_FILE = EXAMPLE / "torch-ext" / "qwen3_8b_kernels" / "layers.py"

if str(INTEGRATION) not in sys.path:
    sys.path.insert(0, str(INTEGRATION))

import kernel_hub  # noqa: E402
import patch_qwen3 as pq  # noqa: E402
import qwen3_models as qm  # noqa: E402
from transformers.models.llama import modeling_llama as ml  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from transformers.models.qwen3 import modeling_qwen3 as mq  # noqa: E402

ORIGINAL_ROPE = mq.apply_rotary_pos_emb


def package_path(pkg: ModuleType) -> Path:
    """The sys.path entry from which `pkg` was imported."""
    return Path(pkg.__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _transformers_is_left_as_found():
    # Every test must leave transformers' RoPE global and its classes as it found them.
    before = {cls: cls.__dict__.get("kernel_layer_name") for cls in (mq.Qwen3RMSNorm, mq.Qwen3MLP, ml.LlamaRMSNorm, ml.LlamaMLP)}
    yield
    assert mq.apply_rotary_pos_emb is ORIGINAL_ROPE
    assert {cls: cls.__dict__.get("kernel_layer_name") for cls in before} == before


def tiny(dtype=torch.float32, seed: int = 0, **overrides):
    return qm.build_random_model(qm.tiny_qwen3_config(**overrides), dtype=dtype, seed=seed)


def logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids, use_cache=False).logits


IDS = qm.random_input_ids(2, 29, qm.TINY_QWEN3_CONFIG["vocab_size"], device="cpu")


# ----------------------------------------------------------------- API facts (no build)


def test_every_transformers_call_binds_to_the_installed_signatures():
    from transformers import AutoModelForCausalLM, Qwen3Config, StaticCache

    inspect.signature(Qwen3Config).bind(**qm.QWEN3_8B_CONFIG)
    inspect.signature(StaticCache).bind(config=qm.tiny_qwen3_config(), max_cache_len=8)
    inspect.signature(mq.Qwen3ForCausalLM.forward).bind(
        None, input_ids=IDS, use_cache=False, logits_to_keep=0, past_key_values=None
    )
    # from_config(**kwargs) hides its keywords: check what they do instead.
    model = AutoModelForCausalLM.from_config(qm.tiny_qwen3_config(), dtype=torch.bfloat16, attn_implementation="sdpa")
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert model.config._attn_implementation == "sdpa"
    assert callable(StaticCache(config=qm.tiny_qwen3_config(), max_cache_len=8).reset)


def test_the_patched_forwards_have_the_signatures_of_what_they_replace():
    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    ops = ModuleType("ops")
    qwen3, llama = pq._FAMILIES
    cache = pq._cache_param(mq.Qwen3DecoderLayer, qwen3, pq._DECODER_PARAMS)
    assert cache == pq._cache_param(ml.LlamaDecoderLayer, llama, pq._DECODER_PARAMS) is not None
    for down_residual in (False, True):
        assert params(pq._make_decoder_forward(ops, down_residual, cache)) == params(mq.Qwen3DecoderLayer.forward)
        assert params(pq._make_decoder_forward(ops, down_residual, cache)) == params(ml.LlamaDecoderLayer.forward)
    assert params(pq._make_norm_forward(ops)) == params(mq.Qwen3RMSNorm.forward)
    assert params(pq._make_mlp_forward(ops, fused=True)) == params(mq.Qwen3MLP.forward)
    assert params(pq._make_rope(ORIGINAL_ROPE, ops)) == params(ORIGINAL_ROPE)
    assert params(pq._make_attention_forward(ops, mq.__name__, cache)) == params(mq.Qwen3Attention.forward)
    # The fused attention reproduces a forward that uses exactly these names (the code under
    # transformers' own wrappers: deprecate_kwarg from 5.24).
    assert set(pq._ATTENTION_NAMES) <= set(pq._own_forward(mq.Qwen3Attention, qwen3).__code__.co_names)
    # The RoPE patch point works only because the attention forward reads the global.
    assert "apply_rotary_pos_emb" in pq._own_forward(mq.Qwen3Attention, qwen3).__code__.co_names
    assert "apply_rotary_pos_emb" in pq._own_forward(ml.LlamaAttention, llama).__code__.co_names


def test_transformers_hub_decorators_are_active_only_inside_the_kernels_window():
    """transformers enables its kernels integration only for KERNELS_MIN_VERSION <= kernels <
    KERNELS_MAX_VERSION (5.17.0: [0.16.0, 0.17.0), 5.25.0: [0.19.1, 0.20.0)); kernel_hub.py and
    huggingface_kernels_example.py must work on both sides of it."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version
    from transformers.utils import import_utils

    window = (import_utils.KERNELS_MIN_VERSION, import_utils.KERNELS_MAX_VERSION)
    measured = {"5.17.0": ("0.16.0", "0.17.0"), "5.25.0": ("0.19.1", "0.20.0")}  # quoted in the references
    if transformers.__version__ in measured:
        assert window == measured[transformers.__version__]
    try:
        installed = Version(version("kernels"))
    except PackageNotFoundError:
        installed = None
    inside = installed is not None and Version(window[0]) <= installed < Version(window[1])
    assert import_utils.is_kernels_available() == inside
    if inside:
        assert mq.Qwen3RMSNorm.__dict__["kernel_layer_name"] == "RMSNorm"
        # transformers' condition takes subclasses too: why kernel_hub installs its own.
        assert mq.Qwen3RMSNorm.kernel_condition(GemmaStyleNorm(8))
        assert isinstance(mq.apply_rotary_pos_emb, nn.Module)
        assert type(mq.apply_rotary_pos_emb).kernel_layer_name == "rotary_pos_emb"
    else:
        assert "kernel_layer_name" not in mq.Qwen3RMSNorm.__dict__
        assert isinstance(mq.apply_rotary_pos_emb, type(lambda: 0))
    if installed is None:
        return
    from kernels import KernelizeFallback, Mode, kernelize, use_kernel_mapping

    # The consequence for kernelize: inside the window, decorated layers the mapping does not
    # name (rotary_pos_emb, SiLU) make use_fallback=False raise; NO_LAYER lets them keep their
    # forward. Outside it nothing is decorated, so there is nothing to refuse or to swap.
    model = tiny()
    with use_kernel_mapping({}, inherit_mapping=False):
        if inside:
            with pytest.raises(ValueError, match="No layer mapping for"):
                kernelize(model, mode=Mode.INFERENCE, device="cpu", use_fallback=False)
        else:
            kernelize(model, mode=Mode.INFERENCE, device="cpu", use_fallback=False)
        kernelize(model, mode=Mode.INFERENCE, device="cpu", use_fallback=KernelizeFallback.NO_LAYER)


def test_every_kernels_call_binds_to_the_installed_signatures(tmp_path):
    kernels = pytest.importorskip("kernels")
    from kernels import LocalLayerRepository, Mode

    inspect.signature(kernels.kernelize).bind(torch.nn.Linear(1, 1), mode=Mode.INFERENCE, device="cpu", use_fallback=True)
    inspect.signature(kernels.use_kernel_mapping).bind({}, inherit_mapping=False)
    inspect.signature(kernels.replace_kernel_forward_from_hub).bind(mq.Qwen3RMSNorm, "RMSNorm", condition=None)
    inspect.signature(kernels.get_local_kernel).bind(tmp_path)
    inspect.signature(LocalLayerRepository).bind(repo_path=tmp_path, layer_name="RMSNorm")
    assert Mode.INFERENCE | Mode.TORCH_COMPILE  # a valid combination in this version


def test_local_repository_metadata_is_what_kernels_parses(tmp_path):
    kernels = pytest.importorskip("kernels")
    pkg = tmp_path / "src" / "qwen3_8b_kernels"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    repo = kernel_hub.local_repository(pkg, tmp_path / "repo", archs=["9.0"])
    meta = kernels.Metadata.read_from_file(repo / "metadata.json")
    assert meta.name.python_name == "qwen3_8b_kernels"
    assert (repo / "qwen3_8b_kernels").resolve() == pkg.resolve()
    assert kernel_hub.local_repository(pkg, tmp_path / "repo") == repo  # idempotent


def test_hub_layers_obey_kernels_layer_rules():
    """kernels rejects layers with an __init__ or extra members, and forwards whose
    parameters differ from the replaced forward (kernels.layer.layer._validate_layer)."""
    source = LAYERS_FILE.read_text()
    tree = __import__("ast").parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, __import__("ast").ClassDef)}
    assert set(classes) == {"RMSNorm", "SwiGLUMLP", "ApplyRotaryPosEmb"}
    for cls in classes.values():
        members = {
            t.id for n in cls.body if isinstance(n, __import__("ast").Assign) for t in n.targets
        } | {n.name for n in cls.body if isinstance(n, __import__("ast").FunctionDef)}
        assert members == {"can_torch_compile", "has_backward", "forward"}, cls.name


# ------------------------------------------------------------ the real model, on meta


def test_qwen3_8b_config_gives_the_published_architecture():
    with torch.device("meta"):
        model = mq.Qwen3ForCausalLM(qm.qwen3_8b_config())
    counts = qm.count_modules(model)
    assert counts["decoder_layers"] == qm.QWEN3_8B_LAYERS == 36
    assert counts["rms_norm_by_class"] == {"Qwen3RMSNorm": qm.QWEN3_8B_RMSNORMS} == {"Qwen3RMSNorm": 145}
    assert counts["rms_norm_by_role"] == {
        "input_layernorm": 36, "post_attention_layernorm": 36, "q_norm": 36, "k_norm": 36, "final_norm": 1
    }
    assert counts["parameters"] == qm.QWEN3_8B_PARAMETERS
    attn = model.model.layers[0].self_attn
    assert tuple(attn.q_norm.weight.shape) == (128,) and attn.q_norm.variance_epsilon == 1e-6


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_patch_counts_on_the_real_size_model(qwen3_kernels):
    with torch.device("meta"):
        model = mq.Qwen3ForCausalLM(qm.qwen3_8b_config())
    report = pq.patch_qwen3(model, qwen3_kernels)
    counts = report.counts()
    assert counts["rms_norm"] == 145 and counts["decoder_layers"] == 36
    assert counts["rms_norm_by_role"] == {
        "input_layernorm": 36, "post_attention_layernorm": 36, "q_norm": 36, "k_norm": 36, "final_norm": 1
    }
    assert counts["fused_add_rms_norm"] == counts["swiglu"] == counts["fused_gate_up"] == 36
    assert counts["down_residual"] == 36
    # Every attention module takes the fused q/k norm + RoPE path, so none needs the RoPE global.
    assert counts["qk_norm_rope"] == counts["fused_qkv"] == 36
    assert counts["rope_attention_modules"] == 0 and counts["rope_patch_points"] == []
    assert report.skipped == []
    assert pq.patched_roles(model) == {
        "rms_norm": 145, "fused_add_rms_norm+down_residual": 36, "swiglu+fused_gate_up": 36, "qk_norm_rope": 36
    }
    attn = model.model.layers[0].self_attn
    merged = attn._buffers[pq._FUSED_QKV]
    assert tuple(merged.shape) == ((32 + 8 + 8) * 128, 4096)
    assert attn.k_proj.weight.untyped_storage().data_ptr() == merged.untyped_storage().data_ptr()
    pq.unpatch_qwen3(model)
    assert not any("forward" in m.__dict__ for m in model.modules())
    # Without the fusion, the previous layout: RoPE through the patched global.
    report = pq.patch_qwen3(model, qwen3_kernels, fuse_qk_norm_rope=False)
    try:
        assert report.counts()["qk_norm_rope"] == 0 and report.counts()["rope_attention_modules"] == 36
        assert report.counts()["rope_patch_points"] == ["transformers.models.qwen3.modeling_qwen3.apply_rotary_pos_emb"]
    finally:
        pq.unpatch_qwen3(model)


# --------------------------------------------------------------- tiny model, CPU fallback


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_patched_tiny_model_matches_unpatched_in_fp32(qwen3_kernels):
    model = tiny()
    ref = logits(model, IDS)
    pq.patch_qwen3(model, qwen3_kernels)
    try:
        err = qm.compare_logits(logits(model, IDS), ref)
    finally:
        pq.unpatch_qwen3(model)
    assert err["rel_l2"] < 1e-5 and err["top1_agreement"] == 1.0


@pytest.mark.parametrize("flags", [
    dict(fuse_residual=False, swiglu=False, fuse_mlp=False, rope=False),
    dict(fuse_mlp=False),
    dict(norms=False),
    dict(rope=False),
    dict(fuse_qkv=False),
    dict(fuse_qk_norm_rope=False),
    dict(fuse_down_residual=False),
])
@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_each_patch_option_alone_keeps_the_logits(qwen3_kernels, flags):
    model = tiny(seed=3)
    ref = logits(model, IDS)
    pq.patch_qwen3(model, qwen3_kernels, **flags)
    try:
        err = qm.compare_logits(logits(model, IDS), ref)
    finally:
        pq.unpatch_qwen3(model)
    assert err["rel_l2"] < 1e-5


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_patched_bf16_error_is_bf16_rounding_no_worse_than_transformers(qwen3_kernels):
    """In bf16 neither model matches fp32; the patched one must be as close as the original."""
    for seed in range(3):
        model = tiny(seed=seed)
        ids = qm.random_input_ids(2, 64, 512, device="cpu", seed=seed)
        ref32 = logits(model, ids)
        qm.cast_parameters(model, torch.bfloat16)
        unpatched = qm.compare_logits(logits(model, ids), ref32)
        pq.patch_qwen3(model, qwen3_kernels)
        try:
            patched = qm.compare_logits(logits(model, ids), ref32)
        finally:
            pq.unpatch_qwen3(model)
        assert patched["finite"]
        assert patched["rel_l2"] <= 1.25 * unpatched["rel_l2"] + 1e-3, (patched, unpatched)
        assert patched["top1_agreement"] >= unpatched["top1_agreement"] - 0.05


@pytest.mark.slow  # builds the CUDA extension (once per session)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_each_patched_norm_matches_its_original_module(qwen3_kernels, dtype):
    model = tiny(dtype=dtype, seed=5)
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        modules = dict(model.named_modules())
        gen = torch.Generator().manual_seed(0)
        for name in report.rms_norm:
            module = modules[name]
            width = module.weight.shape[0]
            shape = (2, 7, 4, width) if name.endswith(("q_norm", "k_norm")) else (2, 7, width)
            x = (torch.randn(shape, generator=gen) * 2).to(dtype)
            with torch.no_grad():
                got = module(x)
                want = mq.Qwen3RMSNorm.forward(module, x)
                exact = module.weight.double() * (
                    x.double() * torch.rsqrt(x.double().square().mean(-1, keepdim=True) + module.variance_epsilon)
                )
            assert got.dtype == want.dtype and got.shape == want.shape
            if dtype == torch.float32:
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            else:  # both round to bf16; the kernel rounds once, transformers twice
                bound = 2 * (want.double() - exact).abs().max() + 2 ** -7 * exact.abs().max()
                assert (got.double() - exact).abs().max() <= bound, name
    finally:
        pq.unpatch_qwen3(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_fp32_weight_with_bf16_input_keeps_transformers_promotion(qwen3_kernels):
    model = tiny(dtype=torch.float32)
    pq.patch_qwen3(model, qwen3_kernels)
    try:
        norm = model.model.norm
        x = torch.randn(3, norm.weight.shape[0]).to(torch.bfloat16)
        with torch.no_grad():
            got, want = norm(x), mq.Qwen3RMSNorm.forward(norm, x)
        assert got.dtype == want.dtype == torch.float32
        torch.testing.assert_close(got, want)
    finally:
        pq.unpatch_qwen3(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_unpatch_restores_transformers_bit_for_bit(qwen3_kernels):
    model = tiny()
    ref = logits(model, IDS)
    for flags in ({}, {"fuse_qk_norm_rope": False}):
        pq.patch_qwen3(model, qwen3_kernels, **flags)
        assert any("forward" in m.__dict__ for m in model.modules())
        # The RoPE global is replaced only while some attention module calls it.
        assert (mq.apply_rotary_pos_emb is not ORIGINAL_ROPE) == bool(flags)
        pq.unpatch_qwen3(model)
        assert torch.equal(logits(model, IDS), ref)
        assert not any("forward" in m.__dict__ for m in model.modules())
        assert not any(pq._FUSED_GATE_UP in m._buffers or pq._FUSED_QKV in m._buffers for m in model.modules())
        assert not pq.is_patched(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_patching_twice_or_unpatching_an_unpatched_model_is_an_error(qwen3_kernels):
    model = tiny()
    pq.patch_qwen3(model, qwen3_kernels)
    with pytest.raises(RuntimeError, match="already patched"):
        pq.patch_qwen3(model, qwen3_kernels)
    pq.unpatch_qwen3(model)
    with pytest.raises(RuntimeError, match="not patched"):
        pq.unpatch_qwen3(model)
    with pytest.raises(ValueError, match="lacks"):
        pq.patch_qwen3(model, ModuleType("empty"))
    with pytest.raises(ValueError, match="before torch.compile"):
        pq.patch_qwen3(torch.compile(model), qwen3_kernels)


class GemmaStyleNorm(mq.Qwen3RMSNorm):
    """A subclass with Gemma's formula, x * (1 + w): inherits the class but not the math."""

    def forward(self, hidden_states):
        x = hidden_states.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return (x * (1.0 + self.weight.float())).to(hidden_states.dtype)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_norms_with_another_formula_are_refused(qwen3_kernels):
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RMSNorm

    model = tiny()
    layer0, layer1 = model.model.layers[0], model.model.layers[1]
    layer0.self_attn.q_norm = Gemma3RMSNorm(layer0.self_attn.head_dim)
    layer1.input_layernorm = GemmaStyleNorm(layer1.input_layernorm.weight.shape[0])
    layer1.post_attention_layernorm = GemmaStyleNorm(layer1.post_attention_layernorm.weight.shape[0])
    ref = logits(model, IDS)
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        skipped = dict(report.skipped)
        assert "Gemma3RMSNorm" in skipped["model.layers.0.self_attn.q_norm"]
        assert "model.layers.1.input_layernorm" not in report.rms_norm
        assert "model.layers.1.post_attention_layernorm" not in report.rms_norm
        assert "residual fusion" in skipped["model.layers.1"]
        assert "model.layers.1" not in report.fused_add_rms_norm
        assert "forward" not in layer0.self_attn.q_norm.__dict__
        assert "forward" not in layer1.input_layernorm.__dict__
        assert len(report.rms_norm) == 13 - 3
        assert qm.compare_logits(logits(model, IDS), ref)["rel_l2"] < 1e-5
    finally:
        pq.unpatch_qwen3(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_a_monkeypatched_norm_class_is_refused(qwen3_kernels, monkeypatch):
    monkeypatch.setattr(mq.Qwen3RMSNorm, "forward", GemmaStyleNorm.forward)
    model = tiny()
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        assert report.rms_norm == [] and report.fused_add_rms_norm == []
        assert all("not transformers' own" in reason for name, reason in report.skipped if "norm" in name)
    finally:
        pq.unpatch_qwen3(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_a_decoder_or_mlp_forward_of_another_transformers_version_is_left_alone(qwen3_kernels, monkeypatch):
    # The patched decoder and MLP forwards are copies of transformers 5.17.0-5.25.0's; a class
    # forward from transformers' modeling file that uses other names was changed. The stand-ins
    # are compiled under that file's name, as another version of it would be.
    source = textwrap.dedent("""
        def mlp_forward(self, x):
            return self.dropout(self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x)))

        def layer_forward(self, hidden_states, **kwargs):
            return self.input_layernorm(hidden_states) + self.layer_scale
    """)
    namespace: dict = {}
    exec(compile(source, mq.__file__, "exec"), namespace)
    for cls, fn in ((mq.Qwen3MLP, namespace["mlp_forward"]), (mq.Qwen3DecoderLayer, namespace["layer_forward"])):
        fn.__module__, fn.__qualname__ = cls.__module__, f"{cls.__qualname__}.forward"
        monkeypatch.setattr(cls, "forward", fn)
    model = tiny()
    report = pq.patch_qwen3(model, qwen3_kernels)
    pq.unpatch_qwen3(model)
    assert report.swiglu == [] and report.fused_add_rms_norm == [] and report.down_residual == []
    reasons = [why for _, why in report.skipped]
    layers = len(model.model.layers)
    assert sum("Qwen3MLP.forward differs from the copy patched in (uses dropout" in w for w in reasons) == layers
    assert sum("Qwen3DecoderLayer.forward differs" in w and "no longer uses mlp" in w for w in reasons) == layers


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_a_forward_wrapped_by_another_library_is_not_transformers_own(qwen3_kernels, monkeypatch):
    # functools.wraps copies __module__ and __qualname__, so names alone would take a wrapper
    # (a profiler, a LoRA library) for transformers' code, and the patch would bypass it.
    calls: Counter[str] = Counter()

    def wrap(cls: type) -> None:
        inner = cls.forward

        @functools.wraps(inner)
        def forward(self, *args, **kwargs):
            calls[cls.__name__] += 1
            return inner(self, *args, **kwargs)

        monkeypatch.setattr(cls, "forward", forward)

    for cls in (mq.Qwen3MLP, mq.Qwen3DecoderLayer, mq.Qwen3Attention):
        wrap(cls)
    model = tiny()
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        assert report.swiglu == report.fused_add_rms_norm == report.qk_norm_rope == []
        layers = len(model.model.layers)
        reasons = [why for _, why in report.skipped]
        for cls_name in ("Qwen3MLP", "Qwen3DecoderLayer", "Qwen3Attention"):
            assert sum(f"{cls_name}.forward is not transformers' own" in w for w in reasons) == layers, cls_name
        with torch.no_grad():
            model(input_ids=IDS[:1, :8])
        assert calls == {"Qwen3MLP": layers, "Qwen3DecoderLayer": layers, "Qwen3Attention": layers}
    finally:
        pq.unpatch_qwen3(model)


def test_the_patched_forwards_bind_the_cache_keyword_the_installed_transformers_passes():
    # transformers 5.17-5.23 calls the KV cache `past_key_values`, 5.24+ `cache` (behind a
    # deprecate_kwarg wrapper); the copies must take whichever the installed classes take.
    installed = inspect.signature(mq.Qwen3DecoderLayer.forward).parameters
    cache = "cache" if "cache" in installed else "past_key_values"
    qwen3 = pq._FAMILIES[0]
    assert pq._cache_param(mq.Qwen3DecoderLayer, qwen3, pq._DECODER_PARAMS) == cache
    assert pq._cache_param(mq.Qwen3Attention, qwen3, pq._ATTENTION_PARAMS) == cache
    ops = ModuleType("ops")
    assert cache in inspect.signature(pq._make_decoder_forward(ops, False, cache)).parameters
    assert cache in inspect.signature(pq._make_attention_forward(ops, qwen3.module, cache)).parameters
    other = "past_key_values" if cache == "cache" else "cache"
    assert other not in inspect.signature(pq._make_decoder_forward(ops, True, cache)).parameters


def test_the_norm_probe_rejects_a_wrong_formula_even_with_transformers_names(monkeypatch):
    def forward(self, hidden_states):  # eps outside the square root
        x = hidden_states.float()
        return self.weight * (x * (torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) + self.variance_epsilon)).to(hidden_states.dtype)

    forward.__qualname__ = "Qwen3RMSNorm.forward"
    forward.__module__ = mq.__name__
    monkeypatch.setattr(mq.Qwen3RMSNorm, "forward", forward)
    assert "does not compute" in pq._norm_formula_problem(mq.Qwen3RMSNorm)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_mlp_with_another_activation_is_not_swiglu(qwen3_kernels):
    model = tiny(hidden_act="gelu")
    ref = logits(model, IDS)
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        assert report.swiglu == [] and report.fused_gate_up == []
        assert any("not SiLU" in reason for _, reason in report.skipped)
        assert qm.compare_logits(logits(model, IDS), ref)["rel_l2"] < 1e-5
    finally:
        pq.unpatch_qwen3(model)


class _AtenCalls(TorchDispatchMode):
    """Counts the aten ops a forward runs (overload packet names, e.g. 'addmm_')."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_down_proj_adds_the_residual_in_place_once_per_layer_without_grad(qwen3_kernels):
    model = tiny(seed=5)
    ref = logits(model, IDS)
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        with _AtenCalls() as ops:
            got = logits(model, IDS)
    finally:
        pq.unpatch_qwen3(model)
    layers = len(model.model.layers)
    assert report.down_residual == [f"model.layers.{i}" for i in range(layers)]
    # One in-place matmul per layer takes the place of down_proj's mm and the residual add.
    assert ops.counts["addmm_"] == layers
    assert qm.compare_logits(got, ref)["rel_l2"] < 1e-5


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_with_grad_recorded_the_patched_model_runs_transformers_code_and_trains_the_same(qwen3_kernels):
    # The fused paths are inference-only (merged weights outside the Parameters, q/k
    # rewritten in place, the residual overwritten by the down projection): with autograd
    # recording, every patched layer must run transformers' forward, so the default patch
    # neither crashes nor leaves a weight without its gradient.
    model = tiny(seed=6)
    ids = IDS[:1]
    model(input_ids=ids, use_cache=False).logits.float().pow(2).mean().backward()
    want = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    report = pq.patch_qwen3(model, qwen3_kernels)
    assert report.fused_gate_up and report.fused_qkv and report.qk_norm_rope and report.down_residual
    try:
        with _AtenCalls() as ops:
            model(input_ids=ids, use_cache=False).logits.float().pow(2).mean().backward()
    finally:
        pq.unpatch_qwen3(model)
    assert ops.counts["addmm_"] == 0
    got = {n: p.grad for n, p in model.named_parameters()}
    assert [n for n, g in got.items() if g is None] == []
    for name, grad in got.items():
        torch.testing.assert_close(grad, want[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_gradient_checkpointing_runs_through_the_patched_model(qwen3_kernels):
    model = tiny(seed=6)
    # transformers 5.25 renamed gradient_checkpointing_enable (the old name warns until v6).
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    pq.patch_qwen3(model, qwen3_kernels)
    try:
        loss = model(input_ids=IDS[:1], use_cache=False).logits.float().pow(2).mean()
        loss.backward()
    finally:
        pq.unpatch_qwen3(model)
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_merged_weights_are_used_only_while_the_projections_still_hold_them(qwen3_kernels):
    # A quantizer or PEFT swaps a projection; `.to()` round trips give weights new storage.
    # Either way the merged copy is stale, and the patched model must compute what the
    # unpatched one does with the current weights.
    import copy

    model = tiny(seed=9)
    pq.patch_qwen3(model, qwen3_kernels)
    try:
        layer = model.model.layers[0]
        layer.mlp.gate_proj = nn.Linear(layer.mlp.gate_proj.in_features, layer.mlp.gate_proj.out_features, bias=False)
        layer.self_attn.q_proj = nn.Linear(layer.self_attn.q_proj.in_features, layer.self_attn.q_proj.out_features,
                                           bias=False)
        swapped = logits(model, IDS)
        reference = tiny(seed=9)
        reference.model.layers[0].mlp.gate_proj = copy.deepcopy(layer.mlp.gate_proj)
        reference.model.layers[0].self_attn.q_proj = copy.deepcopy(layer.self_attn.q_proj)
        assert qm.compare_logits(swapped, logits(reference, IDS))["rel_l2"] < 1e-5

        model.to(torch.float64).to(torch.float32)  # every weight gets new storage
        source = tiny(seed=10)
        model.load_state_dict(source.state_dict())
        reloaded = logits(model, IDS)
        # The stale merged copies are dropped at their first call, not kept as dead weight.
        stale = [m for m in model.modules() if pq._FUSED_GATE_UP in m._buffers or pq._FUSED_QKV in m._buffers]
    finally:
        pq.unpatch_qwen3(model)
    assert qm.compare_logits(reloaded, logits(source, IDS))["rel_l2"] < 1e-5
    assert stale == []


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_a_hook_on_the_mlp_still_fires_under_the_down_residual_fusion(qwen3_kernels):
    model = tiny(seed=11)
    calls: list[str] = []
    model.model.layers[0].mlp.register_forward_hook(lambda mod, args, out: calls.append("hook"))
    ref = logits(model, IDS)
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        got = logits(model, IDS)
    finally:
        pq.unpatch_qwen3(model)
    assert calls == ["hook", "hook"] and "model.layers.0" in report.down_residual
    assert qm.compare_logits(got, ref)["rel_l2"] < 1e-5


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_a_down_proj_hooked_after_patching_is_called_as_a_module(qwen3_kernels):
    # The residual-into-matmul shortcut reads down_proj.weight; a hook (or a LoRA wrapper)
    # added later must see the call and change the result as it does unpatched.
    model = tiny(seed=13)
    report = pq.patch_qwen3(model, qwen3_kernels)
    assert "model.layers.0" in report.down_residual
    calls: list[str] = []

    def double(mod, args, out):
        calls.append("hook")
        return out * 2

    try:
        model.model.layers[0].mlp.down_proj.register_forward_hook(double)
        got = logits(model, IDS)
    finally:
        pq.unpatch_qwen3(model)
    assert calls == ["hook"]
    assert qm.compare_logits(got, logits(model, IDS))["rel_l2"] < 1e-5  # unpatched, same hook


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_unpatch_refuses_a_forward_wrapped_after_patching_and_changes_nothing(qwen3_kernels):
    model = tiny(seed=12)
    pq.patch_qwen3(model, qwen3_kernels)
    mlp = model.model.layers[0].mlp
    patched = mlp.forward
    mlp.forward = lambda *a, **k: patched(*a, **k)  # what accelerate / diffusers hooks do
    before = pq.patched_roles(model)
    with pytest.raises(RuntimeError, match="replaced after patching"):
        pq.unpatch_qwen3(model)
    assert pq.is_patched(model) and pq.patched_roles(model) == before
    mlp.forward = patched
    pq.unpatch_qwen3(model)
    assert not pq.is_patched(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_hidden_states_the_model_returns_are_not_overwritten_by_later_layers(qwen3_kernels):
    # Each layer's output is the sum the in-place matmul wrote; transformers records it for
    # output_hidden_states, and no later layer may write into it.
    model = tiny(seed=7)
    with torch.no_grad():
        ref = model(input_ids=IDS, use_cache=False, output_hidden_states=True).hidden_states
        pq.patch_qwen3(model, qwen3_kernels)
        try:
            got = model(input_ids=IDS, use_cache=False, output_hidden_states=True).hidden_states
        finally:
            pq.unpatch_qwen3(model)
    assert len(got) == len(ref) == len(model.model.layers) + 1
    for g, r in zip(got, ref):
        torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_down_residual_needs_a_patched_mlp_and_a_bias_free_down_proj(qwen3_kernels):
    model = tiny(seed=8)
    report = pq.patch_qwen3(model, qwen3_kernels, swiglu=False, fuse_mlp=False)
    pq.unpatch_qwen3(model)
    assert report.down_residual == [] and len(report.fused_add_rms_norm) == len(model.model.layers)
    assert sum("its MLP is not patched with swiglu" in why for _, why in report.skipped) == len(model.model.layers)

    layer = model.model.layers[1]
    old = layer.mlp.down_proj
    layer.mlp.down_proj = nn.Linear(old.in_features, old.out_features, bias=True)
    ref = logits(model, IDS)
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        got = logits(model, IDS)
    finally:
        pq.unpatch_qwen3(model)
    assert "model.layers.1" not in report.down_residual and len(report.down_residual) == len(model.model.layers) - 1
    assert ("model.layers.1", "down_proj residual: down_proj is not a plain bias-free nn.Linear") in report.skipped
    assert qm.compare_logits(got, ref)["rel_l2"] < 1e-5


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_rope_replacement_is_exact_shared_and_reference_counted(qwen3_kernels):
    a, b = tiny(), tiny(seed=1)
    pq.patch_qwen3(a, qwen3_kernels, fuse_qk_norm_rope=False)
    pq.patch_qwen3(b, qwen3_kernels, fuse_qk_norm_rope=False)
    patched_fn = mq.apply_rotary_pos_emb
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 4, 9, 32, generator=gen), torch.randn(2, 2, 9, 32, generator=gen)
    cos, sin = torch.randn(2, 9, 32, generator=gen), torch.randn(2, 9, 32, generator=gen)
    for got, want in zip(patched_fn(q, k, cos, sin), ORIGINAL_ROPE(q, k, cos, sin)):
        torch.testing.assert_close(got, want)
    # A layout the kernel does not take ([B, S, H, D] with unsqueeze_dim=2) runs the original.
    qt, kt = q.transpose(1, 2), k.transpose(1, 2)
    for got, want in zip(patched_fn(qt, kt, cos, sin, unsqueeze_dim=2), ORIGINAL_ROPE(qt, kt, cos, sin, unsqueeze_dim=2)):
        torch.testing.assert_close(got, want)
    pq.unpatch_qwen3(a)
    assert mq.apply_rotary_pos_emb is patched_fn  # b still uses it
    pq.unpatch_qwen3(b)
    assert mq.apply_rotary_pos_emb is ORIGINAL_ROPE


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_fused_attention_calls_the_kernel_once_and_bypasses_q_norm_k_norm(qwen3_kernels, monkeypatch):
    model = tiny(dtype=torch.bfloat16, seed=4)
    ref = logits(model, IDS)
    calls: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    original = qwen3_kernels.qk_norm_rope_

    def spy(q, k, *args):
        calls.append((tuple(q.shape), tuple(k.shape)))
        return original(q, k, *args)

    monkeypatch.setattr(qwen3_kernels, "qk_norm_rope_", spy)
    report = pq.patch_qwen3(model, qwen3_kernels)
    norm_calls = []
    hooks = [m.register_forward_hook(lambda *a: norm_calls.append(1)) for layer in model.model.layers
             for m in (layer.self_attn.q_norm, layer.self_attn.k_norm)]
    try:
        got = logits(model, IDS)
    finally:
        for h in hooks:
            h.remove()
        pq.unpatch_qwen3(model)
    layers = len(model.model.layers)
    assert len(report.qk_norm_rope) == len(report.fused_qkv) == layers
    heads, kv_heads, head_dim = (model.config.num_attention_heads, model.config.num_key_value_heads,
                                 model.config.head_dim)
    assert calls == [((2, 29, heads, head_dim), (2, 29, kv_heads, head_dim))] * layers
    assert norm_calls == []  # q_norm / k_norm are not run a second time
    err = qm.compare_logits(got, ref)
    assert err["rel_l2"] < 2e-2 and err["top1_agreement"] >= 0.95, err


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_fused_attention_runs_transformers_sequence_for_inputs_the_kernel_does_not_take(qwen3_kernels, monkeypatch):
    # One eps per call: a k_norm whose eps differs from q_norm's goes through q_norm, k_norm
    # and apply_rotary_pos_emb as transformers does, and must give the same logits.
    model = tiny(seed=6)
    for layer in model.model.layers:
        layer.self_attn.k_norm.variance_epsilon = 1e-3
    ref = logits(model, IDS)
    calls = []
    monkeypatch.setattr(qwen3_kernels, "qk_norm_rope_", lambda *a: calls.append(a))
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        assert len(report.qk_norm_rope) == len(model.model.layers)
        err = qm.compare_logits(logits(model, IDS), ref)
    finally:
        pq.unpatch_qwen3(model)
    assert calls == []
    assert err["rel_l2"] < 1e-5, err


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_attention_fusion_is_refused_for_a_changed_forward_or_instance(qwen3_kernels):
    model = tiny()
    attn = model.model.layers[1].self_attn
    attn.forward = attn.forward  # an instance-level forward (another patch got there first)
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        assert len(report.qk_norm_rope) == len(model.model.layers) - 1
        assert ("model.layers.1.self_attn", "qk_norm_rope: forward already replaced on this instance") in report.skipped
        assert report.rope_attention_modules == 1  # that module still gets RoPE through the global
    finally:
        pq.unpatch_qwen3(model)
    del attn.forward


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_attention_whose_rope_function_was_kernelized_is_not_fused_over(qwen3_kernels):
    # With a kernels version inside transformers' window, each attention instance holds its own
    # copy of apply_rotary_pos_emb in _kernel_funcs, and kernelize gives that copy a forward.
    # Fusing q/k norm + RoPE there would silently drop the user's kernel. Stand-ins for both:
    class RotaryFunc(nn.Module):
        pass

    model = tiny()
    attn = model.model.layers[2].self_attn
    kernelized, plain = RotaryFunc(), RotaryFunc()
    kernelized.forward = lambda *args: args  # what kernels.kernelize installs: another function
    # kernels 0.17 binds the class's own forward when kernelize falls back: no kernel.
    plain.forward = types.MethodType(RotaryFunc.forward, plain)
    attn.__dict__["_kernel_funcs"] = {"apply_rotary_pos_emb": kernelized}
    model.model.layers[0].self_attn.__dict__["_kernel_funcs"] = {"apply_rotary_pos_emb": plain}
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        assert report.qk_norm_rope == [f"model.layers.{i}.self_attn" for i in range(len(model.model.layers)) if i != 2]
        assert ("model.layers.2.self_attn",
                "qk_norm_rope: apply_rotary_pos_emb already kernelized on this instance (kernels.kernelize)") in report.skipped
    finally:
        pq.unpatch_qwen3(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_the_rope_global_is_left_alone_when_one_caller_has_a_kernelized_copy(qwen3_kernels):
    # Llama's attention is not fused; it reaches RoPE through the process-wide global, which
    # would bypass the kernel kernelize bound to one instance's copy. Nothing may replace it.
    class RotaryFunc(nn.Module):
        pass

    model = qm.build_random_model(qm.tiny_llama_config(), dtype=torch.float32)
    original_rope = ml.apply_rotary_pos_emb
    kernelized = RotaryFunc()
    kernelized.forward = lambda *args: args  # what kernels.kernelize installs: another function
    model.model.layers[1].self_attn.__dict__["_kernel_funcs"] = {"rotary_pos_emb": kernelized}
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        assert ml.apply_rotary_pos_emb is original_rope
        assert report.rope == [] and report.rope_attention_modules == 0
        assert [why for name, why in report.skipped if name == "model.layers.1.self_attn"] == [
            "rope: its apply_rotary_pos_emb copy is kernelized (kernels.kernelize), so "
            "transformers.models.llama.modeling_llama.apply_rotary_pos_emb is left alone for all 3 attention "
            "modules that call it"
        ]
        assert len(report.rms_norm) == 2 * 3 + 1  # the rest of the patch is unaffected
    finally:
        pq.unpatch_qwen3(model)
    assert ml.apply_rotary_pos_emb is original_rope


# Stand-in for kernels 0.19's module-level context variable, found the way patch_qwen3 finds it:
# in the globals of the wrapping module's forward.
_ACTIVE_KERNEL_FUNCS: contextvars.ContextVar = contextvars.ContextVar("_ACTIVE_KERNEL_FUNCS", default=None)


class _KernelsFunc(nn.Module):
    def forward(self, *args):
        return args


def test_the_rope_replacement_defers_to_a_kernel_kernelize_bound_for_the_calling_model():
    # The replaced global is process-wide: a model whose own RoPE copy was kernelized (kernels
    # 0.19 routes the global to it through the context variable) or whose global itself was
    # (kernels 0.17) must still get that kernel, even while another patched model is running.
    plain_function = lambda *args: args  # noqa: E731
    assert not pq._kernels_dispatches(plain_function)
    original = _KernelsFunc()
    assert not pq._kernels_dispatches(original)
    copy = _KernelsFunc()
    token = _ACTIVE_KERNEL_FUNCS.set({id(original): (copy, _KernelsFunc.forward)})
    try:
        assert not pq._kernels_dispatches(original)  # a copy with its class forward is no kernel
        copy.forward = lambda *args: args
        assert pq._kernels_dispatches(original)
    finally:
        _ACTIVE_KERNEL_FUNCS.reset(token)
    assert not pq._kernels_dispatches(original)  # outside that model's attention forward
    original.forward = lambda *args: args
    assert pq._kernels_dispatches(original)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_a_layer_called_directly_with_the_old_cache_keyword_still_updates_the_cache(qwen3_kernels):
    # transformers 5.24+ renames past_key_values -> cache in a class-level wrapper the patched
    # instance forward bypasses; code written for 5.17-5.23 calls layers with the old name.
    from transformers import DynamicCache

    def cache_length(model) -> int:
        layer = model.model.layers[0]
        x = torch.randn(1, 5, model.config.hidden_size)
        positions = torch.arange(5)[None]
        cache = DynamicCache(config=model.config)
        with torch.no_grad():
            layer(x, position_embeddings=model.model.rotary_emb(x, positions), position_ids=positions,
                  attention_mask=None, past_key_values=cache, use_cache=True)
        return cache.get_seq_length()

    model = tiny()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # transformers' own deprecation notice
        assert cache_length(model) == 5
    pq.patch_qwen3(model, qwen3_kernels)
    try:
        assert cache_length(model) == 5
    finally:
        pq.unpatch_qwen3(model)


def test_a_model_using_transformers_hub_kernels_is_refused(monkeypatch):
    # transformers 5.25's from_pretrained defaults to use_kernels=True and kernelizes again on
    # every train()/eval(), which would unbind the patched norms behind the report's back.
    model = tiny()
    monkeypatch.setattr(type(model), "use_kernels", True, raising=False)
    ops = ModuleType("ops")
    for name in pq.REQUIRED_OPS:
        setattr(ops, name, lambda *args: args)
    with pytest.raises(ValueError, match="load it with use_kernels=False"):
        pq.patch_qwen3(model, ops)
    assert not pq.is_patched(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_llama_blocks_are_patched_by_the_same_code(qwen3_kernels):
    model = qm.build_random_model(qm.tiny_llama_config(), dtype=torch.float32)
    ref = logits(model, IDS)
    original_rope = ml.apply_rotary_pos_emb  # a function, or kernels' module around it inside its window
    report = pq.patch_qwen3(model, qwen3_kernels)
    try:
        c = report.counts()
        assert c["rms_norm"] == 2 * 3 + 1 and c["fused_add_rms_norm"] == c["swiglu"] == 3
        assert c["rope_patch_points"] == ["transformers.models.llama.modeling_llama.apply_rotary_pos_emb"]
        assert qm.compare_logits(logits(model, IDS), ref)["rel_l2"] < 1e-5
    finally:
        pq.unpatch_qwen3(model)
    assert ml.apply_rotary_pos_emb is original_rope


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_patched_model_decodes_the_same_tokens_with_a_static_cache(qwen3_kernels):
    from transformers import StaticCache

    model = tiny()

    def greedy():
        cache = {qm.cache_keyword(model): StaticCache(config=model.config, max_cache_len=40)}
        with torch.no_grad():
            out = model(input_ids=IDS[:1, :16], use_cache=True, logits_to_keep=1, **cache)
            tokens = [int(out.logits[0, -1].argmax())]
            for _ in range(6):
                tok = torch.tensor([[tokens[-1]]])
                out = model(input_ids=tok, use_cache=True, **cache)
                tokens.append(int(out.logits[0, -1].argmax()))
        return tokens

    ref = greedy()
    pq.patch_qwen3(model, qwen3_kernels)
    try:
        assert greedy() == ref
    finally:
        pq.unpatch_qwen3(model)


# ------------------------------------------------------------------- Kernel Hub route


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_kernelize_swaps_exactly_the_verified_classes_on_cpu(qwen3_kernels, tmp_path):
    pytest.importorskip("kernels")
    # Inside transformers' kernels window the class already carries its own marking (see
    # test_transformers_hub_decorators_are_active_only_inside_the_kernels_window).
    marking = {k: mq.Qwen3RMSNorm.__dict__.get(k) for k in ("kernel_layer_name", "kernel_condition")}
    model = tiny()
    odd = GemmaStyleNorm(model.model.layers[2].input_layernorm.weight.shape[0])
    model.model.layers[2].input_layernorm = odd
    ref = logits(model, IDS)
    repo = kernel_hub.local_repository(qwen3_kernels, tmp_path / "repo")
    counts = kernel_hub.kernelize_qwen3(model, repo, device="cpu")
    assert counts == {"RMSNorm": 12, "SwiGLUMLP": 3}
    assert "forward" not in odd.__dict__  # the subclass inherits the class attribute, not the swap
    assert {k: mq.Qwen3RMSNorm.__dict__.get(k) for k in marking} == marking  # classes restored after kernelize
    assert qm.compare_logits(logits(model, IDS), ref)["rel_l2"] < 1e-5
    bound = {id(m): m for m in model.modules() if "forward" in m.__dict__}
    swapped = {i for i, m in bound.items() if m.__dict__["forward"].__func__.__module__.endswith(".layers")}
    assert len(swapped) == 15
    # kernels 0.17 binds a class's own forward where it falls back (e.g. SiLU, which transformers
    # 5.20-5.22 marks while kernels 0.17.2 is inside their window); 0.19 binds nothing there.
    assert all(m.__dict__["forward"].__func__ is type(m).forward for i, m in bound.items() if i not in swapped)
    assert kernel_hub.unkernelize(model) == len(bound)
    assert not any("forward" in m.__dict__ for m in model.modules())
    assert not any("_kernel_repo" in m.__dict__ for m in model.modules())  # kernels 0.19's record of a swap
    assert torch.equal(logits(model, IDS), ref)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_kernelize_for_torch_compile_mode_accepts_the_layers(qwen3_kernels, tmp_path):
    pytest.importorskip("kernels")
    model = tiny()
    repo = kernel_hub.local_repository(qwen3_kernels, tmp_path / "repo")
    counts = kernel_hub.kernelize_qwen3(model, repo, device="cpu", compile_ready=True)
    assert counts == {"RMSNorm": 13, "SwiGLUMLP": 3}


def _register_fake_like_torch_2_11(monkeypatch) -> None:
    # torch 2.8-2.11 (the GPU box has 2.11) refuse a second register_fake for an op unless the
    # call passes allow_override=True; later torch allows it by default, which hid the bug here.
    real = torch.library.register_fake

    def register_fake(*args, allow_override=False, **kwargs):
        return real(*args, allow_override=allow_override, **kwargs)

    monkeypatch.setattr(torch.library, "register_fake", register_fake)


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_the_imported_build_loads_again_through_kernels_with_torch_2_11_rules(qwen3_kernels, tmp_path, monkeypatch):
    # kernels imports the build a second time, under metadata.id, next to `import qwen3_8b_kernels`:
    # the package's fake registrations run twice for one op namespace (the first H200 run of the
    # kernelize test died here). Both copies must load and every op keep a working fake kernel.
    pytest.importorskip("kernels")
    _register_fake_like_torch_2_11(monkeypatch)
    repo = kernel_hub.local_repository(qwen3_kernels, tmp_path / "repo")
    second = kernel_hub.load_local_kernel(repo)
    assert second is not qwen3_kernels and second.__name__ == json.loads((repo / "metadata.json").read_text())["id"]
    assert second.ops is qwen3_kernels.ops  # one C++ library, one namespace
    assert second.layers.RMSNorm is not qwen3_kernels.layers.RMSNorm
    # Meta tensors run exactly the registered fake kernels (the CPU has no CUDA kernel to run).
    x = torch.empty(3, 5, 64, device="meta", dtype=torch.bfloat16)
    w = torch.empty(64, device="meta", dtype=torch.bfloat16)
    assert second.ops.rms_norm(x, w, 1e-6).shape == x.shape
    assert [t.shape for t in second.ops.fused_add_rms_norm(x, x, w, 1e-6)] == [x.shape, x.shape]
    assert second.ops.swiglu(x, x).shape == x.shape
    q = torch.empty(1, 4, 5, 64, device="meta").transpose(1, 2)
    cs = torch.empty(1, 4, 64, device="meta")
    assert [t.stride() for t in second.ops.rope(q, q, cs, cs)] == [q.stride(), q.stride()]
    # The route that failed on the GPU box: kernelize the model from the second copy.
    model = tiny()
    ref = logits(model, IDS)
    counts = kernel_hub.kernelize_qwen3(model, repo, device="cpu", compile_ready=True)
    assert counts == {"RMSNorm": 13, "SwiGLUMLP": 3}
    assert qm.compare_logits(logits(model, IDS), ref)["rel_l2"] < 1e-5


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_rotary_layer_replaces_a_hub_decorated_apply_rotary_pos_emb(qwen3_kernels, tmp_path):
    kernels = pytest.importorskip("kernels")
    from kernels import KernelizeFallback, LocalLayerRepository, Mode

    decorated = isinstance(ORIGINAL_ROPE, nn.Module)  # transformers' decorator is active (kernels in its window)
    if decorated:
        # transformers already made the function a module; kernelize a fresh instance of its
        # class, never the shared global.
        assert type(ORIGINAL_ROPE).kernel_layer_name == "rotary_pos_emb"
        func_module = type(ORIGINAL_ROPE)()
    else:
        # What transformers does when its kernels integration is active:
        func_module = kernels.use_kernel_forward_from_hub("rotary_pos_emb")(ORIGINAL_ROPE)
    repo = kernel_hub.local_repository(qwen3_kernels, tmp_path / "repo")
    kernel_hub.load_local_kernel(repo)
    mapping = {"rotary_pos_emb": {"cpu": LocalLayerRepository(repo_path=repo, layer_name="ApplyRotaryPosEmb")}}
    with kernels.use_kernel_mapping(mapping, inherit_mapping=False):
        kernels.kernelize(func_module, mode=Mode.INFERENCE, device="cpu", use_fallback=False)
    assert func_module.forward.__func__.__qualname__ == "ApplyRotaryPosEmb.forward"
    gen = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 4, 6, 16, generator=gen), torch.randn(1, 2, 6, 16, generator=gen)
    cos, sin = torch.randn(1, 6, 16, generator=gen), torch.randn(1, 6, 16, generator=gen)
    for got, want in zip(func_module(q, k, cos, sin), ORIGINAL_ROPE(q, k, cos, sin)):
        torch.testing.assert_close(got, want)
    if not decorated:
        return
    # Inside the window the model itself is kernelize-able: every attention module holds a private
    # copy of the function (kernels' use_kernelized_func), which the mapping swaps per model.
    model = tiny()
    ref = logits(model, IDS)
    with kernels.use_kernel_mapping(mapping, inherit_mapping=False):
        # RMSNorm and SiLU are decorated too and not mapped here: NO_LAYER keeps their forward.
        kernels.kernelize(model, mode=Mode.INFERENCE, device="cpu", use_fallback=KernelizeFallback.NO_LAYER)
    private = [m._kernel_funcs["rotary_pos_emb"] for m in model.modules() if "_kernel_funcs" in m.__dict__]
    assert len(private) == model.config.num_hidden_layers
    assert all(f.forward.__func__.__qualname__ == "ApplyRotaryPosEmb.forward" for f in private)
    assert qm.compare_logits(logits(model, IDS), ref)["rel_l2"] < 1e-5


# ------------------------------------------------------------- benchmarks and scripts


def run_py(args: list[str], timeout: float = 900, block_torch: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    if block_torch:
        code = (
            "import runpy, sys; sys.modules['torch'] = None; sys.modules['transformers'] = None; "
            f"sys.argv = {args!r}; runpy.run_path(sys.argv[0], run_name='__main__')"
        )
        cmd = [sys.executable, "-c", code]
    else:
        cmd = [sys.executable, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)


SCRIPT_FILES = [
    SCRIPTS / "transformers_injection_example.py",
    SCRIPTS / "benchmark_example.py",
    INTEGRATION / "benchmark_e2e.py",
    TOOLS / "results_md.py",
    TOOLS / "profile_e2e.py",
]


@pytest.mark.parametrize("script", SCRIPT_FILES, ids=lambda p: p.name)
def test_scripts_print_help_without_torch(script):
    proc = run_py([str(script), "--help"], timeout=60, block_torch=True)
    assert proc.returncode == 0, proc.stderr
    assert "usage:" in proc.stdout


@pytest.mark.parametrize("script", SCRIPT_FILES[:3], ids=lambda p: p.name)
def test_scripts_reject_bad_usage_with_exit_2(script):
    proc = run_py([str(script), "--device", "tpu"], timeout=60, block_torch=True)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_benchmark_e2e_check_mode_and_results_md(qwen3_kernels, tmp_path):
    out = tmp_path / "e2e.json"
    proc = run_py([
        str(INTEGRATION / "benchmark_e2e.py"), "--check", "--package-path", str(package_path(qwen3_kernels)),
        "--out", str(out), "--variants", "eager", "patched", "patched_norms", "compile",
    ])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    variants = result["variants"]
    assert {n: v["status"] for n, v in variants.items()} == {
        "eager": "ok", "patched": "ok", "patched_norms": "ok", "compile": "ok"
    }
    assert variants["patched"]["accuracy"]["rel_l2"] < 1e-5
    assert variants["patched"]["decode"]["tokens_per_s"] > 0
    assert result["patch_report"]["rms_norm"] == 13
    assert "prefill_16_vs_eager" in variants["patched"]["speedup"]
    assert result["target"]["metric"].startswith("prefill 48 tokens")

    md = tmp_path / "RESULTS.md"
    proc = run_py([str(TOOLS / "results_md.py"), str(out), "--out", str(md)], timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = md.read_text()
    assert "| `patched` |" in text and "prefill 48 (ms)" in text and "13 RMSNorm" in text
    assert "GPU while timing" not in text  # no nvidia-smi on the CPU: no clock line

    # On a GPU each timed prefill carries what nvidia-smi saw; RESULTS.md prints the longest's.
    result["variants"]["patched"]["prefill"]["48"]["gpu"] = {"sm_mhz": 1530.0, "power_w": 690.8, "power_capped": 1.0}
    out.write_text(json.dumps(result))
    proc = run_py([str(TOOLS / "results_md.py"), str(out), "--out", str(md)], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "`patched` 1530 MHz / 691 W (power cap 100%)." in md.read_text()


def test_benchmark_e2e_refuses_an_unknown_variant_before_any_work():
    proc = run_py([str(INTEGRATION / "benchmark_e2e.py"), "--check", "--variants", "patched", "pached_compile"],
                  timeout=60, block_torch=True)
    assert proc.returncode == 2
    assert "unknown variant(s) pached_compile; choose from eager," in proc.stderr


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_profile_e2e_check_mode_writes_both_variants(qwen3_kernels, tmp_path):
    out = tmp_path / "profile.json"
    proc = run_py([str(TOOLS / "profile_e2e.py"), "--check", "--package-path", str(package_path(qwen3_kernels)),
                   "--out", str(out), "--repeats", "2"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert list(result["variants"]) == ["eager", "patched"]
    patched = result["variants"]["patched"]
    assert patched["status"] == "ok" and patched["median_ms"] > 0
    assert patched["patch"]["down_residual"] == patched["patch"]["decoder_layers"] == 3
    assert set(result["categories"]) == {"attention", "matmul", "ours", "other"}


def test_committed_results_md_is_results_md_output_of_the_committed_json(tmp_path):
    import re

    committed = (REPO / "evidence" / "qwen3_8b" / "integration" / "RESULTS.md").read_text()  # rendered, not shipped
    commit = re.search(r"commit `([^`]+)`\.", committed).group(1)
    assert commit != "HEAD" and commit != "?", "RESULTS.md must name the measured commit"
    notes = [line.removeprefix("**Note.** ") for line in committed.splitlines() if line.startswith("**Note.** ")]
    args = [str(TOOLS / "results_md.py"), str(INTEGRATION / "results" / "e2e_h200.json"),
            "--source-name", "integration/results/e2e_h200.json", "--commit", commit, "--out", str(tmp_path / "R.md")]
    for note in notes:
        args += ["--note", note]
    proc = run_py(args, timeout=60, block_torch=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "R.md").read_text() == committed
    result = json.loads((INTEGRATION / "results" / "e2e_h200.json").read_text())
    assert result["model"]["decoder_layers"] == 36 and result["model"]["rms_norm_modules"] == 145
    assert result["environment"]["git_commit"].startswith(commit), "RESULTS.md must name the commit the run recorded"


def test_results_md_does_not_print_a_commit_that_is_not_one(tmp_path):
    result = json.loads((INTEGRATION / "results" / "e2e_h200.json").read_text())
    result["environment"]["git_commit"] = "HEAD"  # what rev-parse printed in a checkout without commits (run 3)
    no_commit = tmp_path / "e2e.json"
    no_commit.write_text(json.dumps(result))
    proc = run_py([str(TOOLS / "results_md.py"), str(no_commit)], timeout=60, block_torch=True)
    assert proc.returncode == 0, proc.stderr
    assert "commit `?`." in proc.stdout and "**Note.**" not in proc.stdout


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_injection_example_cpu(qwen3_kernels, tmp_path):
    out = tmp_path / "inj.json"
    proc = run_py([
        str(SCRIPTS / "transformers_injection_example.py"), "--device", "cpu",
        "--package-path", str(package_path(qwen3_kernels)), "--out", str(out),
    ])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["ok"] and report["restored_bitwise"] and report["patch"]["rms_norm"] == 13


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_injection_example_hub_route_on_llama_cpu(qwen3_kernels):
    pytest.importorskip("kernels")
    proc = run_py([
        str(SCRIPTS / "transformers_injection_example.py"), "--device", "cpu", "--model", "llama", "--route", "hub",
        "--package-path", str(package_path(qwen3_kernels)),
    ])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "'RMSNorm': 7" in proc.stdout and "'SwiGLUMLP': 3" in proc.stdout


@pytest.mark.slow  # builds the CUDA extension (once per session)
def test_benchmark_example_cpu(qwen3_kernels, tmp_path):
    out = tmp_path / "bench.json"
    proc = run_py([
        str(SCRIPTS / "benchmark_example.py"), "--device", "cpu", "--package-path", str(package_path(qwen3_kernels)),
        "--out", str(out), "--repeats", "2",
    ])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert set(result["variants"]) == {"baseline", "kernels", "compile", "kernels_compile"}
    seq = result["variants"]["kernels"]["seq"]["32"]
    assert seq["accuracy"]["rel_l2"] < 1e-5 and seq["speedup_vs_baseline"] > 0 and seq["speedup_vs_compile"] > 0


# --------------------------------------------------------------------------------- GPU


@pytest.fixture(scope="module")
def full_size_logits(qwen3_kernels):
    """The real Qwen3-8B architecture, random weights: fp32 reference, then bf16 unpatched
    and patched logits for one 512-token prompt (plus the bf16 model, still unpatched)."""
    model = qm.build_random_model(qm.qwen3_8b_config(), device="cuda", dtype=torch.float32, seed=0)
    ids = qm.random_input_ids(1, 512, model.config.vocab_size, device="cuda")
    with torch.no_grad():
        ref32 = model(input_ids=ids, use_cache=False).logits.float()
        qm.cast_parameters(model, torch.bfloat16)
        torch.cuda.empty_cache()
        unpatched = model(input_ids=ids, use_cache=False).logits
        report = pq.patch_qwen3(model, qwen3_kernels)
        try:
            patched = model(input_ids=ids, use_cache=False).logits
        finally:
            pq.unpatch_qwen3(model)
    yield {"model": model, "ids": ids, "ref32": ref32, "unpatched": unpatched, "patched": patched, "report": report}
    del model
    torch.cuda.empty_cache()


@pytest.mark.gpu
def test_full_size_patched_logits_within_bf16_tolerance(full_size_logits):
    d = full_size_logits
    assert d["report"].counts()["rms_norm"] == 145 and d["report"].counts()["fused_add_rms_norm"] == 36
    assert d["report"].counts()["qk_norm_rope"] == d["report"].counts()["fused_qkv"] == 36
    unpatched = qm.compare_logits(d["unpatched"], d["ref32"])
    patched = qm.compare_logits(d["patched"], d["ref32"])
    direct = qm.compare_logits(d["patched"], d["unpatched"])
    print(f"\nbf16 vs fp32: unpatched {unpatched}\n              patched   {patched}\npatched vs unpatched: {direct}")
    assert patched["finite"]
    assert patched["rel_l2"] <= 1.25 * unpatched["rel_l2"] + 1e-3
    assert patched["top1_agreement"] >= unpatched["top1_agreement"] - 0.05
    assert direct["rel_l2"] <= 2.5 * unpatched["rel_l2"] + 1e-3


@pytest.mark.slow  # builds the CUDA extension (once per session)
@pytest.mark.gpu
def test_attention_fusion_on_real_shapes_matches_unpatched_within_bf16_tolerance(qwen3_kernels):
    """Four layers of the real Qwen3-8B architecture, bf16: the fused q/k norm + RoPE (merged
    qkv, CUDA kernel) is as close to fp32 as transformers' bf16 path and as the unfused patch."""
    model = qm.build_random_model(qm.qwen3_8b_config(num_hidden_layers=4), device="cuda", dtype=torch.float32, seed=2)
    ids = qm.random_input_ids(1, 333, model.config.vocab_size, device="cuda")
    with torch.no_grad():
        ref32 = model(input_ids=ids, use_cache=False).logits.float()
        qm.cast_parameters(model, torch.bfloat16)
        unpatched = qm.compare_logits(logits(model, ids), ref32)
        results = {}
        for name, flags in (("fused", {}), ("unfused", {"fuse_qk_norm_rope": False})):
            report = pq.patch_qwen3(model, qwen3_kernels, **flags)
            try:
                results[name] = qm.compare_logits(logits(model, ids), ref32)
            finally:
                pq.unpatch_qwen3(model)
            assert report.counts()["qk_norm_rope"] == (4 if name == "fused" else 0)
    del model
    torch.cuda.empty_cache()
    print(f"\nbf16 vs fp32: unpatched {unpatched}\n  fused {results['fused']}\n  unfused {results['unfused']}")
    for err in results.values():
        assert err["finite"]
        assert err["rel_l2"] <= 1.25 * unpatched["rel_l2"] + 1e-3
        assert err["top1_agreement"] >= unpatched["top1_agreement"] - 0.05


@pytest.mark.slow  # builds the CUDA extension (once per session)
@pytest.mark.gpu
def test_full_size_norms_match_their_modules_on_real_shapes(full_size_logits, qwen3_kernels):
    model = full_size_logits["model"]
    layer = model.model.layers[17]
    gen = torch.Generator(device="cuda").manual_seed(0)
    cases = {
        "input_layernorm": (layer.input_layernorm, (1, 4096, 4096)),
        "q_norm": (layer.self_attn.q_norm, (1, 4096, 32, 128)),
        "k_norm": (layer.self_attn.k_norm, (1, 4096, 8, 128)),
        "final": (model.model.norm, (3, 1, 4096)),
    }
    pq.patch_qwen3(model, qwen3_kernels)
    try:
        for name, (module, shape) in cases.items():
            x = (torch.randn(shape, device="cuda", generator=gen) * 3).to(torch.bfloat16)
            with torch.no_grad():
                got = module(x)
                want = mq.Qwen3RMSNorm.forward(module, x)
                x64 = x.double()
                exact = module.weight.double() * x64 * torch.rsqrt(x64.square().mean(-1, keepdim=True) + 1e-6)
            assert got.dtype == torch.bfloat16 and got.shape == x.shape
            err_kernel = float(((got.double() - exact).abs() / exact.abs().clamp_min(1e-3)).max())
            err_torch = float(((want.double() - exact).abs() / exact.abs().clamp_min(1e-3)).max())
            assert err_kernel <= max(2 * err_torch, 2 ** -7), (name, err_kernel, err_torch)
    finally:
        pq.unpatch_qwen3(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
@pytest.mark.gpu
def test_patched_tiny_model_compiles_without_graph_breaks_on_gpu(qwen3_kernels):
    model = qm.build_random_model(qm.tiny_qwen3_config(), device="cuda", dtype=torch.bfloat16)
    ids = IDS.cuda()
    ref = logits(model, ids)
    pq.patch_qwen3(model, qwen3_kernels)
    try:
        torch._dynamo.reset()
        compiled = torch.compile(model, fullgraph=True, dynamic=False)
        got = logits(compiled, ids)
    finally:
        torch._dynamo.reset()
        pq.unpatch_qwen3(model)
    assert qm.compare_logits(got, ref)["rel_l2"] < 3e-2


@pytest.mark.slow  # builds the CUDA extension (once per session)
@pytest.mark.gpu
def test_patched_forward_replays_in_a_cuda_graph(qwen3_kernels):
    model = qm.build_random_model(qm.tiny_qwen3_config(), device="cuda", dtype=torch.bfloat16)
    ids = IDS.cuda()
    # While a graph captures, transformers materializes the causal mask (it cannot run its
    # data-dependent checks); the prepared mapping keeps eager's is_causal attention.
    mask = {"attention_mask": {"full_attention": None}}
    pq.patch_qwen3(model, qwen3_kernels)
    try:
        with torch.no_grad():
            eager = model(input_ids=ids, use_cache=False, **mask).logits.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            model(input_ids=ids, use_cache=False, **mask)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.no_grad():
            out = model(input_ids=ids, use_cache=False, **mask).logits
        out.fill_(float("nan"))  # poison: the replay must rewrite every element
        graph.replay()
        torch.cuda.synchronize()
        err = qm.compare_logits(out, eager)
        assert err["finite"] and err["rel_l2"] < 1e-3, err
    finally:
        pq.unpatch_qwen3(model)


@pytest.mark.slow  # builds the CUDA extension (once per session)
@pytest.mark.gpu
def test_kernelize_route_on_cuda(qwen3_kernels, tmp_path):
    pytest.importorskip("kernels")
    model = qm.build_random_model(qm.tiny_qwen3_config(), device="cuda", dtype=torch.bfloat16)
    ids = IDS.cuda()
    ref = logits(model, ids)
    repo = kernel_hub.local_repository(qwen3_kernels, tmp_path / "repo", archs=["9.0"])
    counts = kernel_hub.kernelize_qwen3(model, repo, device="cuda", compile_ready=True)
    assert counts == {"RMSNorm": 13, "SwiGLUMLP": 3}
    assert qm.compare_logits(logits(model, ids), ref)["rel_l2"] < 3e-2
