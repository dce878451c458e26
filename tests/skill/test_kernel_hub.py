"""The Kernel Hub facts in the references hold for the installed kernels package: every
build.toml block parses with kernels' own parser, the documented calls bind, the python-depends
allowlist is what the guide says, and the CPU self-check of huggingface_kernels_example.py
loads a Hub-layout kernel and kernelizes a tiny model."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

import skilldocs

HUB_GUIDE = skilldocs.SKILL / "references" / "huggingface-kernels-integration.md"
TOML_BLOCKS = [b for b in skilldocs.all_blocks() if b.lang == "toml" and "[general]" in b.text]


def kernels_module(name: str) -> ModuleType:
    """A module of the installed kernels by its short name: kernels 0.19 moved them from
    `kernels.<name>` (0.17.2) to `kernels._internals.<name>`."""
    pytest.importorskip("kernels")
    for prefix in ("kernels._internals.", "kernels."):
        try:
            return importlib.import_module(prefix + name)
        except ModuleNotFoundError:
            continue
    raise AssertionError(f"the installed kernels has neither kernels._internals.{name} nor kernels.{name}")


@pytest.mark.parametrize("block", TOML_BLOCKS, ids=[b.where for b in TOML_BLOCKS])
def test_build_toml_blocks_parse_with_the_kernels_parser(block: skilldocs.Block, tmp_path: Path) -> None:
    rust = pytest.importorskip("kernels._rust")
    (tmp_path / "build.toml").write_text(block.text, encoding="utf-8")
    build = rust.Build.open(tmp_path)
    assert rust.Backend.CUDA in build.general.backends


def reads_edition_6(tmp_path: Path) -> bool:
    """Whether the installed parser knows edition 6 (kernels 0.19), where a kernel is tagged
    `language = "cpp-cuda"` instead of `backend = "cuda"`; 0.17.2 rejects the edition."""
    rust = pytest.importorskip("kernels._rust")
    project = tmp_path / "edition6"
    project.mkdir()
    (project / "build.toml").write_text(
        '[general]\nname = "x-y"\nversion = 1\nedition = 6\nlicense = "apache-2.0"\nbackends = ["cuda"]\n\n'
        '[torch]\nsrc = ["a.cpp"]\n\n[kernel.k]\nlanguage = "cpp-cuda"\ndepends = ["torch"]\nsrc = ["k.cu"]\n',
        encoding="utf-8")
    try:
        rust.Build.open(project)
    except ValueError as exc:
        assert "unsupported build edition 6" in str(exc), exc
        return False
    return True


@pytest.mark.parametrize("example", ["qwen3_8b", "ltx_video"])
def test_example_build_toml_is_edition_5_which_both_kernels_read(example: str, tmp_path: Path) -> None:
    # The guide says: edition 5 is read as is by kernels 0.17.2, and upgraded in memory (with a
    # message) by a parser whose current format is edition 6; never the legacy v4 path.
    pytest.importorskip("kernels._rust")
    project = skilldocs.SKILL / "examples" / example
    result = subprocess.run(
        [sys.executable, "-c", "import sys, kernels._rust as r; r.Build.open(sys.argv[1])", str(project)],
        capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, result.stderr
    assert "legacy" not in output, output
    if reads_edition_6(tmp_path):
        assert "uses the edition 5 format; upgrading to edition 6 in memory" in output, output
    else:
        assert "upgrading" not in output, output


def test_legacy_build_toml_without_version_is_rejected(tmp_path: Path) -> None:
    # The guide says a build.toml without `version` is an unsupported legacy format.
    rust = pytest.importorskip("kernels._rust")
    (tmp_path / "build.toml").write_text(
        '[general]\nname = "x-y"\nbackends = ["cuda"]\n\n[torch]\nsrc = ["a.cpp"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match="legacy"):
        rust.Build.open(tmp_path)


def test_python_depends_allowlist_matches_the_guide() -> None:
    # The list the loader's own check consults (read from python_depends.json next to the module:
    # kernels/ in 0.17.2, kernels/_internals/ in 0.19.1), not a copy of the file.
    python_deps = kernels_module("python_deps")
    data = python_deps._DEPENDENCY_DATA
    text = HUB_GUIDE.read_text(encoding="utf-8")
    assert sorted(data.general) == ["einops", "helion", "tvm-ffi"]
    assert sorted(data.backends["cuda"]) == ["nvidia-cutlass-dsl"]
    for name in [*data.general, *data.backends["cuda"]]:
        assert f"`{name}`" in text
    with pytest.raises(ValueError, match="uses unsupported kernel dependency"):
        python_deps.validate_dependencies("my_rmsnorm", ["numpy"], python_deps._backend())


def test_versions_are_required_and_trust_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    kernels = pytest.importorskip("kernels")
    with pytest.raises(ValueError, match="version or revision"):
        kernels.get_kernel("kernels-community/activation")  # fails before any network access
    with pytest.raises(ValueError):
        kernels.LayerRepository("org/name", layer_name="RMSNorm")
    hf_hub = kernels_module("hf_hub")
    check = hf_hub._check_trust_remote_code
    # The publishers' Hub flags, without the network: the check asks _get_hf_api() for them.
    trusted = {"someone": False, "kernels-community": True}
    api = SimpleNamespace(get_organization_overview=lambda org: SimpleNamespace(trustedKernelPublisher=trusted[org]))
    monkeypatch.setattr(hf_hub, "_get_hf_api", lambda *args, **kwargs: api)
    with pytest.raises(ValueError, match="is not from a trusted publisher"):
        check("someone/x", local_files_only=False, trust_remote_code=False)
    with pytest.raises(ValueError, match="is not from a trusted publisher"):
        check("someone/x", local_files_only=False, trust_remote_code=["someone/other"])
    check("someone/x", local_files_only=False, trust_remote_code=["someone/x"])  # allowlisted
    check("someone/x", local_files_only=False, trust_remote_code=True)
    check("kernels-community/x", local_files_only=False, trust_remote_code=False)


_LOAD_DEMO = r"""
import io, json, logging, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import huggingface_kernels_example as hke
import kernels
from kernels._rust import Digest

