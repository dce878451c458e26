"""CPU specification of ltx_video_kernels: the reference is diffusers, and the fakes trace.

- reference.py reproduces diffusers 0.42.1 bit for bit (needs diffusers; skipped without it)
  and agrees with the float64 formulas;
- the package routes CPU tensors to the reference;
- every op's fake kernel gives the CUDA op's output shape, dtype and (contiguous) strides
  under FakeTensorMode with CUDA fake tensors, which needs no GPU;
- the CUDA kernels themselves, compiled with g++ against the CPU emulator, match float64.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

import float64_math as exact  # noqa: E402 - tests/ is put on sys.path by conftest

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(dtype)


# ------------------------------------------------------------- reference == diffusers


@pytest.fixture(scope="module")
def diffusers_modules():
    pytest.importorskip("diffusers")
    from diffusers.models.activations import GELU
    from diffusers.models.normalization import RMSNorm
    from diffusers.models.transformers import transformer_ltx

    return RMSNorm, GELU, transformer_ltx


@pytest.mark.parametrize("dtype", DTYPES)
def test_weightless_rms_norm_is_diffusers_rmsnorm(reference: ModuleType, diffusers_modules, dtype) -> None:
    rmsnorm_cls, _, _ = diffusers_modules
    x = _randn(3, 17, 2048, dtype=dtype, scale=3.0)
    norm = rmsnorm_cls(2048, eps=1e-6, elementwise_affine=False)  # LTX norm1 / norm2
    assert torch.equal(reference.rms_norm(x, None, 1e-6), norm(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_weighted_rms_norm_is_torch_rmsnorm(reference: ModuleType, dtype) -> None:
    x = _randn(3, 17, 2048, dtype=dtype, scale=3.0)
    norm = torch.nn.RMSNorm(2048, eps=1e-5).to(dtype)  # LTX attn.norm_q / norm_k
    with torch.no_grad():
        norm.weight.copy_(_randn(2048, seed=1, scale=0.3) + 1.0)
    assert torch.equal(reference.rms_norm(x, norm.weight.detach(), 1e-5), norm(x).detach())


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_tanh_is_diffusers_feedforward_activation(reference: ModuleType, diffusers_modules, dtype) -> None:
    _, gelu_cls, _ = diffusers_modules
    act = gelu_cls(16, 64, approximate="tanh")
    x = _randn(2, 5, 64, dtype=dtype, scale=3.0)
    assert torch.equal(reference.gelu_tanh(x), act.gelu(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_is_ltx_apply_rotary_emb(reference: ModuleType, diffusers_modules, dtype) -> None:
    _, _, ltx = diffusers_modules
    x = _randn(2, 60, 64, dtype=dtype)
    cos, sin = reference.rope_tables(2, 3, 4, 5, 64)
    assert torch.equal(reference.rope_interleaved(x, cos, sin), ltx.apply_rotary_emb(x, (cos, sin)))


def test_rope_tables_are_ltx_rotary_pos_embed(reference: ModuleType, diffusers_modules) -> None:
    _, _, ltx = diffusers_modules
    module = ltx.LTXVideoRotaryPosEmbed(dim=2048, base_num_frames=20, base_height=2048, base_width=2048)
    hidden = torch.zeros(2, 1, 128)
    # 49 frames at 512 x 768 -> 7 x 16 x 24 = 2688 latent tokens; LTXPipeline's scale at 25 fps.
    cos, sin = module(hidden, 7, 16, 24, (8 / 25, 32, 32))
    mine = reference.rope_tables(2, 7, 16, 24, 2048, (8 / 25, 32, 32))
    assert cos.shape == (2, 2688, 2048) and cos.dtype == torch.float32
    assert torch.equal(mine[0], cos) and torch.equal(mine[1], sin)
    # dim % 6 == 2 leading entries are the identity rotation.
    assert torch.all(cos[..., :2] == 1) and torch.all(sin[..., :2] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_adaln_is_the_block_expression(reference: ModuleType, diffusers_modules, dtype) -> None:
    rmsnorm_cls, _, _ = diffusers_modules
    x = _randn(2, 9, 64, dtype=dtype)
    table = _randn(2, 1, 6, 64, dtype=dtype, seed=3, scale=0.2)  # the block's [B, T, 6, D] ada_values
    shift, scale = table[:, :, 0], table[:, :, 1]
    norm = rmsnorm_cls(64, eps=1e-6, elementwise_affine=False)
    expected = norm(x) * (1 + scale) + shift
    assert torch.equal(reference.rms_norm_modulate(x, None, scale, shift, 1e-6), expected)


@pytest.mark.parametrize("gated", [True, False])
def test_add_rms_norm_modulate_is_the_block_expression(reference: ModuleType, gated: bool) -> None:
    dtype = torch.bfloat16
    h0, branch = _randn(2, 9, 64, dtype=dtype), _randn(2, 9, 64, dtype=dtype, seed=1)
    table = _randn(2, 1, 6, 64, dtype=dtype, seed=3, scale=0.2)
    gate = table[:, :, 5] if gated else None
    shift, scale = table[:, :, 3], table[:, :, 4]
    h = h0 + branch * gate if gated else h0 + branch
    normed, new_h = reference.add_rms_norm_modulate(branch, h0, gate, None, scale, shift, 1e-6)
    assert torch.equal(new_h, h)
    assert torch.equal(normed, reference.rms_norm(h, None, 1e-6) * (1 + scale) + shift)


# ------------------------------------------------------- reference == float64 formulas


def test_reference_matches_float64_formulas(reference: ModuleType) -> None:
    x = _randn(4, 33, 96, dtype=torch.float64, scale=2.0)
    w = _randn(96, dtype=torch.float64, seed=1) + 1
    s, t = _randn(4, 1, 96, dtype=torch.float64, seed=2), _randn(4, 1, 96, dtype=torch.float64, seed=3)
    cos, sin = _randn(4, 33, 96, seed=4), _randn(4, 33, 96, seed=5)  # arbitrary values, not a rotation
    # The weightless reference takes the variance in fp32, as diffusers does.
    torch.testing.assert_close(reference.rms_norm(x, None, 1e-6), exact.rms_norm(x, None, 1e-6), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(reference.rms_norm(x, w, 1e-5), exact.rms_norm(x, w, 1e-5))
    torch.testing.assert_close(
        reference.rms_norm_modulate(x, w, s, t, 1e-5), exact.modulate(exact.rms_norm(x, w, 1e-5), s, t)
    )
    torch.testing.assert_close(reference.gelu_tanh(x), exact.gelu_tanh(x))
    # diffusers' RoPE computes in fp32 (x.float()) even for float64 inputs.
    torch.testing.assert_close(
        reference.rope_interleaved(x, cos, sin), exact.rope_interleaved(x, cos, sin), rtol=1e-5, atol=1e-6
    )


def test_rope_is_a_complex_rotation(reference: ModuleType) -> None:
    # With LTX's tables (each angle repeated for a pair) the interleaved RoPE multiplies
    # each (real, imag) pair by exp(i * angle).
    x = _randn(1, 60, 64, dtype=torch.float64)
    cos, sin = reference.rope_tables(1, 3, 4, 5, 64)
    out = reference.rope_interleaved(x, cos.double(), sin.double())
    z = torch.view_as_complex(x.unflatten(-1, (-1, 2)).contiguous())
    angle = torch.atan2(sin[..., 0::2], cos[..., 0::2]).double()
    expected = torch.view_as_real(z * torch.exp(1j * angle)).flatten(-2)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)  # diffusers rotates in fp32


# --------------------------------------------------------------- package on CPU tensors


def test_cpu_tensors_use_the_reference(kernels: ModuleType) -> None:
    ref = kernels.reference
    x = _randn(2, 12, 64, dtype=torch.bfloat16)
    w = _randn(64, dtype=torch.bfloat16, seed=1) + 1
    s, t = _randn(2, 1, 64, dtype=torch.bfloat16, seed=2), _randn(2, 1, 64, dtype=torch.bfloat16, seed=3)
    cos, sin = ref.rope_tables(2, 1, 3, 4, 64)
    assert torch.equal(kernels.rms_norm(x, w, 1e-5), ref.rms_norm(x, w, 1e-5))
    assert torch.equal(kernels.rms_norm_modulate(x, None, s, t, 1e-6), ref.rms_norm_modulate(x, None, s, t, 1e-6))
    assert torch.equal(kernels.gelu_tanh(x), ref.gelu_tanh(x))
    assert torch.equal(kernels.rope_interleaved(x, cos, sin), ref.rope_interleaved(x, cos, sin))
    assert torch.equal(kernels.rms_norm_rope(x, w, cos, sin, 1e-5), ref.rms_norm_rope(x, w, cos, sin, 1e-5))
    q, k = kernels.rms_norm_rope_qk(x, x * 2, w, w, cos, sin, 1e-5)
    assert torch.equal(k, ref.rms_norm_rope(x * 2, w, cos, sin, 1e-5))
    out, h = kernels.add_rms_norm_modulate(x, x, s, None, s, t, 1e-6)
    assert torch.equal(h, x + x * s)


def test_add_rms_norm_modulate_needs_scale_and_shift_together(kernels: ModuleType) -> None:
    x = _randn(2, 3, 8)
    with pytest.raises(ValueError, match="both scale and shift"):
        kernels.add_rms_norm_modulate(x, x, None, None, x, None, 1e-6)


# ----------------------------------------------------------------- fakes (no GPU needed)


def _fake_cases(kernels: ModuleType, dtype: torch.dtype):
    x = torch.empty(2, 6, 64, device="cuda", dtype=dtype)
    xt = torch.empty(6, 2, 64, device="cuda", dtype=dtype).transpose(0, 1)  # non-contiguous
    w = torch.empty(64, device="cuda", dtype=dtype)
    s = torch.empty(2, 1, 6, 64, device="cuda", dtype=dtype)[:, :, 1]  # strided AdaLN slice
    cos = torch.empty(2, 6, 64, device="cuda")
    return {
        "rms_norm": lambda: [kernels.rms_norm(xt, w, 1e-5)],
        "rms_norm_modulate": lambda: [kernels.rms_norm_modulate(x, None, s, s, 1e-6)],
        "add_rms_norm_modulate": lambda: list(kernels.add_rms_norm_modulate(xt, x, s, None, s, s, 1e-6)),
        "rms_norm_with_config": lambda: [kernels.rms_norm_with_config(x, w, 1e-6, 8, 1)],
        "rms_norm_modulate_with_config": lambda: [kernels.rms_norm_modulate_with_config(x, w, s, s, 1e-6, 8, 1, 4, 3)],
        "add_rms_norm_modulate_with_config": lambda: list(
            kernels.add_rms_norm_modulate_with_config(xt, x, s, None, s, s, 1e-6, 8, 1, 4, 1)),
        "gelu_tanh": lambda: [kernels.gelu_tanh(xt)],
        "gelu_tanh_with_config": lambda: [kernels.gelu_tanh_with_config(xt, 64, 8)],
        "rope_interleaved": lambda: [kernels.rope_interleaved(xt, cos, cos)],
        "rope_interleaved_with_config": lambda: [kernels.rope_interleaved_with_config(x, cos, cos, 1, 4)],
        "rms_norm_rope": lambda: [kernels.rms_norm_rope(x, w, cos, cos, 1e-5)],
        "rms_norm_rope_qk": lambda: list(kernels.rms_norm_rope_qk(x, xt, w, w, cos, cos, 1e-5)),
        "rms_norm_rope_qk_with_config": lambda: list(
            kernels.rms_norm_rope_qk_with_config(x, xt, w, w, cos, cos, 1e-5, 8, 1)),
    }


@pytest.mark.parametrize("dtype", DTYPES)
def test_fake_kernels_give_contiguous_outputs_of_x_shape_and_dtype(kernels: ModuleType, dtype) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        cases = _fake_cases(kernels, dtype)
        for name, call in cases.items():
            for out in call():
                assert out.device.type == "cuda", name
                assert out.shape == (2, 6, 64) and out.dtype == dtype, name
                assert out.is_contiguous(), name


def test_every_registered_op_has_a_fake(kernels: ModuleType) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    # every op the extension registered in its namespace (dir(kernels.ops) lists only the ops
    # already looked up, so it cannot be the source)
    prefix = kernels.ops.name + "::"
    registered = {n[len(prefix):] for n in torch._C._dispatch_get_all_op_names() if n.startswith(prefix)}
    assert {"rms_norm", "gelu_tanh", "set_pdl"} <= registered, sorted(registered)
    registered -= {"set_pdl", "set_cache_hints"}  # process-wide switches, no tensors: nothing to fake
    with FakeTensorMode():
        covered = set(_fake_cases(kernels, torch.bfloat16))
    assert registered <= covered, f"ops without a fake test: {sorted(registered - covered)}"


@pytest.mark.parametrize("switch", ["set_pdl", "set_cache_hints"])
def test_a_switch_sets_the_process_wide_setting_and_returns_the_old_one(kernels: ModuleType, switch: str) -> None:
    flip = getattr(kernels, switch)
    was = flip(False)
    try:
        assert flip(True) is False
        assert flip(True) is True
        assert flip(False) is True
    finally:
        flip(was)


@pytest.mark.parametrize(
    ("switch", "env_name", "cases"),
    [
        # PDL is on unless the environment says 0
        ("set_pdl", "LTX_VIDEO_PDL", (("0", "False"), ("1", "True"), ("", "True"), ("yes", "True"))),
        # the cache-hint rule is off unless the environment says 1
        ("set_cache_hints", "LTX_VIDEO_CACHE_HINTS", (("0", "False"), ("1", "True"), ("", "False"), ("yes", "False"))),
    ],
)
def test_the_environment_sets_a_switch_s_starting_value(
    kernels: ModuleType, switch: str, env_name: str, cases: tuple[tuple[str, str], ...]
) -> None:
    package_parent = Path(kernels.__file__).resolve().parents[1]
    # the first call returns the value the environment gave; the second what the first set
    code = f"import ltx_video_kernels as k; print(k.{switch}(True), k.{switch}(True))"
    pythonpath = os.pathsep.join(filter(None, [str(package_parent), os.environ.get("PYTHONPATH")]))
    for env_value, expected in cases:
        env = {**os.environ, env_name: env_value, "PYTHONPATH": pythonpath}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split("\n")[-2] == f"{expected} True", (env_name, env_value)


def test_ops_run_on_meta_tensors(kernels: ModuleType) -> None:
    x = torch.empty(5, 7, 32, device="meta", dtype=torch.float16)
    out = kernels.ops.rms_norm(x, None, 1e-6)
    assert out.device.type == "meta" and out.shape == x.shape and out.dtype == x.dtype


# ------------------------------------------------------------ the kernels on the CPU emulator
# kernels_emulated.cpp includes kernel_src/*_kernels.cuh as they are, with the skill's CPU
# emulator standing in for the CUDA runtime (threads, barriers, warp shuffles, __shared__),
# and compares every launch configuration, layout and dtype with float64 math. It catches
# indexing, masking, reduction and pairing mistakes without a GPU; speed and real warp
# scheduling are the `gpu` tests' job. LTX_EMULATION_FULL=1 runs every configuration
# instead of a representative half.

HERE = Path(__file__).resolve().parent
KERNEL_SRC = HERE.parent / "kernel_src"
SOURCE = HERE / "kernels_emulated.cpp"


def _cuda_include() -> Path | None:
    """A directory with cuda_fp16.h / cuda_bf16.h / cuda_runtime.h (host-side use only)."""
    candidates: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include")
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(Path(nvcc).resolve().parent.parent / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    for entry in sys.path:  # the CUDA wheels torch depends on ship the same headers
        candidates += sorted(Path(entry).glob("nvidia/cu*/include")) + sorted(Path(entry).glob("nvidia/cuda_runtime/include"))
    for c in candidates:
        if (c / "cuda_fp16.h").is_file() and (c / "cuda_bf16.h").is_file() and (c / "cuda_runtime.h").is_file():
            return c
    return None


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler on PATH")
    include = _cuda_include()
    if include is None:
        pytest.skip("CUDA headers (cuda_fp16.h, cuda_bf16.h, cuda_runtime.h) not found")
    exe = tmp_path_factory.mktemp("emulation") / "kernels_emulated"
    cmd = [cxx, "-std=c++20", "-O1", "-w", "-DLTX_CPU_EMULATION", f"-I{KERNEL_SRC}", f"-I{include}",
           str(SOURCE), "-o", str(exe), "-lpthread"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-4000:]}"
    return exe


@pytest.mark.slow
def test_kernels_match_float64_on_the_cpu_emulator(emulator: Path) -> None:
    args = ["full"] if os.environ.get("LTX_EMULATION_FULL") == "1" else []
    proc = subprocess.run([str(emulator), *args], capture_output=True, text=True, timeout=1800)
    report = proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, report
    assert "failures: 0" in proc.stdout, report
    assert "FAIL" not in proc.stdout, report
