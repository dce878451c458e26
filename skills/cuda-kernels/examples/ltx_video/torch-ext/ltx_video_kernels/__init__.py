"""CUDA kernels for diffusers' LTX-Video transformer (verified against diffusers 0.42.1).

- ``rms_norm``: the weightless norm1/norm2 (eps 1e-6) and the norm_q/norm_k over all heads
  (weight of inner_dim 2048, eps 1e-5)
- ``rms_norm_modulate``: AdaLN, ``rms_norm(x) * (1 + scale) + shift`` in one pass
- ``add_rms_norm_modulate``: the block's residual add (optionally gated) fused with the next
  AdaLN norm; returns (normed, new residual)
- ``gelu_tanh``: the FeedForward activation, ``GELU(approximate="tanh")``
- ``rope_interleaved``: ``transformer_ltx.apply_rotary_emb`` (interleaved pairs, fp32 cos/sin)
- ``rms_norm_rope`` / ``rms_norm_rope_qk``: norm_q/norm_k fused with the rotary embedding;
  the q/k form reads cos/sin once for both
- ``rms_norm_with_config``, ``rms_norm_modulate_with_config``,
  ``add_rms_norm_modulate_with_config``, ``rope_interleaved_with_config``, ``gelu_tanh_with_config``,
  ``rms_norm_rope_qk_with_config``: forced launch configurations for tuning sweeps
- ``set_pdl``: programmatic dependent launch on or off (on by default on compute
  capability 9.0+; ``LTX_VIDEO_PDL=0`` in the environment turns it off)
- ``set_cache_hints``: the default ops' evict-first cache hints on or off (off by default;
  ``LTX_VIDEO_CACHE_HINTS=1`` in the environment turns them on)

Every function takes any leading dimensions (feature dimension last) and float32, float16
or bfloat16. CUDA tensors run the kernels; CPU tensors, mixed dtypes (e.g. an fp32 scale
with bf16 x, where diffusers' expression promotes), inputs that need autograd, and shapes
a kernel does not take go to the PyTorch reference in ``reference.py``, which is diffusers'
own expression: code written against this API also runs on CPU. Outputs are new
contiguous tensors in x's dtype. All ops work under ``torch.compile(fullgraph=True)``
(fake kernels registered below).
"""

from __future__ import annotations

import torch

from . import reference
from ._ops import add_op_namespace_prefix, ops

__all__ = [
    "add_rms_norm_modulate",
    "add_rms_norm_modulate_with_config",
    "gelu_tanh",
    "gelu_tanh_with_config",
    "layers",
    "reference",
    "rms_norm",
    "rms_norm_modulate",
    "rms_norm_modulate_with_config",
    "rms_norm_rope",
    "rms_norm_rope_qk",
    "rms_norm_rope_qk_with_config",
    "rms_norm_with_config",
    "rope_interleaved",
    "rope_interleaved_with_config",
    "set_cache_hints",
    "set_pdl",
]

_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _kernel_ok(x: torch.Tensor, *others: torch.Tensor | None, fp32: tuple[torch.Tensor, ...] = ()) -> bool:
    """True when the CUDA kernels can serve these tensors; the rest go to the reference.

    ``others`` must match x's device and dtype; ``fp32`` tensors (RoPE's cos/sin) must be
    float32 on x's device.
    """
    if not x.is_cuda or x.dtype not in _KERNEL_DTYPES or x.dim() < 1:
        return False
    present = [t for t in others if t is not None]
    for t in present:
        if t.device != x.device or t.dtype != x.dtype:
            return False
    for t in fp32:
        if t.device != x.device or t.dtype != torch.float32:
            return False
    # The kernels register no backward: keep autograd working through the reference.
    if torch.is_grad_enabled() and any(t.requires_grad for t in (x, *present, *fp32)):
        return False
    return True


def _weight_ok(weight: torch.Tensor | None, x: torch.Tensor) -> bool:
    return weight is None or (weight.dim() == 1 and weight.shape[0] == x.shape[-1])


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """``x * rsqrt(mean(x^2, -1) + eps) [* weight]`` in fp32, rounded once to x's dtype.

    ``weight=None`` is diffusers' ``RMSNorm(elementwise_affine=False)``: no ones-tensor.
    """
    if _kernel_ok(x, weight) and _weight_ok(weight, x):
        return ops.rms_norm(x, weight, float(eps))
    return reference.rms_norm(x, weight, eps)


