"""build_local.py's pure parts: build.toml, architectures, the binding's op declarations."""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path

import pytest
from kernel_project_helpers import BUILD_LOCAL, run_script

import build_local
from build_local import BuildError, OpDecl


def toml(**overrides: object) -> dict:
    data: dict = {
        "general": {"name": "my-norm", "backends": ["cuda"], "license": "Apache-2.0", "version": 1},
        "torch": {"src": ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]},
        "kernel": {
            "rmsnorm": {
                "backend": "cuda",
                "depends": ["torch"],
                "src": ["kernel_src/rmsnorm.cu"],
                "cuda-capabilities": ["8.0", "9.0"],
            }
        },
    }
    data.update(overrides)
    return data


# ----------------------------------------------------------------------------- build.toml


def test_current_schema_is_read() -> None:
    spec = build_local.parse_build_toml(toml(), Path("/p"))
    assert spec.name == "my-norm" and spec.package == "my_norm"
    assert spec.torch_src == ("torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h")
    assert spec.pyext == ("py", "pyi")
    (kernel,) = spec.kernels
    assert kernel.name == "rmsnorm" and kernel.capabilities == ("8.0", "9.0")
    assert spec.python_dir == Path("/p/torch-ext/my_norm")


def test_kernel_flags_includes_and_other_backends() -> None:
    data = toml()
    data["kernel"]["rmsnorm"].update({"include": ["kernel_src"], "cuda-flags": ["-Xptxas=-v"], "cxx-flags": ["-Wall"]})
    data["kernel"]["rmsnorm_metal"] = {"backend": "metal", "depends": ["torch"], "src": ["m/relu.mm"]}
    spec = build_local.parse_build_toml(data, Path("/p"))
    (kernel,) = spec.kernels
    assert kernel.include == ("kernel_src",) and kernel.cuda_flags == ("-Xptxas=-v",) and kernel.cxx_flags == ("-Wall",)
    assert spec.skipped_kernels == ("rmsnorm_metal (metal)",)


def test_older_schema_without_backend_keys_means_cuda() -> None:
    data = toml(general={"name": "legacy"})
    del data["kernel"]["rmsnorm"]["backend"]
    spec = build_local.parse_build_toml(data, Path("/p"))
    assert [k.name for k in spec.kernels] == ["rmsnorm"]


def test_edition_6_language_keys_pick_the_cuda_kernels() -> None:
    # Current kernel-builder's Nix build requires edition 6 (`kernel-builder update-build`
    # rewrites an edition 5 file), which names each kernel's language instead of a backend.
    data = toml()
    data["general"]["edition"] = 6
    del data["kernel"]["rmsnorm"]["backend"]
    data["kernel"]["rmsnorm"]["language"] = "cpp-cuda"
    data["kernel"]["rmsnorm_rocm"] = {"language": "cpp-rocm", "depends": ["torch"], "src": ["r/rmsnorm.hip"]}
    spec = build_local.parse_build_toml(data, Path("/p"))
    assert [k.name for k in spec.kernels] == ["rmsnorm"] and spec.kernels[0].capabilities == ("8.0", "9.0")
    assert spec.skipped_kernels == ("rmsnorm_rocm (cpp-rocm)",)
    data["kernel"]["rmsnorm"]["language"] = "cpp-metal"
    with pytest.raises(BuildError, match='language = "cpp-cuda"'):
        build_local.parse_build_toml(data, Path("/p"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("general"), r"\[general\] needs name"),
        (lambda d: d["general"].update(name="bad name"), "not a valid kernel name"),
        (lambda d: d["general"].update(name="1abc"), "not a valid kernel name"),
        (lambda d: d["general"].update(backends=["rocm"]), 'does not include "cuda"'),
        (lambda d: d.pop("torch"), r"missing \[torch\]"),
        (lambda d: d["torch"].update(src=[]), r"\[torch\] src is empty"),
        (lambda d: d["kernel"]["rmsnorm"].update(depends=["torch", "cutlass_3_8"]), "cutlass_3_8"),
        (lambda d: d["kernel"]["rmsnorm"].update(src="kernel_src/rmsnorm.cu"), "must be a list of strings"),
        (lambda d: d["kernel"]["rmsnorm"].update(backend="rocm"), "no \\[kernel.<name>\\] section"),
        (lambda d: d["kernel"]["rmsnorm"].update({"cuda-capabilities": ["nine"]}), "unrecognised CUDA architecture"),
    ],
)
def test_invalid_build_toml_is_rejected_with_the_reason(change, message: str) -> None:
    data = toml()
    change(data)
    with pytest.raises(BuildError, match=message):
        build_local.parse_build_toml(data, Path("/p"))


