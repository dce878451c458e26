"""Long-row reductions: logsumexp and cross-entropy over a vocabulary of logits.

CUDA tensors of float32, float16 or bfloat16 run the kernels (fp32 math, fp32 results);
anything else (CPU tensors, other dtypes, autograd) goes to ``reference.py``. Both ops have
fake kernels, so they trace under ``torch.compile(fullgraph=True)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from . import reference
from ._ops import add_op_namespace_prefix, ops

__all__ = ["cross_entropy", "logsumexp", "reference"]

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# How a row is split (kernel_src/long_rows.h): "auto" picks per shape and device.
PATHS = {"auto": 0, "row": 1, "cluster": 2, "multipass": 3}


def _kernel_ok(x: torch.Tensor) -> bool:
    return x.is_cuda and x.dtype in _KERNEL_DTYPES and not (torch.is_grad_enabled() and x.requires_grad)


def logsumexp(logits: torch.Tensor, *, path: str = "auto") -> torch.Tensor:
    """log(sum(exp(logits))) over the last dimension, as a float32 tensor of shape
    logits.shape[:-1]. An all -inf row gives -inf."""
    if not _kernel_ok(logits):
        return reference.logsumexp(logits)
    return ops.logsumexp(logits, PATHS[path])


def cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, ignore_index: int = -100, *, path: str = "auto"
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, lse) per row, float32: loss = lse - logits[..., target], 0 where target ==
    ignore_index (F.cross_entropy(..., reduction="none")); reduce it as you need."""
    if not _kernel_ok(logits):
        return reference.cross_entropy(logits, target, ignore_index), reference.logsumexp(logits)
    return ops.cross_entropy(logits, target, ignore_index, PATHS[path])


# Safe to run once per import of the same build (see the qwen3_8b example for why).
_ALLOW_OVERRIDE = "allow_override" in inspect.signature(torch.library.register_fake).parameters


def _register_fake(op_name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    qualname = add_op_namespace_prefix(op_name)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if _ALLOW_OVERRIDE:
            torch.library.register_fake(qualname, fn, allow_override=True)
            return fn
        try:
            torch.library.register_fake(qualname, fn)
        except RuntimeError as exc:
            if "already has" not in str(exc):
                raise
        return fn

    return decorate


@_register_fake("logsumexp")
def _logsumexp_fake(logits: torch.Tensor, path: int = 0) -> torch.Tensor:
    return logits.new_empty(logits.shape[:-1], dtype=torch.float32)


@_register_fake("cross_entropy")
def _cross_entropy_fake(
    logits: torch.Tensor, target: torch.Tensor, ignore_index: int = -100, path: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    shape = logits.shape[:-1]
    return logits.new_empty(shape, dtype=torch.float32), logits.new_empty(shape, dtype=torch.float32)