def rms_norm_modulate(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """AdaLN: ``rms_norm(x, weight, eps) * (1 + scale) + shift`` in one pass.

    scale/shift broadcast to x as LTX passes them: ``[B, 1, D]`` (or ``[B, S, D]`` with
    per-token timesteps) strided views into the ``[B, T, 6, D]`` AdaLN table, read in place.
    """
    if _kernel_ok(x, weight, scale, shift) and _weight_ok(weight, x):
        return ops.rms_norm_modulate(x, weight, scale, shift, float(eps))
    return reference.rms_norm_modulate(x, weight, scale, shift, eps)


def add_rms_norm_modulate(
    x: torch.Tensor,
    residual: torch.Tensor,
    gate: torch.Tensor | None,
    weight: torch.Tensor | None,
    scale: torch.Tensor | None,
    shift: torch.Tensor | None,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``h = residual + x [* gate]``; returns ``(rms_norm(h) [* (1 + scale) + shift], h)``.

    h is rounded to x's dtype before it is normalized, as the block stores its residual
    stream. scale and shift: both or neither.
    """
    if (scale is None) != (shift is None):
        raise ValueError("add_rms_norm_modulate: pass both scale and shift, or neither")
    if _kernel_ok(x, residual, gate, weight, scale, shift) and _weight_ok(weight, x) and residual.shape == x.shape:
        out, h = ops.add_rms_norm_modulate(x, residual, gate, weight, scale, shift, float(eps))
        return out, h
    return reference.add_rms_norm_modulate(x, residual, gate, weight, scale, shift, eps)


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """``F.gelu(x, approximate="tanh")``: the LTX FeedForward activation."""
    if _kernel_ok(x):
        return ops.gelu_tanh(x)
    return reference.gelu_tanh(x)


def _rope_shapes_ok(x: torch.Tensor) -> bool:
    return x.shape[-1] % 2 == 0


def rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``transformer_ltx.apply_rotary_emb(x, (cos, sin))``.

    x: ``[B, S, C]`` (any leading dims), cos/sin: float32, broadcastable to x
    (LTX passes ``[B, S, C]``).
    """
    if _kernel_ok(x, fp32=(cos, sin)) and _rope_shapes_ok(x):
        return ops.rope_interleaved(x, cos, sin)
    return reference.rope_interleaved(x, cos, sin)


def gelu_tanh_with_config(x: torch.Tensor, threads_per_block: int, unroll: int) -> torch.Tensor:
    """gelu_tanh with a forced launch configuration, for the GELU sweep and tests (CUDA only).

    Blocks of ``threads_per_block`` threads (64, 128 or 256), each thread moving ``unroll``
    16-byte chunks (1, 2, 4 or 8; elements on the unaligned path) per grid-stride step.
    Every configuration computes each element the same way: the same bits as gelu_tanh.
    """
    return ops.gelu_tanh_with_config(x, int(threads_per_block), int(unroll))


def rope_interleaved_with_config(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    chunks_per_thread: int,
    elements_per_thread: int = 0,
    flags: int = 0,
) -> torch.Tensor:
    """rope_interleaved with a forced kernel, for the RoPE sweep and tests (CUDA only).

    ``chunks_per_thread=0``: the per-row kernel (any layout). 1, 2 or 4: the flat kernel,
    each thread rotating that many 16-byte chunks of x; it needs x, cos and sin stored row
    after row (cos/sin of x's shape), 16-byte aligned, and refuses other inputs.
    ``elements_per_thread`` 2 or 4 (with ``chunks_per_thread=1``): the narrow flat kernel,
    each thread rotating that many elements instead of a 16-byte chunk (same layout checks).
    ``flags=ROPE_STREAMING`` (narrow kernel only): its loads and stores carry the streaming
    cache hint (ld/st.global.cs); the results are the same bits.
    """
    return ops.rope_interleaved_with_config(x, cos, sin, int(chunks_per_thread), int(elements_per_thread), int(flags))


def rms_norm_rope(
    x: torch.Tensor, weight: torch.Tensor | None, cos: torch.Tensor, sin: torch.Tensor, eps: float
) -> torch.Tensor:
    """``apply_rotary_emb(rms_norm(x, weight, eps), (cos, sin))`` in one pass.

    The normalized value is rotated in fp32 without the bf16 rounding eager applies between
    the two steps (one rounding instead of two).
    """
    if _kernel_ok(x, weight, fp32=(cos, sin)) and _weight_ok(weight, x) and _rope_shapes_ok(x):
        return ops.rms_norm_rope(x, weight, cos, sin, float(eps))
    return reference.rms_norm_rope(x, weight, cos, sin, eps)


def rms_norm_rope_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    weight_q: torch.Tensor | None,
    weight_k: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rms_norm_rope(q, weight_q, ...), rms_norm_rope(k, weight_k, ...))`` in one kernel.

    LTX's self-attention (attn1): q = norm_q(to_q(h)), k = norm_k(to_k(h)), both rotated by
    the same cos/sin. q and k must have the same shape; cos/sin are read once.
    """
    if (
        _kernel_ok(q, k, weight_q, weight_k, fp32=(cos, sin))
        and q.shape == k.shape
        and _weight_ok(weight_q, q)
        and _weight_ok(weight_k, k)
        and _rope_shapes_ok(q)
    ):
        q_out, k_out = ops.rms_norm_rope_qk(q, k, weight_q, weight_k, cos, sin, float(eps))
        return q_out, k_out
    return reference.rms_norm_rope_qk(q, k, weight_q, weight_k, cos, sin, eps)


def rms_norm_rope_qk_with_config(
    q: torch.Tensor,
    k: torch.Tensor,
    weight_q: torch.Tensor | None,
    weight_k: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
    threads_per_row: int,
    chunks_per_thread: int,
    flags: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """rms_norm_rope_qk at a forced launch configuration, for the q/k sweep (CUDA only).

    ``threads_per_row`` threads share a row, each holding ``chunks_per_thread`` (1-4)
    16-byte chunks of q and of k with their cos/sin; it needs the 16-byte path (last dim a
    multiple of 16 bytes, aligned operands) and refuses other inputs. ``flags`` QK_LEAN:
    the lean one-chunk kernel, held to 48 registers with 32-bit row offsets
    (chunks_per_thread 1, threads_per_row <= 256, fewer than 2^31 rows; bit for bit the same).
    rms_norm_rope_qk and rms_norm_rope run it wherever those hold on the 16-byte path (d <= 2048
    in bf16/fp16, <= 1024 in fp32); flags 0 here runs the plain one-chunk kernel, and
    QK_LEAN | LEAN_HINTS the lean one with evict-first loads of q, k, cos and sin.
    QK_LEAN | QK_PREFETCH (with or without LEAN_HINTS): the lean kernel on a persistent grid
    whose threads request their next row before reducing the current one (bit for bit the
    same); rms_norm_rope_qk runs it, without hints, on calls of up to 7 rounds of its grid
    (2772 rows of 2048 on a 132-SM H200).
    """
    q_out, k_out = ops.rms_norm_rope_qk_with_config(
        q, k, weight_q, weight_k, cos, sin, float(eps), int(threads_per_row), int(chunks_per_thread), int(flags))
    return q_out, k_out


def rms_norm_with_config(
    x: torch.Tensor, weight: torch.Tensor | None, eps: float, threads_per_row: int, chunks_per_thread: int
) -> torch.Tensor:
    """rms_norm with a forced launch configuration, for tuning sweeps and tests (CUDA only).

    ``threads_per_row`` threads (a power of two <= 32 or a multiple of 32 <= 512) each hold
    ``chunks_per_thread`` 16-byte chunks of a row in registers (1, 2, 3, 4, 6, 8, 12, 16);
    ``chunks_per_thread=0`` runs the looping kernel, one block of threads_per_row per row.
    """
    return ops.rms_norm_with_config(x, weight, float(eps), int(threads_per_row), int(chunks_per_thread))


def set_pdl(enable: bool) -> bool:
    """Switch programmatic dependent launch for every op of this package; returns the old setting.

    On compute capability 9.0+ the kernels are launched with CUDA's programmatic stream
    serialization attribute, so their blocks can be placed on the GPU while the previous
    kernel on the stream finishes; each block waits (griddepcontrol.wait) until that
    kernel's writes are visible before touching memory. Outputs are bit for bit the same
    either way; this exists for A/B timing. The process-wide default is on unless the
    environment had LTX_VIDEO_PDL=0 when the first op ran.
    """
    return bool(ops.set_pdl(bool(enable)))


def set_cache_hints(enable: bool) -> bool:
    """Switch the default ops' cache hints for every op of this package; returns the old setting.

    Switched on, calls that move little enough for the L2 cache (the q/k norm + RoPE up to
    1.5x its size, the weightless fused add and small modulate calls up to 1.25x) load their
    inputs evict-first, as torch.compile's kernels do, so the lines they write stay in L2.
    Off by default: with a fresh output per call, as in a model, every hinted op took 2-7 %
    more time on the H200; the switch exists for A/B timing in a model. Outputs are bit for bit the same either way. The process-wide
    default is off unless the environment had LTX_VIDEO_CACHE_HINTS=1 when the first op ran.
    """
    return bool(ops.set_cache_hints(bool(enable)))


# AdaLN launch knobs of the *_with_config ops (flags bits).
ADALN_STREAM = 1  # ld.global.cs / st.global.cs on x, residual and the outputs
ADALN_PREFETCH = 2  # request the next row's x before reducing this one
ADALN_LATE = 4  # rows kernel: read scale/shift after the reduction (fewer registers)
ADALN_PIPE2 = 8  # pipelined kernel: persistent grid, next rows copied to shared memory, 2 stages
ADALN_PIPE3 = 16  # the same with 3 stages (two row groups in flight ahead)
ADALN_LEAN = 64  # rows kernel at 1-2 chunks per thread held to 40 / 64 registers, 32-bit row offsets
ADALN_RELOAD = 128  # ADALN_LEAN reading x (or the h it stored) again after the reduction: 32-64 registers
LEAN_HINTS = 256  # with ADALN_LEAN or QK_LEAN: loads carry torch.compile's cache hints (evict-first / -last)
QK_LEAN = 64  # rms_norm_rope_qk_with_config: the one-chunk kernel held to 48 registers
QK_PREFETCH = 512  # with QK_LEAN: persistent grid, each thread's next row requested before this row's reduction
ROPE_STREAMING = 1  # rope_interleaved_with_config, narrow kernel: ld/st.global.cs on every access


def rms_norm_modulate_with_config(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float,
    threads_per_row: int,
    chunks_per_thread: int,
    rows_per_block: int = 0,
    flags: int = 0,
) -> torch.Tensor:
    """rms_norm_modulate with a forced launch configuration, for the AdaLN sweep (CUDA only).

    ``rows_per_block=0``: the rows kernel at ``threads_per_row`` x ``chunks_per_thread`` (0
    chunks = the looping kernel) with ``flags`` 0, ADALN_LATE (threads_per_row <= 256,
    chunks >= 1), ADALN_PIPE2 / ADALN_PIPE3 (the pipelined kernel: threads_per_row <= 256,
    chunks 1-4), ADALN_LEAN or ADALN_RELOAD alone, or ADALN_LEAN | LEAN_HINTS (chunks 1-2, fewer
    than 2^31 rows); the constants above say what each does. ``rows_per_block >= 1``: the
    column-stationary kernel, each group of threads_per_row threads (<= 256) holding one
    batch's weight/scale/shift chunks for up to rows_per_block of its rows (chunks 1-4), flags
    ADALN_STREAM | ADALN_PREFETCH; per-token scale/shift run the rows kernel instead. All
    variants give the default's bits; the pipelined, lean and column-stationary kernels need
    the 16-byte path (last dim a multiple of 16 bytes, aligned operands) and refuse the rest.
    """
    return ops.rms_norm_modulate_with_config(
        x, weight, scale, shift, float(eps), int(threads_per_row), int(chunks_per_thread), int(rows_per_block),
        int(flags),
    )


def add_rms_norm_modulate_with_config(
    x: torch.Tensor,
    residual: torch.Tensor,
    gate: torch.Tensor | None,
    weight: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float,
    threads_per_row: int,
    chunks_per_thread: int,
    rows_per_block: int = 0,
    flags: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """add_rms_norm_modulate with a forced launch configuration (CUDA only; scale and shift
    required). The knobs are those of :func:`rms_norm_modulate_with_config`; the gate, like
    scale and shift, stays in registers when it is per batch."""
    out, h = ops.add_rms_norm_modulate_with_config(
        x, residual, gate, weight, scale, shift, float(eps), int(threads_per_row), int(chunks_per_thread),
        int(rows_per_block), int(flags),
    )
    return out, h


# ---------------------------------------------------------------------------------------
# Fake (meta) kernels: shapes, dtypes and strides of the outputs, so torch.compile and
# FakeTensorMode can trace through the ops without running them. They must match the
# CUDA ops exactly: new contiguous tensors of x's shape and dtype.


def _like(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _register_fake(op_name: str):
    """register_fake for this build's op, safe when the module runs twice.

    One build's files can be imported twice in a process (from build_local's output and
    again through kernels.get_local_kernel on a layout that links to them): the loader
    recognises the file and loads the library once, this module runs twice, and both runs
    register the same functions for the build-unique namespace. (A copy of the files at
    another path is a second library, whose op registration aborts the process.) torch 2.8-2.11
    refuse the second registration unless allow_override=True; older torch has no such
    flag and keeps the first.
    """
    qualname = add_op_namespace_prefix(op_name)

    def decorate(fn):
        try:
            torch.library.register_fake(qualname, fn, allow_override=True)
        except TypeError:  # torch < 2.8
            try:
                torch.library.register_fake(qualname, fn)
            except RuntimeError as exc:
                if "already has" not in str(exc):
                    raise
        return fn

    return decorate


@_register_fake("rms_norm")
def _rms_norm_fake(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    return _like(x)


@_register_fake("rms_norm_modulate")
def _rms_norm_modulate_fake(
    x: torch.Tensor, weight: torch.Tensor | None, scale: torch.Tensor, shift: torch.Tensor, eps: float
) -> torch.Tensor:
    return _like(x)


@_register_fake("add_rms_norm_modulate")
def _add_rms_norm_modulate_fake(
    x: torch.Tensor,
    residual: torch.Tensor,
    gate: torch.Tensor | None,
    weight: torch.Tensor | None,
    scale: torch.Tensor | None,
    shift: torch.Tensor | None,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    return _like(x), _like(x)


@_register_fake("rms_norm_with_config")
def _rms_norm_with_config_fake(
    x: torch.Tensor, weight: torch.Tensor | None, eps: float, threads_per_row: int, chunks_per_thread: int
) -> torch.Tensor:
    return _like(x)


@_register_fake("rms_norm_modulate_with_config")
def _rms_norm_modulate_with_config_fake(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float,
    threads_per_row: int,
    chunks_per_thread: int,
    rows_per_block: int,
    flags: int,
) -> torch.Tensor:
    return _like(x)


@_register_fake("add_rms_norm_modulate_with_config")
def _add_rms_norm_modulate_with_config_fake(
    x: torch.Tensor,
    residual: torch.Tensor,
    gate: torch.Tensor | None,
    weight: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor,
    eps: float,
    threads_per_row: int,
    chunks_per_thread: int,
    rows_per_block: int,
    flags: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    return _like(x), _like(x)


@_register_fake("gelu_tanh")
def _gelu_tanh_fake(x: torch.Tensor) -> torch.Tensor:
    return _like(x)


@_register_fake("gelu_tanh_with_config")
def _gelu_tanh_with_config_fake(x: torch.Tensor, threads_per_block: int, unroll: int) -> torch.Tensor:
    return _like(x)


@_register_fake("rope_interleaved")
def _rope_interleaved_fake(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return _like(x)


@_register_fake("rope_interleaved_with_config")
def _rope_interleaved_with_config_fake(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    chunks_per_thread: int,
    elements_per_thread: int = 0,
    flags: int = 0,
) -> torch.Tensor:
    return _like(x)


@_register_fake("rms_norm_rope")
def _rms_norm_rope_fake(
    x: torch.Tensor, weight: torch.Tensor | None, cos: torch.Tensor, sin: torch.Tensor, eps: float
) -> torch.Tensor:
    return _like(x)


@_register_fake("rms_norm_rope_qk")
def _rms_norm_rope_qk_fake(
    q: torch.Tensor,
    k: torch.Tensor,
    weight_q: torch.Tensor | None,
    weight_k: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    return _like(q), _like(q)


@_register_fake("rms_norm_rope_qk_with_config")
def _rms_norm_rope_qk_with_config_fake(
    q: torch.Tensor,
    k: torch.Tensor,
    weight_q: torch.Tensor | None,
    weight_k: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
    threads_per_row: int,
    chunks_per_thread: int,
    flags: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    return _like(q), _like(q)


# Kernel Hub layers (integration helper's module): imported last, it looks the functions
# above up on this package at call time.
from . import layers  # noqa: E402
