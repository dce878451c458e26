"""references/kernel-templates.md shows the scaffold's code, byte for byte.

The scaffold (skills/cuda-kernels/assets/template, what new_kernel_project.py writes) is
the single source of truth; the page teaches its style on one op, RMSNorm, so an agent
reading the page and one scaffolding a project see the same code. Every C++/CUDA block of
the page starts with `// fragment: <file of assets/template>` and is that file whole or,
marked `(excerpt)`, a run of its whole lines. The files themselves are compiled as
projects by tests/kernel_project; here only their text is compared.

After editing a template, refresh the page's whole-file blocks (prose and excerpts are
kept; an excerpt that no longer matches the file is cut again by hand):

    python tests/skill/test_templates_build.py --write
"""

from __future__ import annotations

import re
import sys

import skilldocs

DOC = skilldocs.SKILL / "references" / "kernel-templates.md"
TEMPLATE = skilldocs.SKILL / "assets" / "template"
MARKER = re.compile(r"^// fragment: (?P<path>\S+)(?P<excerpt> \(excerpt\))?$")
OPS = ("rmsnorm", "layernorm", "glu", "elementwise", "rope")  # new_kernel_project.OPS

# What the page shows whole: the launch API and the kernel of one op.
WHOLE = {"common/kernel_src/dtype.h", "rmsnorm/kernel_src/launchers.h", "rmsnorm/kernel_src/rmsnorm.cu"}
# What its excerpts must show: the helpers every kernel uses and the binding's launch and registration.
EXCERPTS = {
    "common/kernel_src/common.cuh": ["Pack<T> load_any(", "RowSplit split_row(", "float row_sum(",
                                     "__syncthreads();  // the leading barrier"],
    "rmsnorm/torch-ext/torch_binding.cpp": ["c10::cuda::getCurrentCUDAStream()", "CUDAGuard", "numel() == 0",
                                            "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)"],
}


def code_blocks() -> list[tuple[skilldocs.Block, re.Match[str] | None]]:
    return [(b, MARKER.match(b.first_line)) for b in skilldocs.parse_blocks(DOC) if b.lang in ("cuda", "cpp")]


def body(block: skilldocs.Block) -> str:
    return block.text.split("\n", 1)[1]


def rewrite_page(text: str) -> str:
    """The page with every whole-file block's body replaced by its template file."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        marker = MARKER.match(lines[i + 1]) if lines[i].startswith("```") and i + 1 < len(lines) else None
        if marker and not marker.group("excerpt"):
            out.append(lines[i + 1])
            out.extend((TEMPLATE / marker.group("path")).read_text(encoding="utf-8").rstrip("\n").split("\n"))
            i += 2
            while not lines[i].startswith("```"):
                i += 1
            out.append(lines[i])
        i += 1
    return "\n".join(out)


def test_every_code_block_is_a_template_file_or_a_run_of_its_lines() -> None:
    blocks = code_blocks()
    assert blocks, f"{DOC.name} shows no code"
    for block, marker in blocks:
        # One code base: any other cuda/cpp block would be a second, unchecked version.
        assert marker, f"{block.where}: a C++/CUDA block starts with `// fragment: <file of assets/template>`"
        path = TEMPLATE / marker.group("path")
        assert path.is_file(), f"{block.where}: {marker.group('path')} is not a file of assets/template"
        text = path.read_text(encoding="utf-8")
        if marker.group("excerpt"):
            assert body(block).strip() and "\n" + body(block) in "\n" + text, (
                f"{block.where} is no longer a run of lines of {marker.group('path')}: cut the excerpt again")
        else:
            assert body(block) == text, (
                f"{block.where} differs from {marker.group('path')}; run: python tests/skill/test_templates_build.py --write")


def test_the_page_shows_one_op_whole_and_the_helpers_every_kernel_uses() -> None:
    blocks = code_blocks()
    assert WHOLE <= {m.group("path") for _, m in blocks if m and not m.group("excerpt")}
    for path, needles in EXCERPTS.items():
        shown = "".join(b.text for b, m in blocks if m and m.group("path") == path)
        missing = [n for n in needles if n not in shown]
        assert not missing, f"{DOC.name} no longer shows {missing} of {path}"


def test_the_page_points_to_every_other_op_of_the_scaffold() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert sorted(p.name for p in TEMPLATE.iterdir() if p.is_dir() and p.name != "common") == sorted(OPS)
    for op in OPS[1:]:
        assert f"`assets/template/{op}/`" in text, f"{DOC.name} does not say where the {op} kernel is"


def test_the_writer_is_a_fixed_point_of_the_page() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert rewrite_page(text) == text


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/skill/test_templates_build.py --write")
    DOC.write_text(rewrite_page(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"rewrote the whole-file blocks of {DOC}")
