#!/usr/bin/env python3
"""Create a complete kernel-builder project for a CUDA op: kernel, binding, tests, benchmark.

    python new_kernel_project.py NAME --op rmsnorm|layernorm|glu|elementwise|rope [--capabilities 9.0a,10.0]
                                 [--out DIR] [--force]

writes DIR/NAME/ (DIR defaults to the current directory):

    build.toml                    kernel-builder configuration ([general], [torch], [kernel.<op>])
    flake.nix                     kernel-builder flake (Nix builds for the Kernel Hub)
    kernel_src/<op>.cu            the CUDA kernels and their launcher (CUDA headers only, no torch)
    kernel_src/launchers.h        the torch-free launch API: plain structs and functions
    kernel_src/common.cuh         device helpers: packs, any-alignment loads, row split, row_sum
    kernel_src/dtype.h            the dtype tag shared by the two headers
    torch-ext/torch_binding.h     the ops' C++ signatures
    torch-ext/torch_binding.cpp   argument checks, tensors -> launch structs, TORCH_LIBRARY_EXPAND
    torch-ext/<pkg>/__init__.py   Python API over `from ._ops import ops`, fake kernel for torch.compile
    torch-ext/<pkg>/reference.py  PyTorch reference: CPU path and ground truth
    tests/test_<op>.py            correctness against float64 (GPU tests marked `gpu`)
    tests/kernel_checks.py        the width x dtype x layout sweep, poisoning, compute-sanitizer
    tests/test_<op>_emulated.py   the kernels on the skill's CPU emulator vs float64 (no GPU, no nvcc;
                                  tests/emulation.py builds them with g++)
    tests/test_kernel_resources.py  launch bounds x registers <= 65536, no spills (nvcc -Xptxas -v)
    benchmarks/benchmark_<op>.py  time, GB/s, % of copy bandwidth, vs eager, torch.compile and Triton
    benchmarks/triton_peer.py     the plain Triton kernel the benchmark measures against
    tests/test_triton_peer.py     that peer against float64 (CPU: Triton's interpreter)
    README.md                     how to build (Nix and local), test and benchmark

NAME is the kernel name, lowercase words joined by '-' (the Python package is NAME with
'-' replaced by '_'). An existing non-empty directory is refused unless --force, which
overwrites the files the template writes and leaves every other file alone; a directory
scaffolded with another --op is refused even then (the two ops' files would mix).
build.toml leaves `cuda-capabilities` unset unless --capabilities is given: kernel-builder
then builds for its whole default list (DEFAULT_KERNEL_BUILDER_CAPABILITIES), which is what
the Kernel Hub expects. Give --capabilities only when a kernel needs specific architectures
(e.g. 9.0a for wgmma code). Capabilities below 7.5 are refused: CUDA 13's nvcc cannot
compile for them.

The template is ../assets/template: common/ (what every op shares) and one folder per op.
Each holds files at their project paths (the CUDA and C++ sources, the README template and
build files) and a project.md whose sections are the rest: the Python package, tests and
benchmarks, and the op's README text; common's `## @NAME` blocks fill `@@NAME` lines.

Next step: python build_local.py DIR/NAME --check   (same scripts/ directory; add
--arch 9.0 on a machine without a GPU, or it compiles every capability in build.toml).
Standard library only.
"""

from __future__ import annotations

import argparse
import keyword
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent
TEMPLATE_DIR = SCRIPTS_DIR.parent / "assets" / "template"

