"""Suite-wide rules: `gpu` tests need a CUDA device and are skipped cleanly without one."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def _cuda_available() -> bool:
    # torch is imported only when a gpu-marked test is collected, so CLI-only
    # runs never pay for it (and never need torch installed at all).
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords and not _cuda_available():
            item.add_marker(skip_gpu)
