"""references/kernel-templates.md shows the scaffold's code, byte for byte.

The scaffold (skills/cuda-kernels/assets/template, what new_kernel_project.py writes) is
the single source of truth; the page shows its files verbatim so an agent reading the page
and one scaffolding a project see the same code. Each code block of the page named in
PAGE_FILES is its marker line followed by the template file's exact text. The rmsnorm
project's files carry `// file:` markers, so tests/skill/test_code_blocks.py also compiles
them as a project; the other ops' kernels are `// fragment` blocks (their projects are
built by tests/kernel_project).

After editing a template, refresh the page's blocks (prose between them is kept):

    python tests/skill/test_templates_build.py --write
"""

from __future__ import annotations

import sys

import skilldocs

DOC = skilldocs.SKILL / "references" / "kernel-templates.md"
TEMPLATE = skilldocs.SKILL / "assets" / "template"
if str(skilldocs.SKILL / "scripts") not in sys.path:
    sys.path.insert(0, str(skilldocs.SKILL / "scripts"))

import new_kernel_project  # noqa: E402

# (template file, the block's marker line, fence language), in page order.
PAGE_FILES = [
    ("common/kernel_src/dtype.h", "// file: kernel_src/dtype.h", "cpp"),
    ("rmsnorm/kernel_src/launchers.h", "// file: kernel_src/launchers.h", "cpp"),
    ("common/kernel_src/common.cuh", "// file: kernel_src/common.cuh", "cuda"),
    ("rmsnorm/kernel_src/rmsnorm.cu", "// file: kernel_src/rmsnorm.cu", "cuda"),
    ("rmsnorm/torch-ext/torch_binding.h", "// file: torch-ext/torch_binding.h", "cpp"),
    ("rmsnorm/torch-ext/torch_binding.cpp", "// file: torch-ext/torch_binding.cpp", "cpp"),
    ("rmsnorm/torch-ext/__PKG__/__init__.py", "# file: torch-ext/__PKG__/__init__.py", "python"),
    ("layernorm/kernel_src/launchers.h", "// fragment: layernorm/kernel_src/launchers.h", "cpp"),
    ("layernorm/kernel_src/layernorm.cu", "// fragment: layernorm/kernel_src/layernorm.cu", "cuda"),
    ("glu/kernel_src/launchers.h", "// fragment: glu/kernel_src/launchers.h", "cpp"),
    ("glu/kernel_src/glu.cu", "// fragment: glu/kernel_src/glu.cu", "cuda"),
    ("elementwise/kernel_src/launchers.h", "// fragment: elementwise/kernel_src/launchers.h", "cpp"),
    ("elementwise/kernel_src/elementwise.cu", "// fragment: elementwise/kernel_src/elementwise.cu", "cuda"),
    ("rope/kernel_src/launchers.h", "// fragment: rope/kernel_src/launchers.h", "cpp"),
    ("rope/kernel_src/rope.cu", "// fragment: rope/kernel_src/rope.cu", "cuda"),
]


def template_text(template: str) -> str:
    """A scaffold file by its place in assets/template: a file there, or a section of an op's project.md."""
    if (TEMPLATE / template).is_file():
        return (TEMPLATE / template).read_text(encoding="utf-8")
    op, rel = template.split("/", 1)
    return new_kernel_project.template_files(op)[rel]


def expected_block(template: str, marker: str) -> str:
    return marker + "\n" + template_text(template)


def rewrite_page(text: str) -> str:
    """The page with every PAGE_FILES block's body replaced by marker + template file."""
    lines = text.split("\n")
    markers = {marker: (template, lang) for template, marker, lang in PAGE_FILES}
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        if line.startswith("```") and i + 1 < len(lines) and lines[i + 1] in markers:
            template, _ = markers[lines[i + 1]]
            out.extend(expected_block(template, lines[i + 1]).rstrip("\n").split("\n"))
            i += 1
            while not lines[i].startswith("```"):
                i += 1
            out.append(lines[i])
        i += 1
    return "\n".join(out)


def test_every_template_file_is_shown_verbatim_in_page_order() -> None:
    blocks = {b.first_line: b for b in skilldocs.parse_blocks(DOC)}
    order = []
    for template, marker, lang in PAGE_FILES:
        assert marker in blocks, f"{DOC.name} has no block starting with {marker!r} ({template})"
        block = blocks[marker]
        assert block.lang == lang, f"{block.where}: fence language {block.lang!r}, expected {lang!r}"
        assert block.text == expected_block(template, marker), (
            f"{block.where} differs from assets/template/{template}; run: python tests/skill/test_templates_build.py --write")
        order.append(block.line)
    assert order == sorted(order), "the page shows the files out of PAGE_FILES order"


def test_every_kernel_source_of_the_scaffold_is_on_the_page() -> None:
    shown = {template for template, _, _ in PAGE_FILES}
    sources = {str(p.relative_to(TEMPLATE)) for p in TEMPLATE.rglob("kernel_src/*") if p.is_file()}
    assert sources <= shown, f"kernel sources missing from {DOC.name}: {sorted(sources - shown)}"


def test_the_page_has_no_other_kernel_code() -> None:
    # One code base: any other cuda/cpp block would be a second, unchecked version.
    markers = {marker for _, marker, _ in PAGE_FILES}
    others = [b.where for b in skilldocs.parse_blocks(DOC) if b.lang in ("cuda", "cpp") and b.first_line not in markers]
    assert not others, f"kernel code on the page that is not the scaffold's: {others}"


def test_the_writer_is_a_fixed_point_of_the_page() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert rewrite_page(text) == text


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/skill/test_templates_build.py --write")
    DOC.write_text(rewrite_page(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"rewrote the template blocks of {DOC}")