# op -> one-line description; each has a directory TEMPLATE_DIR/<op>.
OPS = {
    "rmsnorm": "RMSNorm over the last dimension, and fused residual add + RMSNorm (optional weight)",
    "layernorm": "LayerNorm over the last dimension with optional weight/bias and AdaLN scale/shift modulation",
    "glu": "gated activation act(gate) * up over the halves of the last dimension (SwiGLU, GEGLU)",
    "elementwise": "elementwise activation f(x), one formula to edit (GELU-tanh, SiLU)",
    "rope": "rotary position embedding, rotate-half (Llama, Qwen) and interleaved (LTX-Video)",
}
# kernel-builder's default for a kernel without cuda-capabilities, CUDA >= 13 (huggingface/kernels,
# kernel-builder/src/pyproject/templates/torch/preamble.cmake, CUDA_DEFAULT_KERNEL_ARCHS).
# Quoted in the build.toml comment only: the scaffold leaves the choice to kernel-builder.
DEFAULT_KERNEL_BUILDER_CAPABILITIES = ("7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX")
MIN_CAPABILITY = (7, 5)  # CUDA 13 dropped sm_50..sm_72; the skill's kernels assume sm_75+

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")
ARCH_RE = re.compile(r"^\d+\.\d+[af]?(?:\+PTX)?$")
TOKEN_RE = re.compile(r"__(?:NAME|PKG|OP|CAPABILITIES|SKILL_SCRIPTS|HUB|HUB_REPO)__")
# common/ and each op's folder: files at their project paths, and the rest of the project in
# BUNDLE, as `## PATH` headings over ~~~ blocks; the op's `## README.md` block fills the slots
# of common/README.md.
BUNDLE = "project.md"
SECTION_RE = re.compile(r"^## `?([^`\s]+)`?\s*$")
FENCE_RE = re.compile(r"^(~{3,})\w*\s*$")
SLOT_RE = re.compile(r"<!-- op: (\w+) -->")
SLOT_LINE_RE = re.compile(r"^<!-- op: (\w+) -->\n", re.MULTILINE)
# A `## @NAME` section of common/project.md is a block, not a file: a line `@@NAME` in any
# section is replaced by it (what several ops' files share, written once).
USE_RE = re.compile(r"^@@(\w+)\n", re.MULTILINE)
# Package names that would shadow something a kernel project imports.
RESERVED_PACKAGES = {"torch", "triton", "kernels", "numpy", "pytest", "transformers", "diffusers", "tests", "test"}


class ScaffoldError(Exception):
    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Plan:
    target: Path
    files: dict[Path, str]  # relative path -> content


def validate_name(name: str) -> str:
    """Return the Python package name for kernel NAME, or raise ScaffoldError (usage)."""
    if not NAME_RE.fullmatch(name) or len(name) > 64:
        raise ScaffoldError(
            f"invalid kernel name {name!r}: use lowercase letters and digits in words joined by '-' "
            "(e.g. my-rmsnorm), starting with a letter, at most 64 characters",
            exit_code=2,
        )
    package = name.replace("-", "_")
    stdlib = getattr(sys, "stdlib_module_names", set())
    if keyword.iskeyword(package) or package in RESERVED_PACKAGES or package in stdlib:
        raise ScaffoldError(
            f"kernel name {name!r} gives the Python package {package!r}, which would shadow an existing "
            "module; choose a more specific name (e.g. my-kernels)",
            exit_code=2,
        )
    return package


def parse_capabilities(text: str) -> list[str]:
    caps = [c.strip() for c in text.split(",") if c.strip()]
    bad = [c for c in caps if not ARCH_RE.fullmatch(c)]
    if not caps or bad:
        raise ScaffoldError(
            f"invalid --capabilities {text!r}: give comma-separated compute capabilities like 8.0,9.0 "
            "(9.0a and 12.0+PTX forms are accepted)",
            exit_code=2,
        )

    def key(cap: str) -> tuple[int, int, str]:
        major, rest = cap.split(".", 1)
        minor = re.match(r"\d+", rest)
        return int(major), int(minor.group(0)) if minor else 0, cap

    old = [c for c in caps if key(c)[:2] < MIN_CAPABILITY]
    if old:
        raise ScaffoldError(
            f"compute capability {', '.join(old)} is below 7.5: CUDA 13's nvcc cannot compile for it and the "
            "templates' kernels assume sm_75 or newer; drop it from --capabilities",
            exit_code=2,
        )
    return sorted(dict.fromkeys(caps), key=key)


