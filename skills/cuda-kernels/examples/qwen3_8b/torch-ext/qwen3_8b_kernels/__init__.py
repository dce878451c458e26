"""CUDA kernels for Qwen3-8B in transformers: RMSNorm (hidden and per-head q/k norm),
fused residual-add + RMSNorm, SwiGLU, rotate-half RoPE, and Qwen3's q/k norm + RoPE fused.

Every function takes any leading dimensions (the normalized / feature dimension last) and
float32, float16 or bfloat16. CUDA tensors run the CUDA kernels; CPU tensors, other
dtypes, inputs that need autograd, and shapes a kernel does not take go to the PyTorch
reference in ``reference.py``, so code written against this API also runs on CPU.
All ops work under ``torch.compile(fullgraph=True)`` (fake kernels registered below).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from . import reference
from ._ops import add_op_namespace_prefix, ops

__all__ = [
    "fused_add_rms_norm",
    "qk_norm_rope_",
    "reference",
    "rms_norm",
    "rope",
    "rope_",
    "swiglu",
]

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _kernel_ok(*tensors: torch.Tensor) -> bool:
    """True when the CUDA kernels can serve these tensors (the rest go to the reference)."""
    first = tensors[0]
    if not first.is_cuda or first.dtype not in _KERNEL_DTYPES:
        return False
    for t in tensors:
        if t.device != first.device or t.dtype != first.dtype:
            return False
    # The kernels have no backward: keep autograd working through the reference.
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return False
    return True


def _resolve_eps(eps: float | None, dtype: torch.dtype) -> float:
    # torch.nn.RMSNorm(eps=None) uses the eps of the computation dtype (finfo(float32).eps, or
    # float64's for float64), not x.dtype's: bf16's 7.8e-3 would change rows with small mean(x^2).
    if eps is not None:
        return float(eps)
    return torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float | None = 1e-6) -> torch.Tensor:
    """y = x * rsqrt(mean(x^2) + eps) * weight over the last dimension (fp32 math).

    ``weight=None`` skips the scale. Returns a new contiguous tensor of x's shape and dtype.
    """
    eps = _resolve_eps(eps, x.dtype)
    tensors = (x,) if weight is None else (x, weight)
    if x.dim() >= 1 and _kernel_ok(*tensors) and (weight is None or weight.shape == (x.shape[-1],)):
        return ops.rms_norm(x, weight, eps)
    return reference.rms_norm(x, weight, eps)


def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None, eps: float | None = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rms_norm(x + residual), x + residual) in one pass.

    The sum is rounded to x.dtype before it is normalized, as transformers' decoder layer
    does with ``hidden_states = residual + hidden_states``.
    """
    eps = _resolve_eps(eps, x.dtype)
    tensors = (x, residual) if weight is None else (x, residual, weight)
    if (
        x.dim() >= 1
        and x.shape == residual.shape
        and _kernel_ok(*tensors)
        and (weight is None or weight.shape == (x.shape[-1],))
    ):
        out, new_residual = ops.fused_add_rms_norm(x, residual, weight, eps)
        return out, new_residual
    return reference.fused_add_rms_norm(x, residual, weight, eps)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up in one pass (fp32 math, one rounding).

    gate and up may be row-strided views, e.g. the two halves of a fused gate_up
    projection output; they are read in place, not copied.
    """
    if gate.dim() >= 1 and gate.shape == up.shape and _kernel_ok(gate, up):
        return ops.swiglu(gate, up)
    return reference.swiglu(gate, up)


def _rope_args(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """cos/sin prepared for the kernel, or None when the reference must run."""
    if q.dim() != 4 or k.dim() != 4 or q.shape[-1] % 2 != 0:
        return None
    if cos.dim() == 2:  # [S, D]: one table for every batch entry
        cos, sin = cos.unsqueeze(0), sin.unsqueeze(0)
    if cos.dim() != 3 or cos.shape != sin.shape:
        return None
    # transformers hands cos/sin over in the activation dtype already; cast if not.
    if cos.dtype != q.dtype:
        cos, sin = cos.to(q.dtype), sin.to(q.dtype)
    if not _kernel_ok(q, k, cos, sin):
        return None
    return cos, sin


def rope_(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    """Rotate-half RoPE in place on q [B, Hq, S, D] and k [B, Hk, S, D], cos/sin [B or 1, S, D].

    transformers' ``apply_rotary_pos_emb`` (unsqueeze_dim=1); views such as
    ``x.view(B, S, H, D).transpose(1, 2)`` are updated through their strides.
    """
    args = _rope_args(q, k, cos, sin)
    if args is None:
        reference.rope_(q, k, cos if cos.dim() == 3 else cos.unsqueeze(0), sin if sin.dim() == 3 else sin.unsqueeze(0))
        return
    ops.rope_(q, k, *args)


def rope(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Out-of-place rope_: returns (q_embed, k_embed) with the strides of q and k."""
    args = _rope_args(q, k, cos, sin)
    if args is None:
        return reference.rope(q, k, cos if cos.dim() == 3 else cos.unsqueeze(0), sin if sin.dim() == 3 else sin.unsqueeze(0))
    q_embed, k_embed = ops.rope(q, k, *args)
    return q_embed, k_embed