root, case = hke.write_demo_kernel(Path(sys.argv[2])), sys.argv[3]
variant = root / "build" / "torch-universal"
meta = kernels.Metadata.read_from_file(variant / "metadata.json")
meta.digest.validate(Digest.hash_variant(meta.digest.algorithm, variant))  # kernels' own comparison
files = sorted(meta.digest.files)
if case == "tampered":
    layers = variant / "demo_rmsnorm" / "layers.py"
    layers.write_text(layers.read_text() + "# edited after the digest\n")
elif case == "no-digest":
    raw = json.loads((variant / "metadata.json").read_text())
    del raw["digest"]
    (variant / "metadata.json").write_text(json.dumps(raw))
log = io.StringIO()
logging.getLogger().addHandler(logging.StreamHandler(log))
try:
    module = kernels.get_local_kernel(root)
    loaded = callable(module.rms_norm) and callable(module.layers.RMSNorm.forward)
except RuntimeError as exc:
    loaded, log = False, io.StringIO(str(exc))
print(json.dumps({"files": files, "loaded": loaded, "log": log.getvalue()}))
"""


@pytest.mark.parametrize("case", ["as-written", "tampered", "no-digest"])
def test_demo_kernel_records_the_digest_kernels_verifies(tmp_path: Path, case: str) -> None:
    # kernels 0.19 checks a local variant's files against metadata.json's digest on every load:
    # a mismatch refuses the kernel, a missing digest only logs a warning. 0.17.2 parses the
    # digest (the script asserts it matches kernels' own hash) and checks nothing on load.
    pytest.importorskip("torch")
    verifies = hasattr(kernels_module("validate"), "DigestValidator")
    proc = subprocess.run([sys.executable, "-c", _LOAD_DEMO, str(skilldocs.SKILL / "scripts"), str(tmp_path / "demo"),
                           case], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["files"] == ["demo_rmsnorm/__init__.py", "demo_rmsnorm/layers.py"]
    no_digest = "does not record a digest" in result["log"]
    if case == "as-written":
        assert result["loaded"] and not no_digest
    elif case == "tampered":
        assert result["loaded"] is not verifies
        assert ("do not match the digest" in result["log"]) is verifies
        if verifies:
            assert "File hash mismatch for demo_rmsnorm/layers.py" in result["log"], result["log"]
    else:
        assert result["loaded"] and no_digest is verifies


def test_a_linked_package_directory_is_outside_kernels_digest(tmp_path: Path) -> None:
    # Why build_local's --hub-layout and kernel_hub.local_repository write no digest: their
    # package is a symlink to the build directory, which kernels' hash does not descend into.
    rust = pytest.importorskip("kernels._rust")
    build = tmp_path / "build" / "pkg"
    build.mkdir(parents=True)
    (build / "__init__.py").write_text("x = 1\n")
    variant = tmp_path / "variant"
    variant.mkdir()
    (variant / "pkg").symlink_to(build, target_is_directory=True)
    (variant / "metadata.json").write_text("{}")
    assert rust.Digest.hash_variant(rust.DigestAlgorithm.SHA256, variant).files == {}
    (variant / "pkg").unlink()
    (variant / "pkg").mkdir()
    (variant / "pkg" / "__init__.py").symlink_to(build / "__init__.py")  # a linked file is hashed
    assert list(rust.Digest.hash_variant(rust.DigestAlgorithm.SHA256, variant).files) == ["pkg/__init__.py"]


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