def test_missing_project_and_missing_sources_are_reported(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="not a directory") as exc:
        build_local.load_project(tmp_path / "nope")
    assert exc.value.exit_code == 2
    with pytest.raises(BuildError, match="no build.toml"):
        build_local.load_project(tmp_path)
    (tmp_path / "build.toml").write_text(
        '[general]\nname = "x"\nbackends = ["cuda"]\n[torch]\nsrc = ["torch-ext/b.cpp"]\n'
        '[kernel.k]\nbackend = "cuda"\ndepends = ["torch"]\nsrc = ["k.cu"]\n'
    )
    with pytest.raises(BuildError, match="do not exist: torch-ext/b.cpp, k.cu"):
        build_local.load_project(tmp_path)
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "torch-ext").mkdir()
    (tmp_path / "torch-ext" / "b.cpp").write_text("")
    with pytest.raises(BuildError, match="missing torch-ext/x/__init__.py"):
        build_local.load_project(tmp_path)
    (tmp_path / "build.toml").write_text("[general\n")
    with pytest.raises(BuildError, match="invalid TOML"):
        build_local.load_project(tmp_path)


# -------------------------------------------------------------------------- architectures


@pytest.mark.parametrize(
    ("given", "canonical"),
    [("9.0", "9.0"), ("90", "9.0"), ("sm_90", "9.0"), ("sm_90a", "9.0a"), ("compute_80", "8.0"),
     ("100", "10.0"), ("12.0+PTX", "12.0+PTX"), ("10.0f", "10.0f")],
)
def test_architectures_are_normalised(given: str, canonical: str) -> None:
    assert build_local.normalize_arch(given) == canonical


@pytest.mark.parametrize("bad", ["9", "nine", "9.x", "sm9", "9.0b", ""])
def test_bad_architectures_are_usage_errors(bad: str) -> None:
    with pytest.raises(BuildError) as exc:
        build_local.normalize_arch(bad)
    assert exc.value.exit_code == 2


@pytest.mark.parametrize(
    ("caps", "targets", "expected"),
    [
        # Highest listed capability <= target within the same major version.
        (["7.5", "8.0", "8.6", "9.0"], ["8.0", "8.9", "9.0"], ["8.0", "8.6", "9.0"]),
        # An arch-specific 9.0a replaces the plain 9.0 target.
        (["7.5", "8.0", "8.6", "9.0", "9.0a"], ["8.0", "8.9", "9.0"], ["8.0", "8.6", "9.0a"]),
        # SASS does not cross major versions ...
        (["8.0"], ["9.0"], []),
        # ... but PTX does (JIT).
        (["8.0+PTX"], ["9.0"], ["8.0+PTX"]),
        (["9.0"], ["8.0", "9.0"], ["9.0"]),
        (["8.0", "9.0", "10.0", "12.0"], ["8.0", "9.0"], ["8.0", "9.0"]),
    ],
)
def test_loose_intersection_follows_kernel_builder(caps: list[str], targets: list[str], expected: list[str]) -> None:
    assert build_local.loose_intersection(caps, targets) == expected


def test_gencode_flags() -> None:
    assert build_local.gencode_flags(["8.0", "9.0a", "12.0+PTX"]) == [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90a,code=sm_90a",
        "-gencode=arch=compute_120,code=sm_120",
        "-gencode=arch=compute_120,code=compute_120",
    ]


# ----------------------------------------------------------------------- binding parsing

BINDING = r'''
#include "registration.h"
// ops.def("commented_out(Tensor x) -> Tensor");
/* ops.def("also_commented(Tensor x) -> Tensor"); */
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, m) {
  m.def("rms_norm(Tensor input, Tensor? weight, float epsilon) -> Tensor");
  m.def("fused_add(Tensor! out, Tensor x, "
        "Tensor y) -> ()");
  m.def("scale.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("inferred", &inferred);
  m.impl("rms_norm", torch::kCUDA, &rms_norm);  // braces in strings: "{"
  const char* s = "}";
}
TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, m) { m.def("not_a_library_block(Tensor x) -> Tensor"); }
REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
'''