# A Hub repository id as huggingface_hub accepts it: [owner/]name of letters, digits, '-', '_'
# and '.', neither starting nor ending with '-' or '.', no '--' or '..', at most 96 characters.
HUB_REPO_RE = re.compile(r"[A-Za-z0-9_](?:[\w.-]*[A-Za-z0-9_])?/[A-Za-z0-9_](?:[\w.-]*[A-Za-z0-9_])?")


def validate_hub_repo(repo: str) -> str:
    """Return ``repo`` if it is a Hub repository id ORG/NAME, else raise ScaffoldError (usage)."""
    if not HUB_REPO_RE.fullmatch(repo) or "--" in repo or ".." in repo or len(repo) > 96:
        raise ScaffoldError(
            f"invalid --hub-repo {repo!r}: give the Hub repository as ORG/NAME (letters, digits, '-', '_', "
            "'.'; e.g. my-org/my-rmsnorm)",
            exit_code=2,
        )
    return repo


def hub_repo_or_placeholder(hub_repo: str | None, name: str) -> str:
    """The Hub repository the project names: --hub-repo's, validated, or your-org/NAME."""
    return f"your-org/{name}" if hub_repo is None else validate_hub_repo(hub_repo)


def hub_lines(hub_repo: str | None, name: str) -> str:
    """The build.toml lines that name the Hub repository `kernel-builder build-and-upload` targets."""
    repo = hub_repo_or_placeholder(hub_repo, name)
    if hub_repo is None:
        return (
            "# Uncomment to choose the Hub repository that `kernel-builder build-and-upload` targets\n"
            "# (new_kernel_project.py --hub-repo ORG/NAME writes it).\n"
            "# [general.hub]\n"
            f'# repo-id = "{repo}"'
        )
    return f'# The Hub repository `kernel-builder build-and-upload` targets.\n[general.hub]\nrepo-id = "{repo}"'


def capabilities_lines(capabilities: list[str] | None) -> str:
    """The build.toml lines of [kernel.<op>] that choose its capabilities."""
    if not capabilities:
        return (
            "# No cuda-capabilities: kernel-builder builds for its default list (CUDA 13:\n"
            f"# {', '.join(DEFAULT_KERNEL_BUILDER_CAPABILITIES)}), as the Kernel Hub expects.\n"
            "# Set it only when a kernel needs specific architectures, e.g.\n"
            '# cuda-capabilities = ["9.0a"] for wgmma code.'
        )
    listed = ", ".join(f'"{c}"' for c in capabilities)
    return (
        "# SASS is built for each listed capability; GPUs of the same major version with a\n"
        "# higher minor (8.6, 8.9 -> 8.0) run the closest lower one.\n"
        f"cuda-capabilities = [{listed}]"
    )


def read_bundle(path: Path) -> dict[str, str]:
    """An op's project.md: each `## NAME` heading and the ~~~-fenced block under it, NAME -> the block's text."""
    sections: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n")
    name, i = None, 0
    while i < len(lines):
        heading, fence = SECTION_RE.match(lines[i]), FENCE_RE.match(lines[i])
        if heading:
            name = heading.group(1)
        elif fence:
            # The next fence line closes the block; one that opens another block means this one is unclosed.
            end = next((j for j in range(i + 1, len(lines)) if FENCE_RE.match(lines[j])), None)
            if name is None or end is None or lines[end] != fence.group(1) or name in sections:
                raise ScaffoldError(f"template bug: {path}:{i + 1}: a block needs one `## PATH` heading and a closing fence")
            sections[name] = "\n".join(lines[i + 1 : end]) + "\n"
            name, i = None, end
        i += 1
    return sections


def fill_slots(template: str, values: str, where: str) -> str:
    """The README template with each `<!-- op: NAME -->` replaced by the op's value for NAME.

    ``values``: `<!-- op: NAME -->` lines, each followed by its value (up to the next such line).
    """
    parts = SLOT_LINE_RE.split(values)
    slots = {name: value.removesuffix("\n") for name, value in zip(parts[1::2], parts[2::2], strict=True)}
    used = set(SLOT_RE.findall(template))
    if parts[0].strip() or used != set(slots):
        raise ScaffoldError(f"template bug: {where} fills slots {sorted(slots)}; README.md has {sorted(used)}")
    return SLOT_RE.sub(lambda m: slots[m.group(1)], template)


