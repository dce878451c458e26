"""Every C++/CUDA block in SKILL.md and references/ compiles; every Python block parses.

Each .cu/.cpp block is compiled with nvcc `-c` for sm_80 and sm_90 in one call (two
-gencode targets), against the installed torch's headers, with -std=c++20 (torch 2.14's
headers need it) and the CUDA headers that torch's `nvidia` wheels ship. .cu files are
compiled twice: with kernel-builder's nvcc defines (torch's COMMON_NVCC_FLAGS minus the
__CUDA_NO_HALF*/__CUDA_NO_BFLOAT16* defines, which kernel-builder removes) and with torch
cpp_extension's defaults (which keep them), so the templates build both ways.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

import skilldocs

UNITS = skilldocs.compile_units()
PY_BLOCKS = [b for b in skilldocs.all_blocks() if b.lang in ("python", "py")]
NO_HALF_DEFINES = {
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
}


def _toolchain() -> tuple[str, list[str], list[str]]:
    """(nvcc, include flags, torch's nvcc flags), or skip when nvcc/torch are missing."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    cpp_extension = pytest.importorskip("torch.utils.cpp_extension")
    includes = [f"-I{p}" for p in cpp_extension.include_paths()]
    site = Path(sysconfig.get_paths()["purelib"])
    nvidia = site / "nvidia" / "cu13" / "include"
    if nvidia.is_dir():
        includes.append(f"-I{nvidia}")
    includes.append(f"-I{sysconfig.get_paths()['include']}")
    return nvcc, includes, list(cpp_extension.COMMON_NVCC_FLAGS)


def _write_tree(unit: skilldocs.Unit, root: Path) -> None:
    for rel, text in unit.files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for rel, _ in unit.files:
        # kernel-builder generates registration.h next to the binding sources.
        if Path(rel).name == "torch_binding.cpp" or rel == unit.source:
            (root / rel).parent.joinpath("registration.h").write_text(skilldocs.REGISTRATION_H, encoding="utf-8")


def _compile(nvcc: str, source: Path, flags: list[str], archs: tuple[str, ...] = skilldocs.ARCHS) -> None:
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    cmd = [nvcc, "-c", str(source), "-o", str(source.with_suffix(".o")), "-std=c++20", *gencode,
           "-Xcompiler", "-fPIC", "-DCUDA_KERNEL", "-DTORCH_EXTENSION_NAME=_ks_doc_test", *flags]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"nvcc failed ({' '.join(cmd)}):\n{proc.stdout}\n{proc.stderr}")


@pytest.mark.slow
@pytest.mark.parametrize("unit", UNITS, ids=[u.id for u in UNITS])
def test_block_compiles(unit: skilldocs.Unit, tmp_path: Path) -> None:
    nvcc, includes, torch_flags = _toolchain()
    _write_tree(unit, tmp_path)
    source = tmp_path / unit.source
    base = [f"-I{tmp_path}", *includes]
    if source.suffix == ".cu":
        kernel_builder_flags = [f for f in torch_flags if f not in NO_HALF_DEFINES]
        _compile(nvcc, source, base + kernel_builder_flags)
        _compile(nvcc, source, base + torch_flags)
    else:
        _compile(nvcc, source, base)


T4_UNITS = [u for u in UNITS if u.doc.name == "t4-optimization-guide.md"]


@pytest.mark.slow
@pytest.mark.parametrize("unit", T4_UNITS, ids=[u.id for u in T4_UNITS])
def test_t4_guide_blocks_compile_for_sm75(unit: skilldocs.Unit, tmp_path: Path) -> None:
    # The T4 guide claims its bf16 code runs on sm_75: compile it for sm_75 too.
    nvcc, includes, torch_flags = _toolchain()
    _write_tree(unit, tmp_path)
    _compile(nvcc, tmp_path / unit.source, [f"-I{tmp_path}", *includes, *torch_flags], archs=("75",))


BLACKWELL_UNITS = [u for u in UNITS if u.doc.name == "blackwell-guide.md"]


@pytest.mark.slow
@pytest.mark.parametrize("archs", [("100", "120"), ("100a", "120a")], ids=["sm_100-sm_120", "sm_100a-sm_120a"])
@pytest.mark.parametrize("unit", BLACKWELL_UNITS, ids=[u.id for u in BLACKWELL_UNITS])
def test_blackwell_guide_blocks_compile_for_blackwell(unit: skilldocs.Unit, archs: tuple[str, ...],
                                                      tmp_path: Path) -> None:
    # The guide's code is for sm_100/sm_120: compile it for those targets (and their `a`
    # variants, which the guide names) as well as for the default sm_80/sm_90 above.
    nvcc, includes, torch_flags = _toolchain()
    _write_tree(unit, tmp_path)
    _compile(nvcc, tmp_path / unit.source, [f"-I{tmp_path}", *includes, *torch_flags], archs=archs)


def test_there_are_compiled_blocks() -> None:
    # The GPU guides' code must compile: losing their blocks (e.g. a fence typo) must fail loudly.
    # kernel-templates.md shows fragments of the scaffold, compiled as projects by tests/kernel_project.
    docs = {u.doc.name for u in UNITS}
    assert {"a100-optimization-guide.md", "h100-optimization-guide.md", "t4-optimization-guide.md",
            "blackwell-guide.md"} <= docs, sorted(docs)


def test_every_header_block_is_included_somewhere() -> None:
    units_text = "\n".join(text for u in UNITS for rel, text in u.files if rel.endswith((".cu", ".cpp", ".h", ".cuh")))
    for block in skilldocs.header_blocks():
        name = Path(block.file_path).name
        assert f'{name}"' in units_text, f"{block.where}: header {block.file_path} is never included"


def test_code_fences_have_a_language() -> None:
    unlabeled = [b.where for b in skilldocs.all_blocks() if not b.lang]
    assert not unlabeled, f"code fences without a language: {unlabeled}"


@pytest.mark.parametrize("block", PY_BLOCKS, ids=[b.where for b in PY_BLOCKS])
def test_python_block_parses(block: skilldocs.Block) -> None:
    try:
        ast.parse(block.text)
    except SyntaxError as err:
        pytest.fail(f"{block.where}: {err}")
