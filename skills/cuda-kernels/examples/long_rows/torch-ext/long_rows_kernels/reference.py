"""PyTorch reference of the long-row ops: the CPU path of the package and the ground truth
of its tests (call it with float64 inputs for that)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def logsumexp(logits: torch.Tensor) -> torch.Tensor:
    """log(sum(exp(logits))) over the last dimension, in float32 (float64 stays float64)."""
    x = logits if logits.dtype == torch.float64 else logits.float()
    return torch.logsumexp(x, dim=-1)


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Per-row loss lse - logits[target] (0 where target == ignore_index), as
    F.cross_entropy(..., reduction="none") computes it, in float32 (float64 stays)."""
    x = logits if logits.dtype == torch.float64 else logits.float()
    flat = x.reshape(-1, x.shape[-1])
    loss = F.cross_entropy(flat, target.reshape(-1), ignore_index=ignore_index, reduction="none")
    return loss.reshape(x.shape[:-1])