def qk_norm_rope_(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float = 1e-6,
) -> None:
    """Qwen3's ``q_norm``, ``k_norm`` and ``apply_rotary_pos_emb`` in one pass, in place.

    q [B, S, Hq, D], k [B, S, Hk, D]: the projections as heads *before* ``transpose(1, 2)``,
    any token stride (slices of a merged qkv projection work). Each head row is normalized
    with its [D] weight, then rotated with cos/sin [B or 1, S, D] (or [S, D]); fp32 math,
    one rounding. Any even head_dim (the vector kernel when half is a power-of-two number
    of 16-byte packs, e.g. 128).
    """
    if cos.dim() == 2:
        cos, sin = cos.unsqueeze(0), sin.unsqueeze(0)
    if (
        q.dim() == 4
        and k.dim() == 4
        and q.shape[-1] % 2 == 0
        and cos.dim() == 3
        and cos.shape == sin.shape
        and q_weight.shape == k_weight.shape == (q.shape[-1],)
    ):
        if cos.dtype != q.dtype:
            cos, sin = cos.to(q.dtype), sin.to(q.dtype)
        if _kernel_ok(q, k, q_weight, k_weight, cos, sin):
            ops.qk_norm_rope_(q, k, q_weight, k_weight, cos, sin, float(eps))
            return
    reference.qk_norm_rope_(q, k, q_weight, k_weight, cos, sin, float(eps))


# Fake (meta) kernels, what torch.compile traces with. They must match the C++ ops exactly:
# rms_norm, fused_add_rms_norm and swiglu return contiguous tensors (at::empty), rope returns
# empty_like(q) / empty_like(k) (keeps a dense q's strides, e.g. a transposed view).
#
# One build can be imported more than once per process (`import qwen3_8b_kernels`, then
# kernels' get_local_kernel / get_kernel imports it again under `metadata.id`). The shared
# library loads once, so the C++ ops exist once; only these registrations repeat, always with
# the same functions (the namespace is unique to one build), so replacing one changes nothing.
# torch 2.8-2.11 refuse a second register_fake without allow_override=True; before 2.8 there
# is no flag and the first registration is kept. (A *copy* of the library is another file to
# the loader: it registers the namespace twice and aborts the process.)
_ALLOW_OVERRIDE = "allow_override" in inspect.signature(torch.library.register_fake).parameters


def _register_fake(op_name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`torch.library.register_fake` for this build's `op_name`, safe to run once per import."""
    qualname = add_op_namespace_prefix(op_name)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if _ALLOW_OVERRIDE:
            torch.library.register_fake(qualname, fn, allow_override=True)
            return fn
        try:
            torch.library.register_fake(qualname, fn)
        except RuntimeError as exc:  # torch < 2.8: "... already has a(n) fake impl registered at ..."
            if "already has" not in str(exc):
                raise
        return fn

    return decorate


@_register_fake("rms_norm")
def _rms_norm_fake(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    return x.new_empty(x.shape)


@_register_fake("fused_add_rms_norm")
def _fused_add_rms_norm_fake(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    return x.new_empty(x.shape), x.new_empty(x.shape)


@_register_fake("swiglu")
def _swiglu_fake(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return gate.new_empty(gate.shape)


@_register_fake("rope_")
def _rope__fake(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    return None


@_register_fake("rope")
def _rope_fake(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(q), torch.empty_like(k)


@_register_fake("qk_norm_rope_")
def _qk_norm_rope__fake(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
) -> None:
    return None


@_register_fake("rms_norm_tuned")
def _rms_norm_tuned_fake(
    x: torch.Tensor,
    residual: torch.Tensor | None,
    weight: torch.Tensor | None,
    eps: float,
    threads: int,
    rows_per_group: int,
    persistent: int,
    hint: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    return x.new_empty(x.shape), x.new_empty(x.shape) if residual is not None else x.new_empty((0,))


@_register_fake("swiglu_tuned")
def _swiglu_tuned_fake(gate: torch.Tensor, up: torch.Tensor, threads: int, vpt: int, exact: int, width: int = 0,
                       flat: int = -1) -> torch.Tensor:
    return gate.new_empty(gate.shape)


@_register_fake("rope_tuned_")
def _rope_tuned__fake(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    tokens_per_block: int,
    tokens_per_thread: int,
    reg_cap: int,
    heads_per_thread: int = 0,
    variant: int = 0,
) -> None:
    return None


# Kernel Hub layer classes: kernel-builder packages expose them as `<package>.layers`.
try:
    from . import layers  # noqa: F401
except ModuleNotFoundError as _exc:  # pragma: no cover - only while layers.py is absent
    if _exc.name != f"{__name__}.layers":
        raise
