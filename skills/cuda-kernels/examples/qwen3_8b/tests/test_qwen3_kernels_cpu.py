"""CPU specification of qwen3_8b_kernels: the reference math, the CPU fallback of the public
API, and the fake (meta) kernels that torch.compile traces with.

No GPU needed: fake CUDA tensors carry only metadata, and torch.library.opcheck runs
against CPU implementations that this file registers (backed by the reference) for the
duration of the test session.
"""

from __future__ import annotations

from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _randn(*shape: int, dtype: torch.dtype = torch.float32, device: str = "cpu", seed: int = 0) -> torch.Tensor:
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)


# ----------------------------------------------------------------------------- reference


def test_reference_rms_norm_matches_float64_formula(kernels: ModuleType) -> None:
    x = _randn(3, 5, 96, dtype=torch.float64, seed=1)
    w = _randn(96, dtype=torch.float64, seed=2)
    expected = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w
    torch.testing.assert_close(kernels.reference.rms_norm(x, w, 1e-5), expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(kernels.reference.rms_norm(x, None, 1e-5), expected / w, rtol=1e-12, atol=1e-12)


def test_reference_rms_norm_agrees_with_f_rms_norm(kernels: ModuleType) -> None:
    reference = kernels.reference
    x = _randn(4, 4096, seed=3)
    w = _randn(4096, seed=4)
    torch.testing.assert_close(reference.rms_norm(x, w, 1e-6), F.rms_norm(x, (4096,), w, 1e-6), rtol=1e-5, atol=1e-6)


def test_reference_matches_transformers_qwen3_modules(kernels: ModuleType) -> None:
    qwen3 = pytest.importorskip("transformers.models.qwen3.modeling_qwen3")
    x = _randn(2, 7, 256, seed=5)
    norm = qwen3.Qwen3RMSNorm(256, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(_randn(256, seed=6))
        torch.testing.assert_close(kernels.reference.rms_norm(x, norm.weight, 1e-6), norm(x), rtol=1e-6, atol=1e-6)

    q, k = _randn(2, 4, 7, 128, seed=7), _randn(2, 2, 7, 128, seed=8)
    cos, sin = _randn(2, 7, 128, seed=9), _randn(2, 7, 128, seed=10)
    q_ref, k_ref = qwen3.apply_rotary_pos_emb(q, k, cos, sin)
    q_out, k_out = kernels.reference.rope(q, k, cos, sin)
    torch.testing.assert_close(q_out, q_ref, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(k_out, k_ref, rtol=1e-6, atol=1e-6)


def test_reference_fused_add_rounds_the_sum_to_the_input_dtype(kernels: ModuleType) -> None:
    x = _randn(3, 64, dtype=torch.bfloat16, seed=11)
    r = _randn(3, 64, dtype=torch.bfloat16, seed=12)
    out, s = kernels.reference.fused_add_rms_norm(x, r, None, 1e-6)
    assert s.dtype == torch.bfloat16
    assert torch.equal(s, x + r)  # eager bf16 add: fp32 math, one rounding
    torch.testing.assert_close(out, kernels.reference.rms_norm(x + r, None, 1e-6), rtol=0, atol=0)


def test_reference_swiglu_is_silu_times_up(kernels: ModuleType) -> None:
    g, u = _randn(5, 48, seed=13), _randn(5, 48, seed=14)
    torch.testing.assert_close(kernels.reference.swiglu(g, u), F.silu(g) * u, rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------- public API (CPU)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_tensors_use_the_reference(kernels: ModuleType, dtype: torch.dtype) -> None:
    x, r = _randn(2, 3, 128, dtype=dtype, seed=15), _randn(2, 3, 128, dtype=dtype, seed=16)
    w = _randn(128, dtype=dtype, seed=17)
    assert torch.equal(kernels.rms_norm(x, w, 1e-6), kernels.reference.rms_norm(x, w, 1e-6))
    for got, want in zip(kernels.fused_add_rms_norm(x, r, w, 1e-6), kernels.reference.fused_add_rms_norm(x, r, w, 1e-6)):
        assert torch.equal(got, want)
    assert torch.equal(kernels.swiglu(x, r), kernels.reference.swiglu(x, r))
    q = _randn(2, 3, 4, 128, dtype=dtype, seed=18).transpose(1, 2)  # [B, H, S, D] view
    k = _randn(2, 3, 2, 128, dtype=dtype, seed=19).transpose(1, 2)
    cos, sin = _randn(2, 3, 128, dtype=dtype, seed=20), _randn(2, 3, 128, dtype=dtype, seed=21)
    q_ref, k_ref = kernels.reference.rope(q, k, cos, sin)
    q_out, k_out = kernels.rope(q, k, cos, sin)
    assert torch.equal(q_out, q_ref) and torch.equal(k_out, k_ref)
    kernels.rope_(q, k, cos, sin)
    assert torch.equal(q, q_ref) and torch.equal(k, k_ref)


@pytest.mark.parametrize("dtype", [*DTYPES, torch.float64])
def test_eps_none_matches_torch_rms_norm(kernels: ModuleType, dtype: torch.dtype) -> None:
    # Rows with mean(x^2) ~ 1e-4: fp16's eps (9.8e-4) or bf16's (7.8e-3) would change them a lot.
    x = (_randn(3, 64, seed=22) * 1e-2).to(dtype)
    w = _randn(64, seed=23).to(dtype)
    torch_norm = torch.nn.RMSNorm(64, eps=None, dtype=dtype)
    with torch.no_grad():
        torch_norm.weight.copy_(w)
        expected = torch_norm(x)
    torch.testing.assert_close(kernels.rms_norm(x, w, None), expected)
    torch.testing.assert_close(kernels.rms_norm(x, None, None), F.rms_norm(x, (64,), None, None))
    out, _ = kernels.fused_add_rms_norm(x, torch.zeros_like(x), w, None)
    torch.testing.assert_close(out, expected)
    if dtype in (torch.float16, torch.bfloat16):
        # The input dtype's own epsilon is not what torch uses: it moves outputs by far more than an ulp.
        wrong = kernels.reference.rms_norm(x, w, torch.finfo(dtype).eps)
        assert not torch.allclose(wrong.float(), expected.float(), rtol=0.1, atol=0.1)


def test_rope_accepts_a_2d_cos_table(kernels: ModuleType) -> None:
    q, k = _randn(2, 4, 5, 64, seed=23), _randn(2, 1, 5, 64, seed=24)
    cos, sin = _randn(5, 64, seed=25), _randn(5, 64, seed=26)
    q_out, k_out = kernels.rope(q, k, cos, sin)
    q_ref, k_ref = kernels.reference.rope(q, k, cos.expand(2, 5, 64), sin.expand(2, 5, 64))
    assert torch.equal(q_out, q_ref) and torch.equal(k_out, k_ref)


def test_inputs_that_need_grad_stay_differentiable(kernels: ModuleType) -> None:
    x = _randn(3, 32, seed=27).requires_grad_()
    kernels.rms_norm(x, None, 1e-6).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


def _qk_parent(batch: int, seq: int, hq: int, hk: int, d: int, dtype: torch.dtype, seed: int):  # noqa: ANN202
    """q, k as [B, S, H, D] views of one [B, S, (Hq + 2 Hk) D + 8] projection (q | k | v | padding)."""
    parent = _randn(batch, seq, (hq + 2 * hk) * d + 8, dtype=dtype, seed=seed)
    q = parent[..., : hq * d].view(batch, seq, hq, d)
    k = parent[..., hq * d : (hq + hk) * d].view(batch, seq, hk, d)
    return q, k, parent


def _qk_norm_rope_f64(x, w, cos, sin, eps):  # noqa: ANN001, ANN202
    """Float64 spelling of Qwen3's q_norm then apply_rotary_pos_emb on [B, S, H, D]."""
    xd = x.double()
    y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.double()
    half = x.shape[-1] // 2
    rot = torch.cat((-y[..., half:], y[..., :half]), dim=-1)
    return y * cos.double().unsqueeze(2) + rot * sin.double().unsqueeze(2)


def test_reference_qk_norm_rope_is_qwen3_norms_then_rope(kernels: ModuleType) -> None:
    qwen3 = pytest.importorskip("transformers.models.qwen3.modeling_qwen3")
    q, k, _ = _qk_parent(2, 7, 4, 2, 64, torch.float32, seed=50)
    qw, kw = _randn(64, seed=51), _randn(64, seed=52)
    cos, sin = _randn(1, 7, 64, seed=53), _randn(1, 7, 64, seed=54)
    q_norm, k_norm = qwen3.Qwen3RMSNorm(64, eps=1e-6), qwen3.Qwen3RMSNorm(64, eps=1e-6)
    with torch.no_grad():
        q_norm.weight.copy_(qw)
        k_norm.weight.copy_(kw)
        want_q, want_k = qwen3.apply_rotary_pos_emb(q_norm(q).transpose(1, 2), k_norm(k).transpose(1, 2), cos, sin)
    q64, k64 = _qk_norm_rope_f64(q, qw, cos, sin, 1e-6), _qk_norm_rope_f64(k, kw, cos, sin, 1e-6)
    kernels.reference.qk_norm_rope_(q, k, qw, kw, cos, sin, 1e-6)
    torch.testing.assert_close(q, want_q.transpose(1, 2), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k, want_k.transpose(1, 2), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(q.double(), q64, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k.double(), k64, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_qk_norm_rope_cpu_fallback_writes_only_q_and_k(kernels: ModuleType, dtype: torch.dtype) -> None:
    q, k, parent = _qk_parent(2, 5, 4, 2, 32, dtype, seed=55)
    qw, kw = _randn(32, dtype=dtype, seed=56), _randn(32, dtype=dtype, seed=57)
    cos, sin = _randn(2, 5, 32, dtype=dtype, seed=58), _randn(2, 5, 32, dtype=dtype, seed=59)
    want_q, want_k = _qk_norm_rope_f64(q, qw, cos, sin, 1e-6), _qk_norm_rope_f64(k, kw, cos, sin, 1e-6)
    untouched = parent[..., 6 * 32 :].clone()  # v and the padding
    q_ref, k_ref = q.clone(), k.clone()
    kernels.reference.qk_norm_rope_(q_ref, k_ref, qw, kw, cos, sin, 1e-6)
    assert kernels.qk_norm_rope_(q, k, qw, kw, cos, sin, 1e-6) is None
    assert torch.equal(q, q_ref) and torch.equal(k, k_ref)
    assert torch.equal(parent[..., 6 * 32 :], untouched)
    # One rounding of fp32 math: half an ulp of the dtype, plus fp32 error.
    bound = {torch.float32: 1e-5, torch.float16: 1.5e-3, torch.bfloat16: 8e-3}[dtype]
    for got, want in ((q, want_q), (k, want_k)):
        assert ((got.double() - want).abs() / (want.abs() + 1e-3 * want.abs().max())).max() <= bound


def test_qk_norm_rope_accepts_a_2d_cos_table(kernels: ModuleType) -> None:
    q, k, _ = _qk_parent(2, 5, 4, 1, 64, torch.float32, seed=60)
    q2, k2 = q.clone(), k.clone()
    w = _randn(64, seed=61)
    cos, sin = _randn(5, 64, seed=62), _randn(5, 64, seed=63)
    kernels.qk_norm_rope_(q, k, w, w, cos, sin, 1e-6)
    kernels.reference.qk_norm_rope_(q2, k2, w, w, cos.expand(2, 5, 64), sin.expand(2, 5, 64), 1e-6)
    assert torch.equal(q, q2) and torch.equal(k, k2)


# ---------------------------------------------------------------------------- fake kernels


def _fake_mode():  # noqa: ANN202 - torch private type
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode()


@pytest.mark.parametrize("dtype", DTYPES)
def test_fake_kernels_predict_cuda_outputs(kernels: ModuleType, dtype: torch.dtype) -> None:
    # Fake CUDA tensors need no GPU: this is what torch.compile sees when it traces the API.
    with _fake_mode():
        x = torch.empty(2, 8, 4096, device="cuda", dtype=dtype)
        w = torch.empty(4096, device="cuda", dtype=dtype)
        y = kernels.rms_norm(x[..., :2048], w[:2048], 1e-6)  # row-strided view in, contiguous out
        assert (y.shape, y.dtype, y.device.type, y.is_contiguous()) == ((2, 8, 2048), dtype, "cuda", True)
        out, s = kernels.fused_add_rms_norm(x, x, w, 1e-6)
        assert out.shape == s.shape == x.shape and out.is_contiguous() and s.is_contiguous()
        gate_up = torch.empty(16, 2 * 3072, device="cuda", dtype=dtype)
        h = kernels.swiglu(gate_up[:, :3072], gate_up[:, 3072:])
        assert h.shape == (16, 3072) and h.is_contiguous()
        qkv = torch.empty(1, 10, 40 * 128, device="cuda", dtype=dtype)
        q = qkv[..., : 32 * 128].view(1, 10, 32, 128).transpose(1, 2)
        k = qkv[..., 32 * 128 :].view(1, 10, 8, 128).transpose(1, 2)
        cos = torch.empty(1, 10, 128, device="cuda", dtype=dtype)
        q_embed, k_embed = kernels.rope(q, k, cos, cos)
        assert q_embed.shape == q.shape and k_embed.shape == k.shape
        # empty_like semantics: a dense transposed q keeps its layout, a non-dense one does not.
        assert k_embed.stride() == torch.empty_like(k).stride()
        assert kernels.rope_(q, k, cos, cos) is None
        qs, ks = qkv[..., : 32 * 128].view(1, 10, 32, 128), qkv[..., 32 * 128 :].view(1, 10, 8, 128)
        assert kernels.qk_norm_rope_(qs, ks, w[:128], w[:128], cos, cos, 1e-6) is None


@pytest.fixture(scope="module")
def cpu_impls(kernels: ModuleType):  # noqa: ANN201
    """CPU implementations of the ops (the reference) so opcheck can run them for real."""
    from qwen3_8b_kernels._ops import add_op_namespace_prefix

    ref = kernels.reference
    namespace = add_op_namespace_prefix("x").split("::")[0]
    lib = torch.library.Library(namespace, "IMPL")

    def rms_norm_tuned(x, residual, weight, eps, threads, rows_per_group, persistent):  # noqa: ANN001, ANN202
        if residual is None:
            return ref.rms_norm(x, weight, eps), x.new_empty((0,))
        return ref.fused_add_rms_norm(x, residual, weight, eps)

    def rope(q, k, cos, sin):  # noqa: ANN001, ANN202
        # Like the C++ op: outputs laid out as empty_like(q), not as the reference returns them.
        q_ref, k_ref = ref.rope(q, k, cos, sin)
        return torch.empty_like(q).copy_(q_ref), torch.empty_like(k).copy_(k_ref)

    lib.impl("rms_norm", lambda x, w, eps: ref.rms_norm(x, w, eps).contiguous(), "CPU")
    lib.impl("fused_add_rms_norm", lambda x, r, w, eps: tuple(t.contiguous() for t in ref.fused_add_rms_norm(x, r, w, eps)), "CPU")
    lib.impl("swiglu", lambda g, u: ref.swiglu(g, u).contiguous(), "CPU")
    lib.impl("rope_", ref.rope_, "CPU")
    lib.impl("rope", rope, "CPU")
    lib.impl("qk_norm_rope_", ref.qk_norm_rope_, "CPU")
    lib.impl("rms_norm_tuned", rms_norm_tuned, "CPU")
    yield kernels.ops
    lib._destroy()


def _opcheck_cases():  # noqa: ANN202
    x = _randn(3, 5, 64, seed=30)
    r = _randn(3, 5, 64, seed=31)
    w = _randn(64, seed=32)
    gate_up = _randn(6, 96, seed=33)
    q = _randn(2, 5, 4, 32, seed=34).transpose(1, 2)
    k = _randn(2, 5, 2, 32, seed=35).transpose(1, 2)
    cos, sin = _randn(1, 5, 32, seed=36), _randn(1, 5, 32, seed=37)
    return {
        "rms_norm": (x, w, 1e-6),
        "rms_norm_no_weight": (x[..., :32], None, 1e-6),
        "fused_add_rms_norm": (x, r, w, 1e-6),
        "swiglu": (gate_up[:, :48], gate_up[:, 48:]),
        "rope_": (q.clone(), k.clone(), cos, sin),
        "rope": (q, k, cos, sin),
        "qk_norm_rope_": (*[t.clone() for t in _qk_parent(2, 5, 4, 2, 32, torch.float32, seed=38)[:2]],
                          w[:32], r[0, 0, :32], cos, sin, 1e-6),
        "rms_norm_tuned": (x, r, None, 1e-6, 128, 2, 1),
    }


@pytest.mark.parametrize("case", list(_opcheck_cases()))
def test_opcheck_schema_and_fake_kernels(cpu_impls, case: str) -> None:  # noqa: ANN001
    args = _opcheck_cases()[case]
    op_name = case.removesuffix("_no_weight")
    torch.library.opcheck(getattr(cpu_impls, op_name).default, args)


def test_ops_trace_under_compile_fullgraph(cpu_impls) -> None:  # noqa: ANN001
    """The Qwen3 attention prologue as torch.compile sees it: q/k are transposed views of
    one projection output, normalized per head and rotated in place."""
    ops = cpu_impls

    def prologue(qkv: torch.Tensor, w: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):  # noqa: ANN202
        b, s, _ = qkv.shape
        q = ops.rms_norm(qkv[..., :256].reshape(b, s, 4, 64), w, 1e-6).transpose(1, 2)
        k = ops.rms_norm(qkv[..., 256:].reshape(b, s, 2, 64), w, 1e-6).transpose(1, 2)
        ops.rope_(q, k, cos, sin)
        return q * 2, k + 1

    args = (_randn(2, 5, 384, seed=40), _randn(64, seed=41), _randn(2, 5, 64, seed=42), _randn(2, 5, 64, seed=43))
    eager = prologue(*args)
    compiled = torch.compile(prologue, fullgraph=True, backend="aot_eager")(*args)
    for got, want in zip(compiled, eager):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_qk_norm_rope_traces_in_place_on_views_under_compile_fullgraph(cpu_impls) -> None:  # noqa: ANN001
    """The fused Qwen3 attention prologue: q and k are [B, S, H, D] views of one merged qkv
    projection, normalized and rotated in place; v is the untouched third slice."""
    ops = cpu_impls

    def prologue(x: torch.Tensor, wqkv: torch.Tensor, qw: torch.Tensor, kw: torch.Tensor, cos: torch.Tensor,
                 sin: torch.Tensor):  # noqa: ANN202
        b, s, _ = x.shape
        qkv = x @ wqkv.t()
        q, k, v = qkv.split([256, 128, 128], dim=-1)
        q, k, v = q.view(b, s, 4, 64), k.view(b, s, 2, 64), v.view(b, s, 2, 64)
        ops.qk_norm_rope_(q, k, qw, kw, cos, sin, 1e-6)
        return q.transpose(1, 2) * 2, k.transpose(1, 2) + 1, v.transpose(1, 2)

    args = (_randn(2, 5, 48, seed=70), _randn(512, 48, seed=71), _randn(64, seed=72), _randn(64, seed=73),
            _randn(1, 5, 64, seed=74), _randn(1, 5, 64, seed=75))
    eager = prologue(*args)
    compiled = torch.compile(prologue, fullgraph=True, backend="aot_eager")(*args)
    for got, want in zip(compiled, eager):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
