"""The kernel templates are a working project, not just compiling text.

The `// file:` blocks of references/kernel-templates.md are written out as a kernel-builder
project and built with scripts/build_local.py (slow, CI): every declared op schema must be
registered, and the package's CPU fallbacks must match a float64 reference. On a GPU (`gpu`
marker) every op is compared with a float64 reference on awkward inputs: odd widths, widths
that disable the 16-byte path, misaligned and non-contiguous views, one row, zero rows,
outputs that must be fully written, and a torch.compile(fullgraph=True) call.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

import skilldocs

DOC = skilldocs.SKILL / "references" / "kernel-templates.md"
ARCHS = os.environ.get("KERNEL_SKILLS_TEST_ARCHS", "8.0,9.0").split(",")
BUILD_TOML = """[general]
name = "my-kernels"
version = 1
edition = 5
license = "apache-2.0"
backends = ["cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.templates]
backend = "cuda"
depends = ["torch"]
src = [{sources}]
"""
TOL = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


@pytest.fixture(scope="module")
def my_kernels(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    torch = pytest.importorskip("torch")
    project = tmp_path_factory.mktemp("template-project") / "my-kernels"
    files = [(b.file_path, b.text) for b in skilldocs.parse_blocks(DOC) if b.file_path]
    for rel, text in files:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text, encoding="utf-8")
    kernel_src = sorted(rel for rel, _ in files if rel.startswith("kernel_src/"))
    (project / "build.toml").write_text(BUILD_TOML.format(sources=", ".join(f'"{s}"' for s in kernel_src)),
                                        encoding="utf-8")
    try:  # the project's build.toml is valid for kernel-builder too (kernels may be absent on a GPU box)
        from kernels._rust import Build  # noqa: PLC0415
    except ImportError:
        Build = None
    if Build is not None:
        Build.open(project)
    scripts = str(skilldocs.SKILL / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    from build_local import build_project, check_build  # noqa: PLC0415

    archs = ARCHS
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        archs = [f"{major}.{minor}"]
    result = build_project(project, archs=archs, build_dir=tmp_path_factory.mktemp("template-build"))
    declared = check_build(result)
    assert sorted(declared) == sorted(["rms_norm", "fused_add_rms_norm", "norm_modulate", "rope_rotate_half_",
                                       "rope_interleaved", "gelu_tanh", "swiglu", "geglu"])
    return importlib.import_module(result.package)


def _ref_rms(x, w, eps):
    import torch

    xd = x.double()
    y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    return y * w.double() if w is not None else y


def _rel(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


@pytest.mark.slow
def test_template_project_builds_registers_and_falls_back_on_cpu(my_kernels: ModuleType) -> None:
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    x = torch.randn(3, 5, 40)
    w = torch.randn(40)
    assert _rel(my_kernels.rms_norm(x, w, 1e-6), _ref_rms(x, w, 1e-6)) < 1e-6
    y, s = my_kernels.fused_add_rms_norm(x, x * 0.5, w, 1e-6)
    assert _rel(s, x * 1.5) < 1e-7 and _rel(y, _ref_rms(x * 1.5, w, 1e-6)) < 1e-6
    assert _rel(my_kernels.gelu_tanh(x), F.gelu(x.double(), approximate="tanh")) < 1e-6
    assert _rel(my_kernels.swiglu(x, x.flip(-1)), F.silu(x.double()) * x.flip(-1).double()) < 1e-6
    assert my_kernels.geglu(x).shape == (3, 5, 20)
    # bf16 on CPU: computed in fp32 and rounded once, as the kernels do.
    xb = x.bfloat16()
    hidden, gate = xb.double().chunk(2, dim=-1)
    assert _rel(my_kernels.geglu(xb), hidden * F.gelu(gate)) < 4e-3
    assert _rel(my_kernels.gelu_tanh(xb), F.gelu(xb.double(), approximate="tanh")) < 4e-3


def test_the_geglu_fake_refuses_an_odd_width_as_the_binding_does(my_kernels: ModuleType) -> None:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        even = torch.empty(2, 8)
        assert my_kernels.ops.geglu(even).shape == (2, 4)
        with pytest.raises(RuntimeError, match="last dimension must be even"):
            my_kernels.ops.geglu(torch.empty(2, 7))


# ----------------------------------------------------------------------------- GPU checks

DTYPES = ["float32", "float16", "bfloat16"]


def _poisoned_compare(fn, ref, tol):
    out = fn()
    assert torch_isfinite(out), "output has NaN/inf (unwritten elements?)"
    assert _rel(out, ref) < tol, _rel(out, ref)


def torch_isfinite(t) -> bool:
    import torch

    return bool(torch.isfinite(t.float()).all()) if t.numel() else True


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 4096), (7, 4095), (33, 128), (5, 100), (2, 3, 2048), (0, 64), (1, 8)])
def test_rms_norm_gpu(my_kernels: ModuleType, dtype: str, shape: tuple[int, ...]) -> None:
    import torch

    dt = getattr(torch, dtype)
    torch.manual_seed(1)
    x = torch.randn(*shape, device="cuda", dtype=dt)
    w = torch.randn(shape[-1], device="cuda", dtype=dt)
    for weight in (w, None):
        y = my_kernels.rms_norm(x, weight, 1e-6)
        assert y.dtype == dt and y.shape == x.shape
        if x.numel():
            _poisoned_compare(lambda: y, _ref_rms(x, weight, 1e-6), TOL[dtype])
    # Misaligned start (2 bytes into a buffer) and a strided row view: the scalar path.
    flat = torch.randn(shape[-1] * 4 + 1, device="cuda", dtype=dt)
    mis = flat[1:].view(4, shape[-1])
    assert _rel(my_kernels.rms_norm(mis, w, 1e-6), _ref_rms(mis, w, 1e-6)) < TOL[dtype]
    wide = torch.randn(6, 2 * shape[-1], device="cuda", dtype=dt)[:, : shape[-1]]
    assert _rel(my_kernels.rms_norm(wide, w, 1e-6), _ref_rms(wide, w, 1e-6)) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_add_rms_norm_gpu(my_kernels: ModuleType, dtype: str) -> None:
    import torch

    dt = getattr(torch, dtype)
    for rows, hidden in [(17, 4096), (3, 4095), (1, 100)]:
        x = torch.randn(rows, hidden, device="cuda", dtype=dt)
        r = torch.randn(rows, hidden, device="cuda", dtype=dt)
        w = torch.randn(hidden, device="cuda", dtype=dt)
        y, s = my_kernels.fused_add_rms_norm(x, r, w, 1e-6)
        assert torch.equal(s, x + r)  # rounded to the dtype exactly like PyTorch's add
        assert _rel(y, _ref_rms(s, w, 1e-6)) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("center", [False, True])
def test_norm_modulate_gpu(my_kernels: ModuleType, dtype: str, center: bool) -> None:
    import torch

    dt = getattr(torch, dtype)
    b, s, d = 2, 37, 2048
    x = torch.randn(b, s, d, device="cuda", dtype=dt) + (3.0 if center else 0.0)
    ada = torch.randn(b, 1, 6, d, device="cuda", dtype=dt)
    shift, scale = ada[:, :, 0], ada[:, :, 1]  # non-contiguous [B, 1, D] views, rows 6*D apart
    xd = x.double()
    if center:
        xd = xd - xd.mean(-1, keepdim=True)
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + scale.double()) + shift.double()
    out = my_kernels.norm_modulate(x, None, None, scale, shift, 1e-6, center)
    assert _rel(out, ref) < TOL[dtype] * 2
    per_token = torch.randn(b, s, d, device="cuda", dtype=dt)
    ref2 = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + per_token.double())
    assert _rel(my_kernels.norm_modulate(x, None, None, per_token, None, 1e-6, center), ref2) < TOL[dtype] * 2


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_gpu(my_kernels: ModuleType, dtype: str) -> None:
    import torch

    dt = getattr(torch, dtype)
    b, h, s, d = 2, 4, 9, 64
    q = torch.randn(b, s, h * d, device="cuda", dtype=dt).view(b, s, h, d).transpose(1, 2)  # transformers layout
    angles = torch.randn(b, s, d // 2, device="cuda")
    cos = torch.cat((angles.cos(), angles.cos()), -1).to(dt)
    sin = torch.cat((angles.sin(), angles.sin()), -1).to(dt)
    rot = torch.cat((-q[..., d // 2:], q[..., : d // 2]), -1)
    ref = q.double() * cos.double().unsqueeze(1) + rot.double() * sin.double().unsqueeze(1)
    q_in = q.clone()
    my_kernels.rope_rotate_half_(q_in, cos, sin)
    assert _rel(q_in, ref) < TOL[dtype]
    # Interleaved (LTX): float32 tables over the full width.
    x = torch.randn(b, s, h * d, device="cuda", dtype=dt)
    ang = torch.randn(b, s, h * d // 2, device="cuda").repeat_interleave(2, -1)
    c, sn = ang.cos(), ang.sin()
    real, imag = x.double().unflatten(-1, (-1, 2)).unbind(-1)
    rotated = torch.stack((-imag, real), -1).flatten(-2)
    assert _rel(my_kernels.rope_interleaved(x, c, sn), x.double() * c.double() + rotated * sn.double()) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_activations_gpu(my_kernels: ModuleType, dtype: str) -> None:
    import torch
    import torch.nn.functional as F

    dt = getattr(torch, dtype)
    for n in (1, 7, 4096 * 3 + 5):
        x = torch.randn(n, device="cuda", dtype=dt)
        assert _rel(my_kernels.gelu_tanh(x), F.gelu(x.double(), approximate="tanh")) < TOL[dtype]
    fused = torch.randn(5, 2 * 1000, device="cuda", dtype=dt)  # halves of a fused gate/up projection
    gate, up = fused[:, :1000], fused[:, 1000:]
    assert _rel(my_kernels.swiglu(gate, up), F.silu(gate.double()) * up.double()) < TOL[dtype]
    hidden, g = fused.double().chunk(2, -1)
    assert _rel(my_kernels.geglu(fused), hidden * F.gelu(g)) < TOL[dtype]
    empty = torch.empty(0, 16, device="cuda", dtype=dt)
    assert my_kernels.swiglu(empty, empty).shape == (0, 16)


@pytest.mark.gpu
@pytest.mark.slow
def test_ops_trace_under_torch_compile(my_kernels: ModuleType) -> None:
    import torch

    torch._dynamo.reset()
    x = torch.randn(8, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(256, device="cuda", dtype=torch.bfloat16)

    def f(x, w):
        y, s = my_kernels.fused_add_rms_norm(x, x, w, 1e-6)
        return my_kernels.gelu_tanh(my_kernels.rms_norm(y, w, 1e-6)) + s

    compiled = torch.compile(f, fullgraph=True)
    assert _rel(compiled(x, w), f(x, w)) < 1e-2