def test_binding_ops_are_parsed_from_the_library_block_only() -> None:
    decls = build_local.parse_binding_ops(BINDING, "b.cpp")
    assert decls == [
        OpDecl("rms_norm", "rms_norm(Tensor input, Tensor? weight, float epsilon) -> Tensor", "b.cpp"),
        OpDecl("fused_add", "fused_add(Tensor! out, Tensor x, Tensor y) -> ()", "b.cpp"),
        OpDecl("scale.out", "scale.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", "b.cpp"),
        OpDecl("inferred", None, "b.cpp"),
    ]


def test_binding_without_library_block_declares_nothing() -> None:
    assert build_local.parse_binding_ops("int main() { return 0; }") == []


def test_a_schema_that_is_not_a_literal_builds_and_only_check_reports_it_with_its_line() -> None:
    text = "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {\n  // one\n  ops.def(SCHEMA_MACRO);\n}"
    (decl,) = build_local.parse_binding_ops(text, "b.cpp")
    assert decl.schema is None
    assert decl.problem == ("b.cpp:3: ops.def(SCHEMA_MACRO) does not start with a string literal, so its schema "
                            "cannot be verified; write it as a literal there")
    nested = 'TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {\n  ops.def(std::string("g(Tensor x) -> Tensor"), &g);\n}'
    (decl,) = build_local.parse_binding_ops(nested, "b.cpp")
    assert decl.name == 'std::string("g(Tensor x) -> Tensor")' and "ops.def(std::string(" in (decl.problem or "")


def test_raw_string_schemas_are_read() -> None:
    text = 'TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {\n  ops.def(R"(norm(Tensor x, float eps) -> Tensor)");\n' \
           '  ops.def(R"s(f(Tensor x) -> Tensor)s");\n}'
    assert build_local.parse_binding_ops(text, "b.cpp") == [
        OpDecl("norm", "norm(Tensor x, float eps) -> Tensor", "b.cpp"),
        OpDecl("f", "f(Tensor x) -> Tensor", "b.cpp"),
    ]


def test_an_unknown_kernel_key_is_refused_as_kernel_builder_refuses_it(tmp_path: Path) -> None:
    root = _mini_project(tmp_path / "p")
    toml = root / "build.toml"
    toml.write_text(toml.read_text() + 'cuda-capabilites = ["9.0"]\n')
    with pytest.raises(BuildError, match=r"\[kernel.k\] has unknown key cuda-capabilites \(did you mean cuda-capabilities\?\)"):
        build_local.load_project(root)


def test_a_two_digit_capability_that_names_no_gpu_is_refused() -> None:
    for text, meant in (("10", "10.0"), ("12", "12.0"), ("10a", "10.0a"), ("sm_12f", "12.0f")):
        with pytest.raises(BuildError, match=f"write {meant} for compute capability") as info:
            build_local.normalize_arch(text)
        assert info.value.exit_code == 2
    assert build_local.normalize_arch("90") == "9.0" and build_local.normalize_arch("sm_100") == "10.0"
    assert build_local.normalize_arch("20") == "2.0"  # Fermi: real, if long gone (nvcc then says so)


def test_the_build_dir_never_lies_inside_the_project_or_over_a_foreign_package(tmp_path: Path) -> None:
    spec = build_local.load_project(_mini_project(tmp_path / "p"))
    for inside in (tmp_path / "p", tmp_path / "p" / "torch-ext"):
        with pytest.raises(BuildError, match="is inside the project") as info:
            build_local._check_build_dir(inside, spec)
        assert info.value.exit_code == 2
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(BuildError, match="is a file"):
        build_local._check_build_dir(tmp_path / "a-file", spec)
    theirs = tmp_path / "shared" / "mini"
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("mine")
    with pytest.raises(BuildError, match="build_local did not make it"):
        build_local._check_build_dir(tmp_path / "shared", spec)
    assert (theirs / "notes.txt").read_text() == "mine"
    build_local._check_build_dir(tmp_path / "fresh", spec)
    assert (tmp_path / "fresh" / ".build").is_dir()


