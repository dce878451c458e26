"""Parse the cuda-kernels skill's Markdown into code blocks (shared by tests/skill/*).

The skill's Markdown is parsed once per session into code blocks. A ```cuda or ```cpp block
whose first line is `// file: PATH` is a file of a small project laid out per document
(headers are included by the blocks that need them); one whose first line starts with
`// fragment` is a deliberate excerpt that is not compiled; any other block is a complete
translation unit on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SKILL = REPO / "skills" / "cuda-kernels"
DOCS = [SKILL / "SKILL.md", *sorted((SKILL / "references").glob("*.md"))]

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
FILE_MARKER = re.compile(r"^\s*(?://|#)\s*file:\s*(?P<path>\S+)\s*$")
FRAGMENT_MARKER = re.compile(r"^\s*(?://|#)\s*fragment\b", re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str

    @property
    def first_line(self) -> str:
        return self.text.split("\n", 1)[0]

    @property
    def file_path(self) -> str | None:
        m = FILE_MARKER.match(self.first_line)
        return m.group("path") if m else None

    @property
    def is_fragment(self) -> bool:
        return bool(FRAGMENT_MARKER.match(self.first_line))

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def parse_blocks(doc: Path) -> list[Block]:
    """Fenced code blocks of a Markdown file (CommonMark fences, no nesting)."""
    blocks: list[Block] = []
    lines = doc.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group("fence"), m.group("info").strip(), i
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]):
            body.append(lines[i])
            i += 1
        lang = info.split()[0].lower() if info else ""
        blocks.append(Block(doc=doc, line=start + 1, lang=lang, text="\n".join(body) + "\n"))
        i += 1
    return blocks


def all_blocks() -> list[Block]:
    return [b for doc in DOCS if doc.exists() for b in parse_blocks(doc)]


def strip_code(text: str) -> str:
    """Markdown text with fenced code blocks removed (prose, tables and inline code stay)."""
    out, in_fence, fence = [], False, ""
    for line in text.split("\n"):
        m = FENCE.match(line)
        if not in_fence and m:
            in_fence, fence = True, m.group("fence")
            continue
        if in_fence and re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", line):
            in_fence = False
            continue
        if not in_fence:
            out.append(line)
    return "\n".join(out)


# --- compiling the C++/CUDA blocks ---------------------------------------------------------

COMPILED_LANGS = {"cuda": ".cu", "cu": ".cu", "cpp": ".cpp", "c++": ".cpp"}
ARCHS = ("80", "90")

# kernel-builder's stand-in for the generated registration.h (same macro names and meaning:
# TORCH_LIBRARY_EXPAND expands its NAME argument, REGISTER_EXTENSION defines PyInit_<NAME>).
REGISTRATION_H = """#pragma once
#include <Python.h>
#include <torch/library.h>
#define KS_CONCAT_(a, b) a##b
#define KS_CONCAT(a, b) KS_CONCAT_(a, b)
#define KS_STR_(a) #a
#define KS_STR(a) KS_STR_(a)
#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)
#define REGISTER_EXTENSION(NAME)                                                  \\
  PyMODINIT_FUNC KS_CONCAT(PyInit_, NAME)() {                                     \\
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, KS_STR(NAME),      \\
                                        nullptr, 0, nullptr};                     \\
    return PyModule_Create(&module);                                              \\
  }
"""


@dataclass(frozen=True)
class Unit:
    """One translation unit to compile: `source` inside a tree made of the doc's file blocks."""

    doc: Path
    source: str  # path relative to the unit's root
    files: tuple[tuple[str, str], ...]  # (relative path, text) of every file block of the doc
    block: Block

    @property
    def id(self) -> str:
        return f"{self.doc.name}:{self.source}"


def compile_units() -> list[Unit]:
    units: list[Unit] = []
    for doc in DOCS:
        if not doc.exists():
            continue
        blocks = [b for b in parse_blocks(doc) if b.lang in COMPILED_LANGS and not b.is_fragment]
        files = tuple((b.file_path, b.text) for b in blocks if b.file_path)
        for index, b in enumerate(blocks):
            if b.file_path:
                if b.file_path.endswith((".cu", ".cpp", ".cc")):
                    units.append(Unit(doc, b.file_path, files, b))
            else:
                name = f"block_{b.line}{COMPILED_LANGS[b.lang]}"
                units.append(Unit(doc, name, files + ((name, b.text),), b))
    return units


def header_blocks() -> list[Block]:
    return [b for doc in DOCS if doc.exists() for b in parse_blocks(doc)
            if b.lang in COMPILED_LANGS and b.file_path and not b.file_path.endswith((".cu", ".cpp", ".cc"))]
