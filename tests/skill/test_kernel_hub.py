"""The Kernel Hub facts in the references hold for the installed kernels package: every
build.toml block parses with kernels' own parser, the documented calls bind, the python-depends
allowlist is what the guide says, and the CPU self-check of huggingface_kernels_example.py
loads a Hub-layout kernel and kernelizes a tiny model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import skilldocs

HUB_GUIDE = skilldocs.SKILL / "references" / "huggingface-kernels-integration.md"
TOML_BLOCKS = [b for b in skilldocs.all_blocks() if b.lang == "toml" and "[general]" in b.text]


@pytest.mark.parametrize("block", TOML_BLOCKS, ids=[b.where for b in TOML_BLOCKS])
def test_build_toml_blocks_parse_with_the_kernels_parser(block: skilldocs.Block, tmp_path: Path) -> None:
    rust = pytest.importorskip("kernels._rust")
    (tmp_path / "build.toml").write_text(block.text, encoding="utf-8")
    build = rust.Build.open(tmp_path)
    assert rust.Backend.CUDA in build.general.backends


@pytest.mark.parametrize("example", ["qwen3_8b", "ltx_video"])
def test_example_build_toml_is_read_as_edition_5_without_upgrade(example: str) -> None:
    # The parser upgrades an older file in memory and says so ("legacy v4 format"); the
    # examples an agent copies must already be in the format the guide calls current.
    pytest.importorskip("kernels._rust")
    project = skilldocs.SKILL / "examples" / example
    result = subprocess.run(
        [sys.executable, "-c", "import sys, kernels._rust as r; r.Build.open(sys.argv[1])", str(project)],
        capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "legacy" not in result.stdout + result.stderr, result.stdout + result.stderr


def test_legacy_build_toml_without_version_is_rejected(tmp_path: Path) -> None:
    # The guide says a build.toml without `version` is an unsupported legacy format.
    rust = pytest.importorskip("kernels._rust")
    (tmp_path / "build.toml").write_text(
        '[general]\nname = "x-y"\nbackends = ["cuda"]\n\n[torch]\nsrc = ["a.cpp"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match="legacy"):
        rust.Build.open(tmp_path)


def test_python_depends_allowlist_matches_the_guide() -> None:
    kernels = pytest.importorskip("kernels")
    data = json.loads((Path(kernels.__file__).parent / "python_depends.json").read_text(encoding="utf-8"))
    text = HUB_GUIDE.read_text(encoding="utf-8")
    assert sorted(data["general"]) == ["einops", "helion", "tvm-ffi"]
    assert sorted(data["backends"]["cuda"]) == ["nvidia-cutlass-dsl"]
    for name in [*data["general"], *data["backends"]["cuda"]]:
        assert f"`{name}`" in text


def test_versions_are_required_and_trust_is_enforced() -> None:
    kernels = pytest.importorskip("kernels")
    with pytest.raises(ValueError, match="version or revision"):
        kernels.get_kernel("kernels-community/activation")  # fails before any network access
    with pytest.raises(ValueError):
        kernels.LayerRepository("org/name", layer_name="RMSNorm")
    from kernels.hf_hub import _check_trust_remote_code

    _check_trust_remote_code("someone/x", local_files_only=False, trust_remote_code=["someone/x"])  # allowlisted
    _check_trust_remote_code("someone/x", local_files_only=False, trust_remote_code=True)


def test_transformers_and_diffusers_calls_named_in_the_references_bind() -> None:
    import inspect

    transformers = pytest.importorskip("transformers")
    diffusers = pytest.importorskip("diffusers")
    from diffusers.models.transformers import transformer_ltx

    inspect.signature(transformers.KernelConfig).bind(kernel_mapping={}, use_local_kernel=True)
    inspect.signature(transformer_ltx.apply_rotary_emb).bind("x", ("cos", "sin"))
    inspect.signature(transformer_ltx.LTXVideoAttnProcessor.__call__).bind(
        None, "attn", "hidden_states", image_rotary_emb=None)
    assert hasattr(transformer_ltx.LTXAttention, "set_processor")
    inspect.signature(diffusers.models.normalization.RMSNorm).bind(2048, eps=1e-6, elementwise_affine=False)
    import torch

    inspect.signature(torch.nn.RMSNorm).bind(2048, eps=None)
    inspect.signature(torch.library.register_fake).bind("ns::op")


@pytest.mark.slow
def test_huggingface_kernels_example_check_runs(tmp_path: Path) -> None:
    pytest.importorskip("kernels")
    pytest.importorskip("transformers")
    out = tmp_path / "hub.json"
    script = skilldocs.SKILL / "scripts" / "huggingface_kernels_example.py"
    proc = subprocess.run([sys.executable, str(script), "--check", "--out", str(out)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["patched"] == report["rmsnorm_modules"] == report["kernel_calls_per_forward"] > 0
    assert report["logits_rel_err"] <= report["tolerance"]
    assert "get_locked_kernel" in report["api_calls_bound"]


def test_huggingface_kernels_example_usage_errors() -> None:
    script = skilldocs.SKILL / "scripts" / "huggingface_kernels_example.py"
    no_source = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert no_source.returncode == 2
    no_version = subprocess.run([sys.executable, str(script), "--repo-id", "org/name"], capture_output=True,
                                text=True, timeout=60)
    assert no_version.returncode == 2 and "--version" in no_version.stderr
