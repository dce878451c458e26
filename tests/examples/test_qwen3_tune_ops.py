"""benchmarks/qwen3_8b/tune_ops.py: the launch-configuration sweep the repository runs through the
shipped bench_ops.py (CPU only: the configurations, the hook and the JSON they fill)."""

from __future__ import annotations

import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "skills" / "cuda-kernels" / "examples" / "qwen3_8b"
TUNE_OPS = REPO / "benchmarks" / "qwen3_8b" / "tune_ops.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("qwen3_tune_ops", TUNE_OPS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tune_ops = _load()


def test_every_published_sweep_entry_is_a_configuration_of_the_tool() -> None:
    published = json.loads((EXAMPLE / "benchmarks" / "results.json").read_text())
    assert published["tuning"]
    for entry in published["tuning"]:
        assert entry["shape"] in tune_ops.TUNED_CASES[entry["op"]], entry
        assert entry["config"] in tune_ops.tuning_configs(entry["op"], entry["shape"]), entry
    shapes = {(r["op"], r["shape"]) for r in published["results"]}
    assert {(op, s) for op, labels in tune_ops.TUNED_CASES.items() for s in labels} <= shapes


def test_the_tool_is_bench_ops_with_the_sweep_hooked_in(tmp_path: Path) -> None:
    assert "tune" in inspect.signature(tune_ops.bench_ops.main).parameters
    assert not hasattr(tune_ops.bench_ops, "run_tuning")  # the sweep ships nowhere in the skill
    results = [{"op": "swiglu", "shape": "1x12288", "providers": {"kernel": {"us": 2.0}, "compile": {"us": 1.5}}}]
    rows = [{"op": "swiglu", "shape": "1x12288", "config": {}, "default": True, "us": 2.0, "pct_copy": 1.0},
            {"op": "swiglu", "shape": "1x12288", "config": {"threads": 64, "vpt": 1}, "default": False, "us": 1.2,
             "pct_copy": 1.6}]
    tune_ops.attach_tuning(results, rows)
    assert results[0]["tuned"] == {"config": {"threads": 64, "vpt": 1}, "name": "t=64 vpt=1", "us": 1.2,
                                   "pct_copy": 1.6, "vs_best_peer": 1.25}
    helped = subprocess.run([sys.executable, str(TUNE_OPS), "--help"], capture_output=True, text=True, timeout=60,
                            check=False)
    assert helped.returncode == 0 and "--package-path" in helped.stdout and "--tune" not in helped.stdout