def template_files(op: str) -> dict[str, str]:
    """The project's files for ``op`` before the placeholders are filled: project path -> text.

    common/ and TEMPLATE_DIR/<op>/ hold files at their project paths (kernel_src/, torch-ext/,
    README.md, ...) and a project.md with the rest; the op's fills the README's slots.
    """
    if op not in OPS:
        raise ScaffoldError(f"unknown --op {op!r}; available: {', '.join(sorted(OPS))}", exit_code=2)
    files: dict[str, str] = {}
    sections: dict[str, str] = {}
    for layer in (TEMPLATE_DIR / "common", TEMPLATE_DIR / op):
        if not layer.is_dir():
            raise ScaffoldError(f"template directory {layer} is missing; reinstall the cuda-kernels skill")
        for src in sorted(layer.rglob("*")):
            if not src.is_file() or "__pycache__" in src.parts or src.suffix == ".pyc":
                continue
            if src.parent == layer and src.name == BUNDLE:
                for rel, text in read_bundle(src).items():
                    if rel in sections:
                        raise ScaffoldError(f"template bug: two project.md files write {rel}")
                    sections[rel] = text
            else:
                files[src.relative_to(layer).as_posix()] = src.read_text(encoding="utf-8")
    where = str(TEMPLATE_DIR / op / BUNDLE)
    files["README.md"] = fill_slots(files["README.md"], sections.pop("README.md", ""), where)
    blocks = {rel[1:]: sections.pop(rel) for rel in list(sections) if rel.startswith("@")}

    def use(match: re.Match[str]) -> str:
        if match.group(1) not in blocks:
            raise ScaffoldError(f"template bug: {where} uses @@{match.group(1)}; common/{BUNDLE} has no `## @{match.group(1)}`")
        return blocks[match.group(1)]

    for rel, text in sections.items():
        text = USE_RE.sub(use, text)
        if rel in files:
            raise ScaffoldError(f"template bug: a project.md and a file of the template both write {rel}")
        files[rel] = text
    return files


def render(op: str, name: str, capabilities: list[str] | None = None, hub_repo: str | None = None) -> dict[Path, str]:
    """All files of the project, relative path -> text, with the placeholders filled in.

    ``capabilities`` None (the default) leaves ``cuda-capabilities`` out of build.toml;
    ``hub_repo`` None leaves ``[general.hub]`` commented out.
    """
    raw = template_files(op)
    package = validate_name(name)
    values = {
        "__HUB__": hub_lines(hub_repo, name),
        "__HUB_REPO__": hub_repo_or_placeholder(hub_repo, name),
        "__NAME__": name,
        "__PKG__": package,
        "__OP__": op,
        "__CAPABILITIES__": capabilities_lines(capabilities),
        "__SKILL_SCRIPTS__": str(SCRIPTS_DIR),
    }
    files: dict[Path, str] = {}
    for rel, text in raw.items():
        parts = [package if p == "__PKG__" else p for p in rel.split("/")]
        if parts[-1] == "gitignore":
            parts[-1] = ".gitignore"
        for token, value in values.items():
            text = text.replace(token, value)
        leftover = TOKEN_RE.search(text)
        if leftover:
            raise ScaffoldError(f"template bug: {rel} still contains {leftover.group(0)} after rendering")
        files[Path(*parts)] = text
    return files


