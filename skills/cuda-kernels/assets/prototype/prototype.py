#!/usr/bin/env python3
"""Prototype a CUDA op in a running Python process, then move it into a kernel-builder project.

    python prototype.py [--build-only] [--name NAME] [--build-dir DIR] [--verbose]
    python prototype.py promote NAME [--out DIR] [--capabilities 8.0,9.0] [--force]

The first form compiles kernel_src/*.cu + torch-ext/torch_binding.cpp next to this file
with torch.utils.cpp_extension.load (the quickest edit-compile-run loop) and, on a GPU,
checks the op against its PyTorch reference, under torch.compile too (the fake kernel,
torch.library.register_fake, lets it trace). The flags that work:
  - is_python_module=False: torch.ops.load_library loads it, ops are torch.ops.<NAME>.<op>
    (TORCH_LIBRARY registration; no pybind11, which hard rule 3 forbids in a Hub kernel);
  - "-std=c++20" in extra_cflags / extra_cuda_cflags: torch 2.14's headers need it;
  - TORCH_CUDA_ARCH_LIST (e.g. "9.0"): one arch in the inner loop; without it
    cpp_extension builds for the visible GPU, or for every arch it knows when there is none;
  - CUDA_HOME: cpp_extension guesses it once, at import, from $CUDA_HOME, $CUDA_PATH, the
    folder above the `nvcc` on PATH, /usr/local/cuda. A wrapper script nvcc
    (/usr/local/bin/nvcc -> exec /usr/local/cuda-13.0/bin/nvcc) makes that /usr/local and
    linking fails; find_cuda_home() asks `nvcc -dryrun` (TOP=<the toolkit>) and sets
    CUDA_HOME before the import.

`promote NAME` writes a kernel-builder project DIR/NAME (build.toml, flake.nix, these
kernel_src/ and torch-ext/torch_binding.cpp unchanged, a package with `from ._ops import
ops` and the fake kernel, a test); the binding builds both ways, falling back to
TORCH_LIBRARY only where kernel-builder's registration.h is absent. Then SKILL.md hard rules
1-3 apply: `python <skill>/scripts/build_local.py DIR/NAME --arch 9.0 --check`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SKILL = HERE.parents[1]
DEFAULT_NAME = "proto_swish"


def find_cuda_home() -> str | None:
    """The CUDA toolkit folder, found the way that survives an nvcc wrapper script."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return os.environ[var]
    nvcc = shutil.which("nvcc")
    if nvcc:
        try:
            dry = subprocess.run([nvcc, "-dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
                                 check=False, capture_output=True, text=True, timeout=60)
            m = re.search(r"^#\$ TOP=(.+)$", dry.stdout + dry.stderr, re.MULTILINE)
            if m:
                return str(Path(m.group(1).strip()).resolve())
        except (OSError, subprocess.SubprocessError):
            pass
        guess = Path(nvcc).resolve().parent.parent
        if (guess / "include" / "cuda_runtime.h").is_file():
            return str(guess)
    return "/usr/local/cuda" if Path("/usr/local/cuda/include/cuda_runtime.h").is_file() else None


def build(name: str = DEFAULT_NAME, build_dir: Path | None = None, verbose: bool = False) -> str:
    """Compile and load the prototype; returns the library's path. Its ops are then
    torch.ops.<name>.<op>."""
    cuda_home = find_cuda_home()
    if cuda_home is None:
        raise RuntimeError("no CUDA toolkit found: set CUDA_HOME to the folder holding bin/nvcc")
    os.environ["CUDA_HOME"] = cuda_home  # before the import below: cpp_extension reads it then
    import torch
    from torch.utils import cpp_extension

    if "TORCH_CUDA_ARCH_LIST" not in os.environ and not torch.cuda.is_available():
        os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"  # one arch: a no-GPU build stays quick
    if build_dir is not None:
        build_dir.mkdir(parents=True, exist_ok=True)
    sources = [str(p) for p in sorted((HERE / "kernel_src").glob("*.cu"))] + [str(HERE / "torch-ext" / "torch_binding.cpp")]
    path = cpp_extension.load(
        name=name,
        sources=sources,
        extra_cflags=["-std=c++20", "-O3"],
        extra_cuda_cflags=["-std=c++20", "-O3"],
        is_python_module=False,  # torch.ops.load_library: TORCH_LIBRARY ops, no pybind11 module
        build_directory=str(build_dir) if build_dir else None,
        verbose=verbose,
    )
    register_fakes(name)
    return str(path)


def register_fakes(name: str) -> None:
    import torch

    def swish_fake(x: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    torch.library.register_fake(f"{name}::swish", swish_fake)


def reference_swish(x, beta: float = 1.0):
    return x * (beta * x).sigmoid()


def check(name: str) -> None:
    """The op against float64 on awkward sizes and views, and under torch.compile."""
    import torch

    op = getattr(torch.ops, name).swish
    for dtype, tol in ((torch.float32, 1e-5), (torch.float16, 1e-3), (torch.bfloat16, 8e-3)):
        for n in (1, 33, 4100, 1 << 20):
            x = (torch.randn(n + 1, device="cuda") * 3).to(dtype)[1:]  # misaligned view
            y = op(x, 1.5)
            ref = reference_swish(x.double(), 1.5)
            err = ((y.double() - ref).abs() / (ref.abs() + 1e-3)).max().item()
            assert err < tol * 4, f"swish {dtype} n={n}: relative error {err:.3g}"
    compiled = torch.compile(lambda t: op(t, 1.0) * 2, fullgraph=True)
    x = torch.randn(4096, device="cuda")
    torch.testing.assert_close(compiled(x), op(x, 1.0) * 2)
    print(f"check passed: torch.ops.{name}.swish matches float64 (fp32/fp16/bf16) and traces under torch.compile")


# ----------------------------------------------------------------------------- promote
PACKAGE_INIT = '''"""{name}: the prototype op as a kernel-builder package."""

from __future__ import annotations

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["swish"]


def swish(x: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """x * sigmoid(beta * x), fp32 math; CUDA tensors only (the reference covers the rest)."""
    if not x.is_cuda:
        return x * (beta * x).sigmoid()
    return ops.swish(x, beta)


@torch.library.register_fake(add_op_namespace_prefix("swish"))
def _swish_fake(x: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)
'''

TEST = '''"""{name}: the op against float64 (GPU) - extend with your op's awkward shapes."""

import pytest
import torch

import {pkg}

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("n", [1, 33, 4100, 1 << 20])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_swish_matches_float64(n: int, dtype: torch.dtype) -> None:
    x = (torch.randn(n + 1, device="cuda") * 3).to(dtype)[1:]
    ref = x.double() * (1.5 * x.double()).sigmoid()
    tol = {{torch.float32: 4e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}}[dtype]
    err = (({pkg}.swish(x, 1.5).double() - ref).abs() / (ref.abs() + 1e-3)).max().item()
    assert err < tol
'''

BUILD_TOML = '''# kernel-builder configuration of {name} (promoted from assets/prototype).
# Local: python <skill>/scripts/build_local.py . --arch 9.0 --check
[general]
name = "{name}"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.proto]
backend = "cuda"
depends = ["torch"]
src = [{kernel_src}]
cuda-capabilities = [{caps}]
'''

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


def promote(name: str, out: Path, capabilities: list[str], force: bool) -> Path:
    """Write the kernel-builder project out/name from this prototype; returns its path."""
    if not NAME_RE.fullmatch(name):
        raise ValueError(f"invalid project name {name!r}: lowercase words joined by '-', e.g. my-swish")
    pkg = name.replace("-", "_")
    target = out / name
    if target.exists() and any(target.iterdir()) and not force:
        raise FileExistsError(f"{target} exists and is not empty (--force overwrites the files written here)")
    kernel_files = sorted(p.name for p in (HERE / "kernel_src").iterdir() if p.suffix in (".cu", ".cuh", ".h"))
    files = {
        "build.toml": BUILD_TOML.format(name=name, kernel_src=", ".join(f'"kernel_src/{f}"' for f in kernel_files),
                                        caps=", ".join(f'"{c}"' for c in capabilities)),
        "flake.nix": (SKILL / "assets" / "template" / "common" / "flake.nix").read_text().replace("__NAME__", name),
        "torch-ext/torch_binding.cpp": (HERE / "torch-ext" / "torch_binding.cpp").read_text(),
        "torch-ext/torch_binding.h": (HERE / "torch-ext" / "torch_binding.h").read_text(),
        f"torch-ext/{pkg}/__init__.py": PACKAGE_INIT.format(name=name),
        f"tests/test_{pkg}.py": TEST.format(name=name, pkg=pkg),
    }
    for f in kernel_files:
        files[f"kernel_src/{f}"] = (HERE / "kernel_src" / f).read_text()
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return target


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["promote"]:
        ap = argparse.ArgumentParser(prog="prototype.py promote", description="Write a kernel-builder project from the prototype.")
        ap.add_argument("name", help="project name, lowercase words joined by '-'")
        ap.add_argument("--out", type=Path, default=Path("."), help="parent folder (default: .)")
        ap.add_argument("--capabilities", default="8.0,9.0", help="cuda-capabilities (default 8.0,9.0)")
        ap.add_argument("--force", action="store_true", help="write into an existing non-empty folder")
        a = ap.parse_args(argv[1:])
        try:
            target = promote(a.name, a.out, [c.strip() for c in a.capabilities.split(",") if c.strip()], a.force)
        except ValueError as e:
            print(f"prototype: {e}", file=sys.stderr)
            return 2
        except FileExistsError as e:
            print(f"prototype: {e}", file=sys.stderr)
            return 1
        print(target)
        print(f"next: python {SKILL / 'scripts' / 'build_local.py'} {target} --arch 9.0 --check", file=sys.stderr)
        return 0
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="then: prototype.py promote NAME [--out DIR] writes the kernel-builder project "
               "(prototype.py promote --help)")
    ap.add_argument("--name", default=DEFAULT_NAME, help=f"extension / op namespace name (default {DEFAULT_NAME})")
    ap.add_argument("--build-dir", type=Path, help="where cpp_extension builds (default: its cache)")
    ap.add_argument("--build-only", action="store_true", help="compile and load, skip the GPU check")
    ap.add_argument("--verbose", action="store_true", help="show the compiler commands")
    a = ap.parse_args(argv)
    path = build(a.name, a.build_dir, a.verbose)
    print(f"built and loaded {path}: torch.ops.{a.name}.swish")
    import torch

    if a.build_only or not torch.cuda.is_available():
        if not a.build_only:
            print("no CUDA device: skipped the check (the library loads; running needs a GPU)")
        return 0
    check(a.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
