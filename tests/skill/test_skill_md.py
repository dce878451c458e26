"""SKILL.md follows the Agent Skills rules and the project's own: allowed front matter keys
only, a description that says what and when (<= 1024 characters), a body of at most 300
lines, every path it names present with exact case, and every script it names runnable
with --help (without torch)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

import skilldocs

SKILL_MD = skilldocs.SKILL / "SKILL.md"
ALLOWED_KEYS = {"name", "description", "license", "compatibility", "metadata"}


def _split() -> tuple[dict, str]:
    text = SKILL_MD.read_text(encoding="utf-8")
    assert text.startswith("---\n"), "SKILL.md must start with YAML front matter"
    end = text.index("\n---\n", 4)
    return yaml.safe_load(text[4:end]), text[end + 5:]


def test_front_matter_keys_and_values() -> None:
    front, _ = _split()
    assert set(front) <= ALLOWED_KEYS, f"unexpected keys: {set(front) - ALLOWED_KEYS}"
    assert front["name"] == "cuda-kernels" == SKILL_MD.parent.name
    description = front["description"]
    assert isinstance(description, str) and 0 < len(description) <= 1024, len(description)
    # What the skill does and exactly when to use it: the triggers from the issue.
    for trigger in ("CUDA", "RMSNorm", "LayerNorm", "RoPE", "GELU", "GEGLU", "SwiGLU", "AdaLN", "attention",
                    "transformers", "diffusers", "H100", "H200", "A100", "T4", "kernel-builder", "get_kernel"):
        assert trigger in description, f"description does not mention {trigger}"
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in front.get("metadata", {}).items())


def test_body_is_at_most_300_lines() -> None:
    _, body = _split()
    assert len(body.splitlines()) <= 300, len(body.splitlines())


def test_hard_rules_are_all_taught() -> None:
    _, body = _split()
    for rule in ("TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)", "REGISTER_EXTENSION", "from ._ops import ops",
                 "pybind11", "torch/extension.h", "setup.py", "relative imports", "16-byte", "fp32", "64-bit",
                 "current stream", "cudaGetLastError", "bf16", "fake", "torch.compile", "eager",
                 "cuda-capabilities", "depends", "backend"):
        assert rule in body, f"SKILL.md does not teach: {rule}"
    assert body.count("*Why:*") >= 10, "every hard rule explains its reason"


def test_validator_accepts_the_skill() -> None:
    skill = pytest.importorskip("kernel_skills.skill")
    report = skill.validate(skilldocs.SKILL)
    assert report.ok, "\n".join(str(p) for p in report.errors)
    assert not report.warnings, "\n".join(str(p) for p in report.warnings)


def test_every_reference_is_indexed_with_when_to_read_it() -> None:
    _, body = _split()
    for ref in sorted((skilldocs.SKILL / "references").glob("*.md")):
        assert f"(references/{ref.name})" in body, f"SKILL.md does not index {ref.name}"


def test_code_spans_in_references_name_existing_skill_paths() -> None:
    tops = ("scripts/", "references/", "assets/", "examples/")
    for doc in sorted((skilldocs.SKILL / "references").glob("*.md")):
        prose = skilldocs.strip_code(doc.read_text(encoding="utf-8"))
        for span in re.findall(r"`([^`\n]+)`", prose):
            for token in span.split():
                token = token.strip(".,;:'\"()")
                if token.startswith(tops) and not set(token) & set("<>*{}$"):
                    assert (skilldocs.SKILL / token).exists(), f"{doc.name}: `{token}` does not exist"


SCRIPT_NAMES = sorted(set(re.findall(r"python scripts/([a-z_]+\.py)", SKILL_MD.read_text(encoding="utf-8"))))


def test_skill_md_names_the_scripts() -> None:
    expected = {"gpu_specs.py", "new_kernel_project.py", "build_local.py", "benchmark_rmsnorm.py",
                "transformers_injection_example.py", "ltx_kernel_injection_example.py", "benchmark_example.py",
                "huggingface_kernels_example.py"}
    assert expected <= set(SCRIPT_NAMES), expected - set(SCRIPT_NAMES)


@pytest.mark.parametrize("script", SCRIPT_NAMES)
def test_named_script_exists_and_help_runs_without_torch(script: str) -> None:
    path = skilldocs.SKILL / "scripts" / script
    assert path.is_file(), f"SKILL.md names scripts/{script}, which does not exist"
    # sys.modules[name] = None makes `import name` raise ImportError: --help must not need them.
    code = ("import runpy, sys\n"
            "for name in ('torch', 'transformers', 'diffusers', 'kernels', 'triton'):\n"
            "    sys.modules[name] = None\n"
            f"sys.argv = [{str(path)!r}, '--help']\n"
            f"runpy.run_path({str(path)!r}, run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage" in proc.stdout.lower()
