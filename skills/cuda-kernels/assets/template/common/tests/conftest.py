"""Test setup for __NAME__: `gpu` tests need CUDA and are skipped cleanly without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def triton_interpreter() -> Callable[[str], Any]:
    """Run Python `code` under Triton's interpreter (TRITON_INTERPRET=1: Triton kernels on CPU
    tensors) with benchmarks/ importable, in a fresh process because the variable is read
    when a kernel is defined; return the JSON its last line of output prints. Skips
    without triton."""
    pytest.importorskip("triton")

    def run(code: str) -> Any:
        path = os.pathsep.join([str(BENCHMARKS), os.environ.get("PYTHONPATH", "")])
        env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=path)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900,
                              check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    return run
