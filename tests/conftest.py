"""Suite-wide rules: `gpu` tests need a CUDA device and are skipped cleanly without one; under
pytest-xdist the files that compile CUDA go out to the workers first."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path

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


# The session builds (minutes of nvcc each) and the fixtures that reach them.
BUILDS = {"kernel_project_root": "scaffolds", "ltx_build": "ltx_video", "ltx_kernels": "ltx_video",
          "qwen3_kernels": "qwen3_8b"}


def xdist_tiers(items: list[pytest.Item]) -> dict[Path, int]:
    """Each test file's turn under `--dist loadfile`, longest work first so that no worker is left
    with a long file at the end: 0 the first file to need each build, 1 other files with slow
    tests, 2 files that reuse a build (made by then, so no worker waits on its lock), 3 the rest."""
    builds: dict[Path, set[str]] = {}
    slow: set[Path] = set()
    for item in items:  # files in collection order (dicts keep it)
        builds.setdefault(item.path, set()).update(BUILDS[f] for f in getattr(item, "fixturenames", ()) if f in BUILDS)
        if item.get_closest_marker("slow") is not None:
            slow.add(item.path)
    tiers: dict[Path, int] = {}
    claimed: set[str] = set()
    for path, needs in builds.items():
        tiers[path] = 0 if needs - claimed else 2 if needs else 1 if path in slow else 3
        claimed |= needs
    return tiers


# About ten files compile CUDA or build wheels; more workers than that only import torch again
# (hundreds of MB each) while every build runs ninja on all the cores.
MAX_AUTO_WORKERS = 8


@pytest.hookimpl(wrapper=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> Iterator[None]:
    """`-n auto`: one worker per core, at most MAX_AUTO_WORKERS (PYTEST_XDIST_AUTO_NUM_WORKERS wins)."""
    n = yield
    return n if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") else min(n, MAX_AUTO_WORKERS)


def pytest_configure(config: pytest.Config) -> None:
    # xdist hands out the files with the most tests first by default; here they go in the order
    # xdist_tiers gives them (it sorts every worker's collection).
    if getattr(config.option, "dist", "no") == "loadfile":
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords and not _cuda_available():
            item.add_marker(skip_gpu)
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike (stable sort)
        tiers = xdist_tiers(items)
        items.sort(key=lambda item: tiers[item.path])