def plan_project(
    name: str, op: str, capabilities: list[str] | None, out: Path, force: bool, hub_repo: str | None = None
) -> Plan:
    if out.exists() and not out.is_dir():
        raise ScaffoldError(f"--out {out} is a file, not a directory; give the folder the project goes into", exit_code=2)
    target = out / name
    if target.exists() and not target.is_dir():
        raise ScaffoldError(f"{target} exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise ScaffoldError(f"{target} already exists and is not empty; pass --force to overwrite the template's files")
    files = render(op, name, capabilities, hub_repo)
    if target.is_dir():
        foreign = _other_ops_files(op, name, capabilities, target, files)
        if foreign:
            raise ScaffoldError(
                f"{target} was scaffolded with another --op ({', '.join(foreign[:3])}"
                f"{' ...' if len(foreign) > 3 else ''}); --force overwrites only this template's files, so the "
                "project would mix two ops: scaffold into a new folder, or delete the old files first"
            )
    return Plan(target=target, files=files)


def _other_ops_files(
    op: str, name: str, capabilities: list[str] | None, target: Path, files: dict[Path, str]
) -> list[str]:
    """Files of the other ops' templates (not shared with this one) that ``target`` holds."""
    found: list[str] = []
    for other in sorted(OPS):
        if other == op:
            continue
        for rel in render(other, name, capabilities):
            if rel not in files and (target / rel).exists():
                found.append(str(rel))
    return found


def write_project(plan: Plan) -> list[Path]:
    """Write the files; returns the ones that replaced existing files.

    Everything is rendered into a temporary directory next to the target first, so a
    failure never leaves a half-written project behind.
    """
    plan.target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{plan.target.name}.", dir=plan.target.parent))
    try:
        for rel, text in plan.files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if not plan.target.exists():
            os.replace(staging, plan.target)  # one atomic step for a new project
            return []
        replaced = []
        for rel in plan.files:
            dest = plan.target / rel
            if dest.exists():
                replaced.append(rel)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, dest)
        return replaced
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _parser() -> argparse.ArgumentParser:
    ops_help = "; ".join(f"{op}: {desc}" for op, desc in OPS.items())
    parser = argparse.ArgumentParser(
        prog="new_kernel_project.py",
        description="Create a kernel-builder project (build.toml, flake.nix, CUDA kernel, torch binding, "
        "Python package, tests, benchmark, README) for a CUDA op.",
        epilog="example:\n  new_kernel_project.py my-rmsnorm --op rmsnorm --out ~/kernels\n"
        "then:\n  build_local.py ~/kernels/my-rmsnorm --check",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", metavar="NAME", help="kernel name, lowercase words joined by '-' (e.g. my-rmsnorm)")
    parser.add_argument("--op", required=True, choices=sorted(OPS), help=f"the op to generate ({ops_help})")
    parser.add_argument(
        "--capabilities",
        default=None,
        metavar="LIST",
        help="cuda-capabilities for build.toml, e.g. 9.0a or 8.0,9.0 (default: unset, so kernel-builder builds "
        f"for its own list, {','.join(DEFAULT_KERNEL_BUILDER_CAPABILITIES)} with CUDA 13); set it only when "
        "a kernel needs specific architectures",
    )
    parser.add_argument(
        "--hub-repo",
        default=None,
        metavar="ORG/NAME",
        help="the Hub repository `kernel-builder build-and-upload` publishes to ([general.hub] repo-id in "
        "build.toml; default: left commented out)",
    )
    parser.add_argument("--out", default=".", metavar="DIR", help="parent directory of the project (default: .)")
    parser.add_argument("--force", action="store_true", help="write into an existing non-empty directory")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        capabilities = None if args.capabilities is None else parse_capabilities(args.capabilities)
        plan = plan_project(
            args.name, args.op, capabilities, Path(args.out).expanduser().resolve(), args.force, args.hub_repo
        )
        replaced = write_project(plan)
    except ScaffoldError as exc:
        print(f"new_kernel_project: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"new_kernel_project: error: {exc}", file=sys.stderr)
        return 1
    package = args.name.replace("-", "_")
    print(f"created {plan.target} ({len(plan.files)} files, op {args.op}, package {package})")
    if replaced:
        print(f"overwrote {len(replaced)} existing files: {', '.join(str(p) for p in replaced)}")
    build_local = SCRIPTS_DIR / "build_local.py"
    print("next (without a GPU here, add --arch 9.0 to both build_local.py calls, or it compiles every")
    print("capability build.toml allows, kernel-builder's whole list when it names none; give every later")
    print("call the same --arch so the build is reused):")
    print(f"  python {build_local} {plan.target} --check")
    print(f"  cd {plan.target} && PYTHONPATH=$(python {build_local} .) python -m pytest tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
