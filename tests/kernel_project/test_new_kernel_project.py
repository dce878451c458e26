"""new_kernel_project.py writes a complete kernel-builder project, and nothing of the user's is lost."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_project_helpers import NEW_PROJECT, run_script

import build_local
import new_kernel_project

tomllib = pytest.importorskip("tomllib")

EXPECTED_FILES = {
    "build.toml",
    "flake.nix",
    ".gitignore",
    "README.md",
    "kernel_src/{op}.cu",
    "kernel_src/launchers.h",
    "kernel_src/common.cuh",
    "kernel_src/dtype.h",
    "tests/kernel_checks.py",
    "torch-ext/torch_binding.h",
    "torch-ext/torch_binding.cpp",
    "torch-ext/{pkg}/__init__.py",
    "torch-ext/{pkg}/reference.py",
    "tests/conftest.py",
    "tests/test_{op}.py",
    "benchmarks/benchmark_{op}.py",
    "benchmarks/triton_peer.py",
    "benchmarks/benchmarking.py",
    "torch-ext/{pkg}/_fake.py",
    "tests/test_triton_peer.py",
    "tests/test_{op}_emulated.py",
    "tests/emulation.py",
    "tests/test_kernel_resources.py",
}


def assert_current_build_format(project: Path) -> None:
    """kernels' own parser reads the file as edition 5, without its legacy-upgrade warning."""
    pytest.importorskip("kernels._rust")
    result = subprocess.run(
        [sys.executable, "-c", "import sys, kernels._rust as r; r.Build.open(sys.argv[1])", str(project)],
        capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "legacy" not in result.stdout + result.stderr, result.stdout + result.stderr


@pytest.mark.parametrize("op", sorted(new_kernel_project.OPS))
def test_scaffold_build_toml_upgraded_to_edition_6_reads_the_same(tmp_path: Path, op: str) -> None:
    # A current kernel-builder's Nix build needs edition 6 (`kernel-builder update-build`: the
    # edition, and `language = "cpp-cuda"` in place of `backend = "cuda"`). Both kernels'
    # parser (where it knows edition 6) and build_local must read the upgraded file as is.
    assert run_script(NEW_PROJECT, "my-kernel", "--op", op, "--out", tmp_path).returncode == 0
    project = tmp_path / "my-kernel"
    text = (project / "build.toml").read_text()
    assert text.count("\nedition = 5\n") == 1 and text.count('\nbackend = "cuda"\n') == 1
    before = build_local.parse_build_toml(tomllib.loads(text), project)
    text = text.replace("\nedition = 5\n", "\nedition = 6\n").replace('\nbackend = "cuda"\n', '\nlanguage = "cpp-cuda"\n')
    (project / "build.toml").write_text(text)
    assert build_local.parse_build_toml(tomllib.loads(text), project) == before
    pytest.importorskip("kernels._rust")
    result = subprocess.run(
        [sys.executable, "-c", "import sys, kernels._rust as r; r.Build.open(sys.argv[1])", str(project)],
        capture_output=True, text=True, check=False)
    if "unsupported build edition 6" in result.stderr:  # kernels 0.17.2: edition 5 is its newest
        return
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == ""  # no upgrade, no warning


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("op", sorted(new_kernel_project.OPS))
def test_scaffold_writes_the_whole_project(tmp_path: Path, op: str) -> None:
    result = run_script(NEW_PROJECT, "my-kernel", "--op", op, "--capabilities", "9.0,8.0", "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    project = tmp_path / "my-kernel"
    # rmsnorm also ships the Hub layer kernelize swaps in for transformers' RMSNorm.
    hub_layer = {"torch-ext/my_kernel/layers.py"} if op == "rmsnorm" else set()
    assert files_under(project) == {f.format(op=op, pkg="my_kernel") for f in EXPECTED_FILES} | hub_layer
    assert "build_local.py" in result.stdout and str(project) in result.stdout

    config = tomllib.loads((project / "build.toml").read_text())
    assert config["general"]["name"] == "my-kernel" and config["general"]["backends"] == ["cuda"]
    assert config["general"]["license"] and config["general"]["version"] == 1
    kernel = config["kernel"][op]
    assert kernel["backend"] == "cuda" and kernel["depends"] == ["torch"]
    assert kernel["cuda-capabilities"] == ["8.0", "9.0"]
    spec = build_local.load_project(project)  # the local builder accepts it as is
    assert spec.package == "my_kernel" and [k.name for k in spec.kernels] == [op]
    assert_current_build_format(project)

    flake = (project / "flake.nix").read_text()
    assert 'kernel-builder.url = "github:huggingface/kernels"' in flake and "genKernelFlakeOutputs" in flake

    binding = (project / "torch-ext" / "torch_binding.cpp").read_text()
    assert "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)" in binding
    assert "REGISTER_EXTENSION(TORCH_EXTENSION_NAME)" in binding
    assert build_local.parse_binding_ops(binding), "the binding declares no ops"

    init = (project / "torch-ext" / "my_kernel" / "__init__.py").read_text()
    assert "from ._ops import ops" in init and 'register_fake("' in init
    fake = (project / "torch-ext" / "my_kernel" / "_fake.py").read_text()  # the namespace prefix is added there
    assert "from ._ops import add_op_namespace_prefix" in fake
    assert "torch.library.register_fake(qualname, fake, allow_override=True)" in fake

    for path in project.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert not new_kernel_project.TOKEN_RE.search(text), f"unfilled placeholder in {path}"
            if path.suffix == ".py":
                ast.parse(text, filename=str(path))


@pytest.mark.parametrize("op", sorted(new_kernel_project.OPS))
def test_an_op_folder_holds_its_kernel_its_binding_and_one_project_md(op: str) -> None:
    # What every op shares lives once, in common/; project.md holds the op's Python files
    # and the values of the README's slots.
    folder = new_kernel_project.TEMPLATE_DIR / op
    assert {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} == {
        f"kernel_src/{op}.cu", "kernel_src/launchers.h", "torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h",
        "project.md"}
    readme = new_kernel_project.render(op, "my-kernel")[Path("README.md")]
    assert "<!-- op:" not in readme and f"tests/test_{op}_emulated.py" in readme


@pytest.mark.parametrize(("old", "new", "message"), [
    ("<!-- op: usage -->\n", "<!-- op: usage_typo -->\n", "fills slots"),
    ("\n~~~\n\n## tests/test_glu.py", "\n\n## tests/test_glu.py", "closing fence"),
    ("@@sanitizer_test\n", "@@sanitizer_tset\n", "has no `## @sanitizer_tset`"),
])
def test_a_broken_project_md_is_a_template_bug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str,
                                               message: str) -> None:
    template = tmp_path / "template"
    shutil.copytree(new_kernel_project.TEMPLATE_DIR, template)
    bundle = template / "glu" / "project.md"
    assert bundle.read_text().count(old) == 1
    bundle.write_text(bundle.read_text().replace(old, new))
    monkeypatch.setattr(new_kernel_project, "TEMPLATE_DIR", template)
    with pytest.raises(new_kernel_project.ScaffoldError, match=f"template bug: .*{message}"):
        new_kernel_project.render("glu", "my-kernel")


@pytest.mark.parametrize("op", sorted(new_kernel_project.OPS))
def test_generated_kernel_follows_the_hard_rules(tmp_path: Path, op: str) -> None:
    run_script(NEW_PROJECT, "rules", "--op", op, "--out", tmp_path)
    src = tmp_path / "rules" / "kernel_src"
    cu = (src / f"{op}.cu").read_text()
    kernel_files = {p.name: p.read_text() for p in src.iterdir()}
    for name, text in kernel_files.items():  # torch-free: CUDA headers only
        includes = re.findall(r'#include\s*[<"]([^>"]+)[>"]', text)
        assert not [i for i in includes if i.split("/")[0] in ("ATen", "c10", "torch")], (name, includes)
    launches = [m.end() for m in re.finditer(r"<<<", cu)]
    assert launches, "no kernel launches found"
    for at in launches:  # every launch is checked before the launcher can return
        check = cu.find("cudaGetLastError()", at)
        ret = cu.find("return", at)
        assert check != -1 and (ret == -1 or check <= ret + len("return ")), f"unchecked launch at offset {at}"
        assert cu[at : cu.find(">>>", at)].rstrip().endswith("stream"), "launch not on the caller's stream"
    # the bounds may be calls (max_threads<VPT, kAligned>()): one level of nested parentheses
    kernels = re.findall(r"__global__\s+void\s+(__launch_bounds__\((?:[^()]|\([^()]*\))*\)\s+)?(\w+)", cu)
    assert kernels and all(bounds for bounds, _ in kernels), f"kernels without __launch_bounds__: {kernels}"
    assert "int64_t" in cu and "split_row(" in cu and "dispatch_dtype(" in cu
    common = kernel_files["common.cuh"]
    assert "__syncthreads();  // the leading barrier" in common  # the one barrier discipline
    binding = (tmp_path / "rules" / "torch-ext" / "torch_binding.cpp").read_text()
    assert '#include "../kernel_src/launchers.h"' in binding
    assert "c10::cuda::getCurrentCUDAStream()" in binding and "CUDAGuard" in binding
    assert "numel() == 0" in binding and "cudaGetErrorString" in binding
    for dtype in ("at::kFloat", "at::kHalf", "at::kBFloat16"):
        assert dtype in binding


def test_capabilities_are_left_to_kernel_builder_by_default(tmp_path: Path) -> None:
    # Unset cuda-capabilities = kernel-builder's whole default list, the variants the Hub expects.
    result = run_script(NEW_PROJECT, "defaults", "--op", "rmsnorm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "defaults" / "build.toml").read_text()
    assert "cuda-capabilities" not in tomllib.loads(text)["kernel"]["rmsnorm"]
    assert "7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 11.0, 12.0, 12.1+PTX" in text  # the comment names the list


def test_hub_repo_is_left_commented_out_by_default(tmp_path: Path) -> None:
    assert run_script(NEW_PROJECT, "no-hub", "--op", "rmsnorm", "--out", tmp_path).returncode == 0
    text = (tmp_path / "no-hub" / "build.toml").read_text()
    assert "hub" not in tomllib.loads(text)["general"]
    assert '# repo-id = "your-org/no-hub"' in text
    assert 'get_kernel("your-org/no-hub", version=1)' in (tmp_path / "no-hub" / "README.md").read_text()


def test_hub_repo_names_the_upload_target_in_build_toml_and_readme(tmp_path: Path) -> None:
    result = run_script(NEW_PROJECT, "to-hub", "--op", "glu", "--hub-repo", "my-org/fast_glu.v2", "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    config = tomllib.loads((tmp_path / "to-hub" / "build.toml").read_text())
    assert config["general"]["hub"] == {"repo-id": "my-org/fast_glu.v2"}
    assert config["general"]["name"] == "to-hub"
    assert 'get_kernel("my-org/fast_glu.v2", version=1)' in (tmp_path / "to-hub" / "README.md").read_text()


@pytest.mark.parametrize("repo", ["no-slash", "a/b/c", "org/", "/name", "org/-lead", "org/trail.", "org/dou--ble",
                                  "org/do..ts", "org/sp ace", "org/" + "x" * 93, 'org/quo"te'])
def test_a_bad_hub_repo_is_a_usage_error_and_writes_nothing(tmp_path: Path, repo: str) -> None:
    result = run_script(NEW_PROJECT, "ok-name", "--op", "rmsnorm", "--hub-repo", repo, "--out", tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("new_kernel_project: error: invalid --hub-repo") and result.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_scaffold_and_build_local_quote_the_same_kernel_builder_list() -> None:
    quoted = [c.removesuffix("+PTX") for c in new_kernel_project.DEFAULT_KERNEL_BUILDER_CAPABILITIES]
    assert tuple(quoted) == build_local.DEFAULT_CAPABILITIES_CUDA13
    assert new_kernel_project.DEFAULT_KERNEL_BUILDER_CAPABILITIES[-1] == "12.1+PTX"


def test_help_says_capabilities_default_to_unset() -> None:
    result = run_script(NEW_PROJECT, "--help")
    assert result.returncode == 0
    assert "default: unset" in " ".join(result.stdout.split())


def test_refuses_a_non_empty_directory_and_changes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "taken"
    project.mkdir()
    (project / "notes.txt").write_text("mine")
    result = run_script(NEW_PROJECT, "taken", "--op", "rmsnorm", "--out", tmp_path)
    assert result.returncode == 1
    assert "not empty" in result.stderr and "--force" in result.stderr
    assert files_under(project) == {"notes.txt"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"], "left a staging directory behind"


def test_an_empty_existing_directory_is_fine(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert run_script(NEW_PROJECT, "empty", "--op", "rmsnorm", "--out", tmp_path).returncode == 0
    assert (tmp_path / "empty" / "build.toml").is_file()


def test_force_overwrites_template_files_and_keeps_the_users(tmp_path: Path) -> None:
    project = tmp_path / "again"
    assert run_script(NEW_PROJECT, "again", "--op", "rmsnorm", "--out", tmp_path).returncode == 0
    (project / "build.toml").write_text("edited")
    (project / "kernel_src" / "extra.cuh").write_text("// mine")
    result = run_script(NEW_PROJECT, "again", "--op", "rmsnorm", "--out", tmp_path, "--force")
    assert result.returncode == 0, result.stderr
    assert "overwrote" in result.stdout and "build.toml" in result.stdout
    assert (project / "build.toml").read_text().startswith("#")
    assert (project / "kernel_src" / "extra.cuh").read_text() == "// mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again"]


@pytest.mark.parametrize(
    "name",
    ["My-Kernel", "my kernel", "-lead", "trail-", "double--dash", "9lives", "torch", "json", "class", "kernels",
     "a" * 65, "dots.in.name"],
)
def test_bad_names_are_usage_errors(tmp_path: Path, name: str) -> None:
    result = run_script(NEW_PROJECT, "--op", "rmsnorm", "--out", tmp_path, "--", name)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("new_kernel_project: error:")
    assert list(tmp_path.iterdir()) == []


def test_force_refuses_a_project_of_another_op_and_changes_nothing(tmp_path: Path) -> None:
    # --force overwrites this template's files only: over a glu project, an rmsnorm scaffold
    # would leave kernel_src/glu.cu and tests/test_glu.py beside the new files, and the
    # project's own tests would fail against the new kernel.
    assert run_script(NEW_PROJECT, "mixed", "--op", "glu", "--out", tmp_path).returncode == 0
    before = {p: p.read_bytes() for p in (tmp_path / "mixed").rglob("*") if p.is_file()}
    result = run_script(NEW_PROJECT, "mixed", "--op", "rmsnorm", "--out", tmp_path, "--force")
    assert result.returncode == 1
    assert "scaffolded with another --op" in result.stderr and "kernel_src/glu.cu" in result.stderr
    assert {p: p.read_bytes() for p in (tmp_path / "mixed").rglob("*") if p.is_file()} == before


def test_capabilities_older_than_7_5_are_usage_errors(tmp_path: Path) -> None:
    result = run_script(NEW_PROJECT, "old-gpu", "--op", "glu", "--capabilities", "5.0,9.0", "--out", tmp_path)
    assert result.returncode == 2 and "5.0 is below 7.5" in result.stderr
    assert list(tmp_path.iterdir()) == []
    assert run_script(NEW_PROJECT, "turing", "--op", "glu", "--capabilities", "7.5", "--out", tmp_path).returncode == 0


def test_out_that_is_a_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("x")
    result = run_script(NEW_PROJECT, "ok-name", "--op", "glu", "--out", tmp_path / "notes.md")
    assert result.returncode == 2
    assert result.stderr.strip() == f"new_kernel_project: error: --out {tmp_path / 'notes.md'} is a file, not a directory; " \
                                    "give the folder the project goes into"


def test_next_steps_say_when_to_pass_arch(tmp_path: Path) -> None:
    result = run_script(NEW_PROJECT, "hints", "--op", "glu", "--out", tmp_path)
    assert result.returncode == 0
    assert "add --arch 9.0 to both build_local.py calls" in result.stdout


@pytest.mark.parametrize("caps", ["", "nine", "9", "8.0,x", "9.0b"])
def test_bad_capabilities_are_usage_errors(tmp_path: Path, caps: str) -> None:
    result = run_script(NEW_PROJECT, "ok-name", "--op", "rmsnorm", "--capabilities", caps, "--out", tmp_path)
    assert result.returncode == 2 and "--capabilities" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_unknown_op_is_a_usage_error(tmp_path: Path) -> None:
    result = run_script(NEW_PROJECT, "ok-name", "--op", "softmax", "--out", tmp_path)
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_out_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file-name").write_text("x")
    result = run_script(NEW_PROJECT, "file-name", "--op", "rmsnorm", "--out", tmp_path)
    assert result.returncode == 1 and "not a directory" in result.stderr


def test_scaffold_needs_only_the_standard_library(tmp_path: Path) -> None:
    # `python -S -I`: no site-packages, so torch and friends are unavailable.
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-S", "-I", str(NEW_PROJECT), "stdlib-only", "--op", "rmsnorm", "--out", str(tmp_path)],
        capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")},
    )
    assert out.returncode == 0, out.stderr


def test_a_default_scaffold_builds_for_kernel_builders_list_or_the_requested_arch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With cuda-capabilities unset, build_local (like kernel-builder) compiles the whole default
    # list when it has no GPU and no --arch, and exactly --arch when given.
    plan = new_kernel_project.plan_project("all-archs", "rmsnorm", None, tmp_path, force=False)
    new_kernel_project.write_project(plan)
    spec = build_local.load_project(plan.target)
    assert [k.capabilities for k in spec.kernels] == [None]
    cuda13 = {"7.5", "8.0", "8.6", "8.7", "8.8", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"}
    tools = build_local.Toolchain(
        cuda_home=tmp_path / "cuda", nvcc=tmp_path / "cuda/bin/nvcc", cxx="c++", ninja="ninja",
        nvcc_archs=frozenset(cuda13), cuda_version=(13, 0), cxx_std="c++20", torch_version="2.14.1",
        torch_cuda="13.0", torch_include=(), torch_lib=str(tmp_path), python_include=str(tmp_path),
        extra_system_include=(), cxx11_abi=1, nvcc_common=(),
    )
    monkeypatch.setattr(build_local, "_visible_device_archs", list)
    chosen = build_local.choose_archs(spec, None, tools, lambda _msg: None)
    assert chosen == {"rmsnorm": list(build_local.DEFAULT_CAPABILITIES_CUDA13)}
    assert chosen["rmsnorm"][-1] == "12.1"
    assert build_local.choose_archs(spec, ["8.0", "9.0"], tools, lambda _msg: None) == {"rmsnorm": ["8.0", "9.0"]}
