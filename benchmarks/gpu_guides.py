#!/usr/bin/env python3
"""Rewrite the GPU tables of the skill's hardware guides from skills/cuda-kernels/assets/gpu_specs.json.

Repository tooling: maintainers run it after editing the JSON; the skill ships only
scripts/gpu_specs.py, whose `--markdown KEY` prints one table on its own. A guide marks each
table's place

    <!-- gpu-specs:KEY -->
    ...table...
    <!-- /gpu-specs -->

and within one guide each source's link is defined once (at its first table), a GPU whose
compute capability an earlier table showed points there for the per-SM limit rows, and a
value no NVIDIA document was read for says how to get it on the machine once (later tables
point to the first GPU that said it).

    python benchmarks/gpu_guides.py            # rewrite the guides in place
    python benchmarks/gpu_guides.py --check    # exit 1 if a guide's table is stale
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

SKILL = Path(__file__).resolve().parents[1] / "skills" / "cuda-kernels"
TABLE_BLOCK = re.compile(r"(<!-- gpu-specs:(?P<key>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /gpu-specs -->)", re.DOTALL)


def _load_gpu_specs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_specs", SKILL / "scripts" / "gpu_specs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gpu_specs = _load_gpu_specs()


def guide_table(specs: dict[str, Any], key: str, *, limits_above: str | None, defined: set[str],
                unread: dict[tuple[str, str], str]) -> str:
    """One guide table. `defined` holds the link names earlier tables of the guide defined;
    `unread` maps (row, value) of a missing value to the first GPU that said how to get it.
    Both are updated here."""
    entry = gpu_specs.gpu_entry(specs, key)
    lines = [f"| {entry['name']} | Value | Source |", "|---|---|---|"]
    for label, value, source in gpu_specs.rows_for(specs, key, cc_rows=limits_above is None):
        if source == "none read yet":
            first = unread.setdefault((label, value), entry["name"])
            if first != entry["name"]:
                value = f"not in this file yet: as for the {first}"
            source = ""
        lines.append(f"| {label} | {value} | {source} |".replace("|  |", "| |"))
    if limits_above is not None:
        lines.append(f"| Per-SM and per-block limits | as in the {limits_above} table above | |")
    links = []
    for name in dict.fromkeys(gpu_specs._facts_of(specs, key, limits_above is None)):
        if specs["sources"][name]["kind"] == "document" and name not in defined:
            defined.add(name)
            links.append(f"[{name}]: {specs['sources'][name]['url']}")
    return "\n".join(lines + ([""] + links if links else []))


def guide_tables(specs: dict[str, Any], text: str) -> dict[str, str]:
    """KEY -> the table each `<!-- gpu-specs:KEY -->` block of a guide must hold."""
    first: dict[str, str] = {}
    defined: set[str] = set()
    unread: dict[tuple[str, str], str] = {}
    tables = {}
    for m in TABLE_BLOCK.finditer(text):
        key = m.group("key")
        cc = gpu_specs.gpu_entry(specs, key)["compute_capability"]["value"]
        tables[key] = guide_table(specs, key, limits_above=first.get(cc), defined=defined, unread=unread)
        first.setdefault(cc, gpu_specs.gpu_entry(specs, key)["name"])
    return tables


def render_guide(specs: dict[str, Any], text: str) -> str:
    """The guide text with every `<!-- gpu-specs:KEY -->` block replaced by the current table."""
    tables = guide_tables(specs, text)
    return TABLE_BLOCK.sub(lambda m: m.group(1) + tables[m.group("key")] + "\n" + m.group(4), text)


def guides(specs: dict[str, Any]) -> list[Path]:
    return [SKILL / guide for guide in sorted({entry["guide"] for entry in specs["gpus"].values()})]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table is stale")
    args = parser.parse_args(argv)
    specs = gpu_specs.load_specs()
    stale = 0
    for path in guides(specs):
        text = path.read_text(encoding="utf-8")
        new = render_guide(specs, text)
        if new == text:
            continue
        if args.check:
            print(f"{path}: a GPU table differs from assets/gpu_specs.json (run without --check)")
            stale += 1
        else:
            path.write_text(new, encoding="utf-8")
            print(f"updated {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
