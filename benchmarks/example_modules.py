"""Load a module of a shipped example by its path, under a name of its own.

Both examples ship modules of the same name (benchmarks/bench_ops.py,
integration/benchmark_e2e.py). In one process (pytest runs every repository tool's test in
one) a plain `import bench_ops` would return whichever example's file was imported first, for
both. The repository tools under benchmarks/ load them through load_example_module instead.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[1] / "skills" / "cuda-kernels" / "examples"


def load_example_module(example: str, relpath: str) -> ModuleType:
    """examples/<example>/<relpath> as the module `<example>_<file stem>`, loaded once."""
    name = f"{example}_{Path(relpath).stem}"
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / example / relpath)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {EXAMPLES / example / relpath}")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: dataclasses look their own module up in sys.modules.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