def test_a_build_dir_whose_package_folder_is_the_project_is_refused_even_after_other_builds(tmp_path: Path) -> None:
    # x/mini is the project and its package is `mini`: --build-dir x would sync the build
    # into x/mini, deleting the project's files, once x holds any earlier build's .build/.
    spec = build_local.load_project(_mini_project(tmp_path / "x" / "mini"))
    (tmp_path / "x" / ".build").mkdir()
    (tmp_path / "x" / ".build" / "build.ninja").write_text("# an earlier build of another project\n")
    with pytest.raises(BuildError, match="which is or holds the project"):
        build_local._check_build_dir(tmp_path / "x", spec)
    assert (tmp_path / "x" / "mini" / "build.toml").is_file()


def test_the_default_build_dir_is_named_as_such_when_refused(tmp_path: Path) -> None:
    spec = build_local.load_project(_mini_project(tmp_path / "p"))
    with pytest.raises(BuildError, match=r"^the build directory .* \(from KERNEL_SKILLS_CACHE / XDG_CACHE_HOME\) is inside"):
        build_local._check_build_dir(tmp_path / "p" / "cache", spec, explicit=False)


def test_a_relative_cache_setting_gives_an_absolute_build_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ninja runs inside the build dir: a relative path there would point nowhere.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KERNEL_SKILLS_CACHE", "rel-cache")
    spec = build_local.load_project(_mini_project(tmp_path / "p"))
    assert build_local.default_build_dir(spec, ("9.0",)).is_relative_to(tmp_path / "rel-cache")


def test_ninja_variables_escape_dollars() -> None:
    assert build_local._q(["-I/tmp/bd $x2", "-O3"]) == "'-I/tmp/bd $$x2' -O3"


def test_an_import_that_kills_the_process_is_one_error_naming_what_torch_said(tmp_path: Path) -> None:
    # torch calls std::terminate when it rejects a registration while a library loads; the
    # check imports in a child first so that this is an error, not the end of build_local.
    pkg = tmp_path / "build" / "doomed"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import os, sys\n"
        "sys.stderr.write(\"terminate called after throwing an instance of 'c10::Error'\\n  what():  Inferred operator "
        "schema for a C++ kernel function doesn't match the expected function schema.\\n  reason: The number of "
        "arguments is different. 4 vs 3.\\nException raised from infer_schema\\n\")\n"
        "sys.stderr.flush()\nos.abort()\n")
    result = build_local.BuildResult(path=tmp_path / "build", package="doomed", namespace="_doomed_0", extension=pkg,
                                     archs=("9.0",), ops=(OpDecl("f", "f(Tensor x) -> Tensor", "b.cpp"),),
                                     recompiled=False)
    with pytest.raises(BuildError) as info:
        build_local._probe_import(result)
    message = str(info.value)
    assert message.startswith("importing doomed ended the process (exit -6)")
    assert message.endswith("torch said: Inferred operator schema for a C++ kernel function doesn't match the expected "
                            "function schema. reason: The number of arguments is different. 4 vs 3.")


def test_a_crash_without_torchs_message_is_not_blamed_on_a_registration(tmp_path: Path) -> None:
    pkg = tmp_path / "build" / "crashy"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import os, signal, sys\nsys.stderr.write('Segmentation fault\\n')\n"
                                     "sys.stderr.flush()\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    result = build_local.BuildResult(path=tmp_path / "build", package="crashy", namespace="_crashy_0", extension=pkg,
                                     archs=("9.0",), ops=(), recompiled=False)
    with pytest.raises(BuildError) as info:
        build_local._probe_import(result)
    assert str(info.value).startswith("importing crashy ended the process (exit -11) while loading the library; "
                                      "its last words: Segmentation fault.")
    assert "registration" not in str(info.value)


