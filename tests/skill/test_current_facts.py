"""Facts the skill quotes from other projects stay the facts those projects ship.

kernel-builder's default capability list (quoted by the scaffold, build_local.py and the
Hub and Blackwell guides), and which package's `kernels` command owns `lock` and `download`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
from types import ModuleType

import pytest
import skilldocs

tomllib = pytest.importorskip("tomllib")
REFERENCES = skilldocs.SKILL / "references"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{name}_facts_test", skilldocs.SKILL / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _prose(name: str) -> str:
    return " ".join(skilldocs.strip_code((REFERENCES / name).read_text(encoding="utf-8")).split())


# huggingface/kernels@8ac69fc, kernel-builder/src/pyproject/templates/torch/preamble.cmake:
# set(CUDA_DEFAULT_KERNEL_ARCHS "7.5;8.0;8.6;8.7;8.9;9.0;10.0;11.0;12.0;12.1+PTX") for CUDA >= 13.
KERNEL_BUILDER_CUDA13 = ["7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX"]


def test_the_scaffold_quotes_kernel_builders_cuda13_list() -> None:
    assert list(_load("new_kernel_project").DEFAULT_KERNEL_BUILDER_CAPABILITIES) == KERNEL_BUILDER_CUDA13


def test_hub_guide_quotes_kernel_builders_cuda13_list_with_12_1() -> None:
    guide = "huggingface-kernels-integration.md"
    quoted = ", ".join(KERNEL_BUILDER_CUDA13[:-1]) + ", 12.1+PTX"
    assert quoted in _prose(guide), f"{guide} does not quote kernel-builder's list: {quoted}"
    assert "preamble.cmake" in _prose(guide)


def test_a100_guide_points_to_the_list_instead_of_repeating_it() -> None:
    # The list lives once, in the Hub guide; the A100 guide links there (a second copy would drift).
    text = (REFERENCES / "a100-optimization-guide.md").read_text(encoding="utf-8")
    assert "huggingface-kernels-integration.md#compiler-flags-kernel-builder-uses" in text


def test_hub_guide_says_whose_kernels_lock_and_download_are() -> None:
    text = _prose("huggingface-kernels-integration.md")
    assert "`kernels lock` and `kernels download` are subcommands of Hugging Face's `kernels` package" in text
    assert "Use `kernel-skills skills ...` for ours; `kernels lock`/`download` are Hugging Face's." in text


def test_kernel_skills_installs_both_script_names() -> None:
    pyproject = tomllib.loads((skilldocs.REPO / "pyproject.toml").read_text(encoding="utf-8"))
    scripts = pyproject["project"]["scripts"]
    assert scripts["kernels"] == scripts["kernel-skills"]


def test_hugging_faces_kernels_command_has_lock_and_download() -> None:
    try:
        dist = importlib.metadata.distribution("kernels")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("Hugging Face's kernels package is not installed")
    (entry,) = [e for e in dist.entry_points if e.group == "console_scripts" and e.name == "kernels"]
    module, func = entry.value.split(":")
    code = f"import sys; sys.argv = ['kernels', '--help']; from {module} import {func}; {func}()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "lock" in proc.stdout and "download" in proc.stdout and "skills" not in proc.stdout


def test_blackwell_guide_quotes_kernel_builders_lists_for_cuda_12_8_and_13() -> None:
    text = _prose("blackwell-guide.md")
    assert "7.0 ... 10.0, 10.1, 12.0+PTX" in text and "7.5 ... 10.0, 11.0, 12.0, 12.1+PTX" in text
    assert "CUDA 12.8" in text


def test_installed_nvcc_lists_the_blackwell_targets_the_guide_names() -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    proc = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    listed = set(proc.stdout.split())
    assert {"compute_100", "compute_120"} <= listed
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    if "release 13.0" in version:  # the list the guide quotes for CUDA 13.0
        assert {"compute_100", "compute_103", "compute_110", "compute_120", "compute_121"} <= listed


def test_build_local_takes_10_0a_and_lets_it_replace_10_0_as_the_guide_says() -> None:
    build_local = _load("build_local")
    assert build_local.normalize_arch("10.0a") == "10.0a"
    assert build_local.loose_intersection(("10.0", "10.0a"), ["10.0"]) == ["10.0a"]
    assert build_local.gencode_flags(["10.0a", "12.0"]) == [
        "-gencode=arch=compute_100a,code=sm_100a", "-gencode=arch=compute_120,code=sm_120"]
