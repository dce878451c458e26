"""assets/prototype: the cpp_extension.load route compiles, links and loads (no GPU needed to
load), and `promote` turns it into a kernel-builder project that build_local.py builds."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import skilldocs

PROTO = skilldocs.SKILL / "assets" / "prototype" / "prototype.py"
BUILD_LOCAL = skilldocs.SKILL / "scripts" / "build_local.py"

spec = importlib.util.spec_from_file_location("prototype", PROTO)
assert spec and spec.loader
prototype = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prototype)


def test_promote_writes_a_kernel_builder_project(tmp_path: Path) -> None:
    target = prototype.promote("my-swish", tmp_path, ["8.0", "9.0"], force=False)
    names = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
    assert names == {"build.toml", "flake.nix", "kernel_src/proto.h", "kernel_src/proto_kernel.cu",
                     "torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h", "torch-ext/my_swish/__init__.py",
                     "tests/test_my_swish.py"}
    toml = (target / "build.toml").read_text()
    assert 'name = "my-swish"' in toml and '"9.0"' in toml
    assert "from ._ops import" in (target / "torch-ext/my_swish/__init__.py").read_text()
    with pytest.raises(FileExistsError):
        prototype.promote("my-swish", tmp_path, ["9.0"], force=False)
    assert prototype.main(["promote", "Bad_Name", "--out", str(tmp_path)]) == 2


def test_help_names_the_promote_step(capsys: pytest.CaptureFixture[str]) -> None:
    # SKILL.md's prototype step ends with `prototype.py promote NAME`: --help must say it exists.
    with pytest.raises(SystemExit) as exit_:
        prototype.main(["--help"])
    assert exit_.value.code == 0
    assert "prototype.py promote NAME" in capsys.readouterr().out


def test_find_cuda_home_sees_through_an_nvcc_wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which("nvcc")
    if real is None:
        pytest.skip("nvcc is not on PATH")
    wrapper = tmp_path / "bin" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {Path(real).resolve()} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    home = prototype.find_cuda_home()
    assert home is not None and Path(home, "include", "cuda_runtime.h").is_file(), home
    assert Path(home) != tmp_path


@pytest.mark.slow
def test_prototype_compiles_links_and_loads_then_promotes_and_builds(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": "9.0"}
    proc = subprocess.run([sys.executable, str(PROTO), "--build-dir", str(tmp_path / "ext"), "--build-only"],
                          check=False, capture_output=True, text=True, timeout=1200, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "torch.ops.proto_swish.swish" in proc.stdout
    proc = subprocess.run([sys.executable, str(PROTO), "promote", "my-swish", "--out", str(tmp_path)],
                          check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([sys.executable, str(BUILD_LOCAL), str(tmp_path / "my-swish"), "--arch", "9.0", "--check",
                           "--build-dir", str(tmp_path / "kb")], check=False, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "check passed: swish registered" in proc.stdout + proc.stderr
