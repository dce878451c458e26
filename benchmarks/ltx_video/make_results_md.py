#!/usr/bin/env python3
"""Render the end-to-end benchmark JSON (benchmark_e2e.py --out) as Markdown.

    python benchmarks/ltx_video/make_results_md.py RUN/e2e_h200.json -o RUN/RESULTS.md

The renderer is benchmark_e2e.py's own (its --markdown writes the same during a run); this
renders a JSON after the fact. Every number comes from the JSON. Standard library only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

BENCHMARK_E2E = (Path(__file__).resolve().parents[2] / "skills" / "cuda-kernels" / "examples" / "ltx_video"
                 / "integration" / "benchmark_e2e.py")


def _renderer():
    spec = importlib.util.spec_from_file_location("ltx_benchmark_e2e_render", BENCHMARK_E2E)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.render


render = _renderer()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", type=Path, help="JSON written by benchmark_e2e.py --out")
    p.add_argument("-o", "--out", type=Path, default=None, help="write here instead of stdout")
    args = p.parse_args(argv)
    try:
        data = json.loads(args.json.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: cannot read {args.json}: {exc}", file=sys.stderr)
        return 1
    # name the JSON relative to where the Markdown goes (results/e2e_h200.json next to RESULTS.md)
    source = Path(os.path.relpath(args.json.resolve(), (args.out or Path(".")).resolve().parent)).as_posix() \
        if args.out else args.json.name
    text = render(data, source=source)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