def test_an_interrupted_build_stops_ninja_before_it_returns(tmp_path: Path) -> None:
    # A Ctrl-C or SIGTERM that reaches only build_local must not leave ninja (and its
    # compilers) running after the lock is released.
    import os
    import sys

    pid_file = tmp_path / "ninja.pid"
    fake = tmp_path / "ninja"
    fake.write_text(
        f"#!{sys.executable}\nimport os, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "print(os.environ['NINJA_STATUS'] + 'nvcc k.cu', flush=True)\ntime.sleep(120)\n")
    fake.chmod(0o755)
    tools = type("Tools", (), {"ninja": str(fake)})()

    def interrupt(message: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_local._run_ninja(tools, tmp_path, {}, None, interrupt, False)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


# ---------------------------------------------------------------------- build identity


def _mini_project(root: Path) -> Path:
    (root / "kernel_src").mkdir(parents=True)
    (root / "torch-ext" / "mini").mkdir(parents=True)
    (root / "build.toml").write_text(
        '[general]\nname = "mini"\nbackends = ["cuda"]\n[torch]\nsrc = ["torch-ext/b.cpp"]\n'
        '[kernel.k]\nbackend = "cuda"\ndepends = ["torch"]\nsrc = ["kernel_src/k.cu"]\n'
    )
    (root / "kernel_src" / "k.cu").write_text("// kernel\n")
    (root / "torch-ext" / "b.cpp").write_text("// binding\n")
    (root / "torch-ext" / "mini" / "__init__.py").write_text("")
    return root


def test_namespace_is_unique_per_build_dir_and_binding(tmp_path: Path) -> None:
    spec = build_local.load_project(_mini_project(tmp_path / "p"))
    first = build_local.source_namespace(spec, tmp_path / "build")
    assert first.startswith("_mini_") and first == build_local.source_namespace(spec, tmp_path / "build")
    assert build_local.source_namespace(spec, tmp_path / "other-build") != first
    # A kernel edit keeps the namespace (so the binding is not recompiled) ...
    (tmp_path / "p" / "kernel_src" / "k.cu").write_text("// kernel, edited\n")
    assert build_local.source_namespace(spec, tmp_path / "build") == first
    # ... a binding edit changes it.
    (tmp_path / "p" / "torch-ext" / "b.cpp").write_text("// binding, edited\n")
    assert build_local.source_namespace(spec, tmp_path / "build") != first


def test_default_build_dir_is_outside_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNEL_SKILLS_CACHE", str(tmp_path / "cache"))
    spec = build_local.load_project(_mini_project(tmp_path / "p"))
    build_dir = build_local.default_build_dir(spec)
    assert build_dir.parent == tmp_path / "cache" / "build_local"
    assert build_dir.name.startswith("mini-")
    assert spec.root not in build_dir.parents


def test_default_build_dir_is_one_per_architecture_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A build for other GPUs must not replace this one: a --hub-layout links to it, and its
    # metadata.json names the archs it was built for.
    monkeypatch.setenv("KERNEL_SKILLS_CACHE", str(tmp_path / "cache"))
    spec = build_local.load_project(_mini_project(tmp_path / "p"))
    sm90 = build_local.default_build_dir(spec, ("9.0",))
    assert sm90.name.endswith("-sm90") and sm90 == build_local.default_build_dir(spec, ("9.0",))
    assert build_local.default_build_dir(spec, ("8.0", "9.0")).name.endswith("-sm80-sm90")
    assert build_local.default_build_dir(spec, ("9.0a",)).name.endswith("-sm90a")
    assert len({sm90, build_local.default_build_dir(spec, ("8.0",)), build_local.default_build_dir(spec)}) == 3


def test_hub_layout_metadata_keeps_the_arch_suffixes_kernels_checks(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # kernels 0.19 checks a local build's archs against the GPU in get_local_kernel too (0.17.2:
    # get_kernel only): "12.0+PTX" written as "12.0" would refuse a 13.x GPU that JITs the PTX.
    project = _mini_project(tmp_path / "p")
    package = tmp_path / "build" / "mini"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    archs = ("8.0", "9.0a", "12.0+PTX")
    result = build_local.BuildResult(path=tmp_path / "build", package="mini", namespace="_mini_0123456789",
                                     extension=package / "_mini_0123456789.so", archs=archs, ops=(), recompiled=False)
    monkeypatch.setattr(build_local, "hub_variant_name", lambda: "torch214-cxx11-cu130-x86_64-linux")
    repo = build_local.write_hub_layout(result, project, tmp_path / "repo")
    variant = repo / "build" / "torch214-cxx11-cu130-x86_64-linux"
    assert (variant / "mini").is_symlink() and (variant / "mini").resolve() == package.resolve()
    metadata = json.loads((variant / "metadata.json").read_text())
    assert metadata["id"] == "_mini_0123456789" and metadata["backend"] == {"type": "cuda", "archs": list(archs)}
    if importlib.util.find_spec("kernels") is None:
        return
    import kernels

    assert kernels.Metadata.read_from_file(variant / "metadata.json").backend.archs == list(archs)
    try:
        kernels_archs = importlib.import_module("kernels._internals.archs")
    except ModuleNotFoundError:
        kernels_archs = importlib.import_module("kernels.archs")
    assert kernels_archs._supports_cuda_capability(list(archs), (13, 0))  # through the PTX
    assert not kernels_archs._supports_cuda_capability([a.split("+")[0] for a in archs], (13, 0))
    assert kernels_archs._supports_cuda_capability(list(archs), (9, 0))
    assert not kernels_archs._supports_cuda_capability(list(archs), (10, 0))


# ---------------------------------------------------------------------------------- CLI


def test_cli_usage_errors_exit_2(tmp_path: Path) -> None:
    missing = run_script(BUILD_LOCAL, tmp_path / "does-not-exist")
    assert missing.returncode == 2
    assert "build_local: error:" in missing.stderr and "not a directory" in missing.stderr
    assert missing.stdout == ""
    no_args = run_script(BUILD_LOCAL)
    assert no_args.returncode == 2 and "PROJECT" in no_args.stderr


def test_cli_help_explains_usage() -> None:
    result = run_script(BUILD_LOCAL, "--help")
    assert result.returncode == 0
    assert "--arch" in result.stdout and "--check" in result.stdout and "PYTHONPATH" in result.stdout


def test_c_sources_are_compiled_as_c_as_kernel_builder_does(tmp_path: Path) -> None:
    import shutil
    import subprocess

    root = _mini_project(tmp_path / "p")
    (root / "kernel_src" / "table.c").write_text("#include <stdlib.h>\nint *make(void) { int *p = malloc(4); return p; }\n")
    toml = root / "build.toml"
    toml.write_text(toml.read_text().replace('src = ["kernel_src/k.cu"]', 'src = ["kernel_src/k.cu", "kernel_src/table.c"]'))
    spec = build_local.load_project(root)
    tools = build_local.Toolchain(
        cuda_home=tmp_path / "cuda", nvcc=tmp_path / "cuda/bin/nvcc", cxx="c++", ninja="ninja",
        nvcc_archs=frozenset({"9.0"}), cuda_version=(13, 0), cxx_std="c++20", torch_version="2.14.1",
        torch_cuda="13.0", torch_include=(), torch_lib=str(tmp_path), python_include=str(tmp_path),
        extra_system_include=(), cxx11_abi=1, nvcc_common=(),
    )
    text, objects, _ = build_local.render_ninja(spec, tools, {"k": ["9.0"]}, "_mini_0", tmp_path / "gen")
    c_flags = next(line for line in text.splitlines()[text.splitlines().index("build obj/kernel_src/table.c.o: cxx "
                   + build_local._ninja_path(root / "kernel_src/table.c")):] if line.startswith("  flags = "))
    assert "-x c " in c_flags and "-std=c11" in c_flags and "c++20" not in c_flags
    # The implicit void* conversion above is valid C and an error in C++: the flags compile it.
    if shutil.which("c++"):
        proc = subprocess.run(["c++", "-x", "c", "-std=c11", "-c", str(root / "kernel_src/table.c"), "-o",
                               str(tmp_path / "t.o")], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_a_folder_listed_as_a_source_is_named_as_a_folder(tmp_path: Path) -> None:
    root = _mini_project(tmp_path / "p")
    toml = root / "build.toml"
    toml.write_text(toml.read_text().replace('src = ["kernel_src/k.cu"]', 'src = ["kernel_src"]'))
    with pytest.raises(BuildError, match=r"lists folders as sources: kernel_src; src takes files"):
        build_local.load_project(root)


def test_the_interpreters_own_ninja_wins_over_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An activated and a bare call of the same venv's python must run the same ninja: two
    # ninja versions disagree on the build log and the second call would rebuild everything.
    venv_bin, other_bin = tmp_path / "venv" / "bin", tmp_path / "usr" / "bin"
    for folder in (venv_bin, other_bin):
        folder.mkdir(parents=True)
        (folder / "ninja").write_text("#!/bin/sh\n")
        (folder / "ninja").chmod(0o755)
    monkeypatch.setattr(build_local.sys, "executable", str(venv_bin / "python"))
    monkeypatch.setenv("PATH", str(other_bin))
    assert build_local._find_ninja() == str(venv_bin / "ninja")
    (venv_bin / "ninja").unlink()
    assert build_local._find_ninja() == str(other_bin / "ninja")
