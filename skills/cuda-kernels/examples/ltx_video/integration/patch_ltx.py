"""Patch diffusers' LTX-Video transformer with the ltx_video_kernels package, and undo it.

    from patch_ltx import patch_ltx_transformer
    report = patch_ltx_transformer(pipe.transformer, ltx_video_kernels)
    print(report.summary())      # what was replaced, what was refused and why
    ...                          # run the pipeline; torch.compile works after patching
    report.restore()             # or unpatch_ltx_transformer(pipe.transformer)

On the default config (diffusers 0.42.1): 281 sites - 56 weightless diffusers and 112
torch.nn.RMSNorms, 29 tanh-GELUs, 28 block forwards (AdaLN, fused add), 56 attention
processors (attn1: fused q/k norm + RoPE). Only proven sites (exact classes, the diffusers
source of each re-implemented forward by sha256, VERIFIED_SOURCES); the rest goes to
`skipped` with the reason. The rules and why: the example README, "Patching a diffusers
transformer".
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import textwrap
import types
import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import diffusers
from diffusers.models.activations import GELU
from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm
from diffusers.models.transformers import transformer_ltx as _ltx
from diffusers.models.transformers.transformer_ltx import (
    LTXAttention,
    LTXVideoAttnProcessor,
    LTXVideoTransformerBlock,
)
from diffusers.models.attention_dispatch import dispatch_attention_fn

__all__ = [
    "KIND_ATTENTION",
    "KIND_BLOCK_ADALN",
    "KIND_GELU_TANH",
    "KIND_GELU_TANH_EPILOGUE",
    "KIND_GELU_TANH_TORCH",
    "KIND_RMSNORM_DIFFUSERS",
    "KIND_RMSNORM_DIFFUSERS_WEIGHT",
    "KIND_RMSNORM_TORCH",
    "LTXKernelAttnProcessor",
    "PatchError",
    "PatchReport",
    "Skipped",
    "patch_ltx_transformer",
    "unpatch_ltx_transformer",
]

VERIFIED_DIFFUSERS_VERSION = "0.42.1"

# sha256 (first 16 hex digits) of textwrap.dedent(inspect.getsource(...)) in diffusers 0.42.1.
# The block layer and the attention processor below re-implement these functions with
# kernels; if diffusers changes them, re-verify the math before updating a hash.
VERIFIED_SOURCES: dict[str, str] = {
    "LTXVideoTransformerBlock.forward": "0bd97ec27412ceec",
    "LTXVideoAttnProcessor.__call__": "c2a0c16447bc6c6c",
    "apply_rotary_emb": "fa3a0a3ad5c63101",
    "RMSNorm.forward": "25f4c6d067d464a9",
    "GELU.forward": "d6728e812cd51ebb",
    "GELU.gelu": "9688d8847aaf631e",
}

KIND_RMSNORM_DIFFUSERS = "rmsnorm.diffusers.no_weight"
KIND_RMSNORM_DIFFUSERS_WEIGHT = "rmsnorm.diffusers.weight"
KIND_RMSNORM_TORCH = "rmsnorm.torch"
KIND_GELU_TANH = "ff.gelu_tanh"
KIND_GELU_TANH_EPILOGUE = "ff.gelu_tanh_gemm_epilogue"
KIND_GELU_TANH_TORCH = "gelu_tanh.torch"
KIND_BLOCK_ADALN = "block.adaln"
KIND_ATTENTION = "attention.processor"

# transformer -> its active PatchReport (weak keys: no attribute on the model, no leak)
_ACTIVE: weakref.WeakKeyDictionary[nn.Module, PatchReport] = weakref.WeakKeyDictionary()


class PatchError(RuntimeError):
    """The transformer cannot be patched as asked; the message says what to do instead."""


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A module that looked like a patch target but was left alone."""

    name: str
    cls: str
    reason: str


@dataclasses.dataclass
class PatchReport:
    """What `patch_ltx_transformer` changed; `restore()` undoes exactly that."""

    counts: Counter[str]
    skipped: list[Skipped]
    fused_norm_rope: bool
    kernels_module: str
    _undo: list[Callable[[], None]] = dataclasses.field(default_factory=list, repr=False)
    _owner: weakref.ref[nn.Module] | None = dataclasses.field(default=None, repr=False)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def active(self) -> bool:
        owner = self._owner() if self._owner is not None else None
        return owner is not None and _ACTIVE.get(owner) is self

    def summary(self) -> str:
        lines = [f"patched with {self.kernels_module}: {self.total} sites"]
        lines += [f"  {kind:<28} {n:4d}" for kind, n in sorted(self.counts.items())]
        lines.append(f"  q/k norm + RoPE fused in one kernel: {'yes' if self.fused_norm_rope else 'no'}")
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)}:")
            lines += [f"  {s.name} ({s.cls}): {s.reason}" for s in self.skipped]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kernels_module": self.kernels_module,
            "counts": dict(sorted(self.counts.items())),
            "total": self.total,
            "fused_norm_rope": self.fused_norm_rope,
            "skipped": [dataclasses.asdict(s) for s in self.skipped],
        }

    def restore(self) -> None:
        """Put back every original forward and processor (idempotent).

        A forward wrapped after patching (diffusers' HookRegistry, accelerate) holds the
        kernel forward inside its wrapper; removing the wrapper from here would drop the
        hook, and leaving it would keep kernel code running. Both are wrong, so restore
        refuses, before changing anything, until those hooks are removed.
        """
        wrapped = [blocked for undo in self._undo if (blocked := getattr(undo, "blocked", _nothing)()) is not None]
        if wrapped:
            raise PatchError(
                f"cannot restore: {len(wrapped)} patched module(s) ({', '.join(sorted(set(wrapped)))}) had their "
                "forward replaced after patching (a hook?); remove those hooks first, then call restore()"
            )
        while self._undo:
            self._undo.pop()()
        owner = self._owner() if self._owner is not None else None
        if owner is not None and _ACTIVE.get(owner) is self:
            del _ACTIVE[owner]


# --------------------------------------------------------------------------- helpers


def _source_hash(obj: Any) -> str | None:
    try:
        source = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):  # no source shipped (zip/frozen install)
        return None
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def _unverified_sources(names: list[str]) -> list[str]:
    objects = {
        "LTXVideoTransformerBlock.forward": LTXVideoTransformerBlock.forward,
        "LTXVideoAttnProcessor.__call__": LTXVideoAttnProcessor.__call__,
        "apply_rotary_emb": _ltx.apply_rotary_emb,
        "RMSNorm.forward": DiffusersRMSNorm.forward,
        "GELU.forward": GELU.forward,
        "GELU.gelu": GELU.gelu,
    }
    return [n for n in names if _source_hash(objects[n]) != VERIFIED_SOURCES[n]]


def _cls_name(module: Any) -> str:
    cls = type(module)
    return f"{cls.__module__}.{cls.__qualname__}"


def _forward_taken(module: nn.Module) -> str | None:
    """Why this module's forward must not be replaced, or None."""
    if "forward" in module.__dict__:
        return (
            "its forward was already replaced (a diffusers hook - offloading, layerwise casting, "
            "caching - or another patch); patch before enabling hooks"
        )
    if hasattr(module, "_diffusers_hook"):
        return "it carries diffusers hooks; patch before enabling hooks"
    return None


def _has_hooks(module: nn.Module) -> bool:
    """Anything that would see or change the module's call, before patching: a diffusers
    registry counts even when empty (patching under it is refused, not guessed at)."""
    return _user_hooks(module, ()) or hasattr(module, "_diffusers_hook")


def _user_hooks(module: nn.Module, own_forwards: tuple[Callable[..., Any], ...]) -> bool:
    """Hooks someone registered after patching: torch hooks, diffusers' HookRegistry (while it
    holds a hook), or a forward replaced by a wrapper such as accelerate's (`_hf_hook`); the
    kernel forwards this module binds (`own_forwards`) are not hooks."""
    if module._forward_hooks or module._forward_pre_hooks or hasattr(module, "_hf_hook"):
        return True
    registry = getattr(module, "_diffusers_hook", None)
    if registry is not None and getattr(registry, "hooks", True):
        return True
    installed = module.__dict__.get("forward")
    return installed is not None and getattr(installed, "__func__", None) not in own_forwards


def _is_compiled(module: nn.Module) -> bool:
    if hasattr(module, "_orig_mod"):  # torch.compile(module) wrapper
        return True
    return any(getattr(m, "_compiled_call_impl", None) is not None for m in module.modules())


def _nothing() -> None:
    return None


def _bind_forward(module: nn.Module, layer: type[nn.Module], undo: list[Callable[[], None]]) -> None:
    module.forward = types.MethodType(layer.forward, module)

    def _ours() -> bool:
        installed = module.__dict__.get("forward")
        return installed is None or getattr(installed, "__func__", None) is layer.forward

    def _restore(module: nn.Module = module) -> None:
        if _ours():
            module.__dict__.pop("forward", None)

    # For restore(): the class name of this module if its forward is no longer the one bound here.
    _restore.blocked = lambda: None if _ours() else type(module).__name__  # type: ignore[attr-defined]
    undo.append(_restore)


def _load_layers(kernels_module: types.ModuleType) -> types.ModuleType:
    layers = getattr(kernels_module, "layers", None)
    if isinstance(layers, types.ModuleType):
        return layers
    try:
        return importlib.import_module(f"{kernels_module.__name__}.layers")
    except ImportError as exc:
        raise PatchError(
            f"{kernels_module.__name__} has no `layers` submodule ({exc}); pass the "
            "ltx_video_kernels package (built with build_local.py or loaded with get_kernel)"
        ) from exc


# --------------------------------------------------------------------------- attention


class LTXKernelAttnProcessor(LTXVideoAttnProcessor):
    """``LTXVideoAttnProcessor`` (diffusers 0.42.1) with q/k RMSNorm and RoPE done by kernels.

    LTX normalises q and k across all heads (``torch.nn.RMSNorm(heads * head_dim, eps=1e-5)``)
    and then applies ``apply_rotary_emb``: RoPE on *interleaved* channel pairs (2i, 2i+1) of
    the flattened ``[B, S, heads * head_dim]`` projection, with fp32 ``cos``/``sin`` of shape
    ``[B, S, heads * head_dim]`` and the result cast back to the input dtype. Self-attention
    (attn1) gets RoPE; cross-attention (attn2) gets ``image_rotary_emb=None``, so only the
    norms (through the norm modules, patched or not).

    With ``fuse_norm_rope`` (both norms plain 1-D ``torch.nn.RMSNorm``) q and k are normalised
    and rotated by one ``rms_norm_rope_qk`` kernel that reads cos/sin once for both - the
    fp32 tables are as large as q and k together in bf16 - else ``rms_norm_rope`` per tensor
    when q and k differ in shape or eps. Without it: the norm modules, then ``rope_interleaved``.
    """

    def __init__(self, kernels_module: types.ModuleType, fuse_norm_rope: bool) -> None:
        super().__init__()
        self._rope = kernels_module.rope_interleaved
        self._norm_rope = getattr(kernels_module, "rms_norm_rope", None) if fuse_norm_rope else None
        self._norm_rope_qk = getattr(kernels_module, "rms_norm_rope_qk", None) if fuse_norm_rope else None
        layers = _load_layers(kernels_module)
        self._default_eps = layers.torch_rms_norm_default_eps
        # The forwards patch_ltx_transformer binds to norms: not hooks (see _user_hooks).
        self._own_forwards = (layers.TorchRMSNorm.forward, layers.DiffusersRMSNorm.forward)

    def _eps(self, norm: nn.Module, x: torch.Tensor) -> float:
        return norm.eps if norm.eps is not None else self._default_eps(x.dtype)

    def _qk_norm_rope(
        self,
        attn: LTXAttention,
        query: torch.Tensor,
        key: torch.Tensor,
        rotary: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if rotary is None:
            return attn.norm_q(query), attn.norm_k(key)
        cos, sin = rotary
        if (self._norm_rope is None or _user_hooks(attn.norm_q, self._own_forwards)
                or _user_hooks(attn.norm_k, self._own_forwards)):
            # A hook added to a norm after patching must still see its call: run the modules.
            return self._rope(attn.norm_q(query), cos, sin), self._rope(attn.norm_k(key), cos, sin)
        eps_q, eps_k = self._eps(attn.norm_q, query), self._eps(attn.norm_k, key)
        if self._norm_rope_qk is not None and query.shape == key.shape and eps_q == eps_k:
            return self._norm_rope_qk(query, key, attn.norm_q.weight, attn.norm_k.weight, cos, sin, eps_q)
        return (
            self._norm_rope(query, attn.norm_q.weight, cos, sin, eps_q),
            self._norm_rope(key, attn.norm_k.weight, cos, sin, eps_k),
        )

    def __call__(
        self,
        attn: LTXAttention,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        image_rotary_emb: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        batch_size, sequence_length, _ = (
            hidden_states.shape if encoder_hidden_states is None else encoder_hidden_states.shape
        )

        if attention_mask is not None:
            attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
            attention_mask = attention_mask.view(batch_size, attn.heads, -1, attention_mask.shape[-1])

        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states

        query = attn.to_q(hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)

        query, key = self._qk_norm_rope(attn, query, key, image_rotary_emb)

        query = query.unflatten(2, (attn.heads, -1))
        key = key.unflatten(2, (attn.heads, -1))
        value = value.unflatten(2, (attn.heads, -1))

        hidden_states = dispatch_attention_fn(
            query,
            key,
            value,
            attn_mask=attention_mask,
            dropout_p=0.0,
            is_causal=False,
            backend=self._attention_backend,
            parallel_config=self._parallel_config,
        )
        hidden_states = hidden_states.flatten(2, 3)
        hidden_states = hidden_states.to(query.dtype)

        hidden_states = attn.to_out[0](hidden_states)
        hidden_states = attn.to_out[1](hidden_states)
        return hidden_states


def _plain_torch_rmsnorm(norm: nn.Module) -> bool:
    return type(norm) is nn.RMSNorm and len(norm.normalized_shape) == 1 and not _has_hooks(norm)


# --------------------------------------------------------------------------- entry points


def patch_ltx_transformer(
    transformer: nn.Module,
    kernels_module: types.ModuleType,
    *,
    norms: bool = True,
    adaln: bool = True,
    gelu: bool = True,
    attention: bool = True,
    fuse_norm_rope: bool = True,
    gelu_epilogue: bool = False,
    verify_source: bool = True,
) -> PatchReport:
    """Route the LTX-Video transformer's norms, AdaLN, GELU-tanh and RoPE through `kernels_module`.

    Args:
        transformer: a diffusers ``LTXVideoTransformer3DModel`` (``pipe.transformer``), or any
            module containing LTX blocks; not yet compiled and without diffusers hooks.
        kernels_module: the imported ``ltx_video_kernels`` package (local build or Hub kernel).
        norms / adaln / gelu / attention: which families to patch (all by default).
        fuse_norm_rope: use the package's fused q/k norm + RoPE kernel if it has one.
        gelu_epilogue: opt-in - on CUDA, compute the feed-forward's bias + tanh-GELU in the
            projection GEMM's cuBLASLt epilogue (``layers.GELUTanhEpilogue``) instead of the
            ``gelu_tanh`` kernel; a comparison point, not a kernel of the package.
        verify_source: refuse the block and attention re-implementations if diffusers' source
            differs from the verified 0.42.1 source (set False only after re-verifying).

    Returns a `PatchReport`; `report.restore()` undoes the patch.
    Raises `PatchError` if the model is already patched or already compiled.
    """
    if not isinstance(transformer, nn.Module):
        raise PatchError(
            f"expected the transformer nn.Module (e.g. pipe.transformer), got {type(transformer).__name__}"
        )
    if transformer in _ACTIVE:
        raise PatchError("this transformer is already patched; call unpatch_ltx_transformer() first")
    if _is_compiled(transformer):
        raise PatchError(
            "the transformer (or one of its blocks) is already compiled; patch first, then torch.compile"
        )
    for fn in ("rms_norm", "rms_norm_modulate", "gelu_tanh", "rope_interleaved"):
        if not callable(getattr(kernels_module, fn, None)):
            raise PatchError(f"{kernels_module.__name__} lacks `{fn}`; is it the ltx_video_kernels package?")
    layers = _load_layers(kernels_module)

    bad_sources: set[str] = set()
    if verify_source:
        bad_sources = set(_unverified_sources(list(VERIFIED_SOURCES)))

    def source_reason(*names: str) -> str | None:
        stale = [n for n in names if n in bad_sources]
        if not stale:
            return None
        return (
            f"diffusers {diffusers.__version__} changed {', '.join(stale)} since the verified "
            f"{VERIFIED_DIFFUSERS_VERSION}; re-verify, then pass verify_source=False"
        )

    counts: Counter[str] = Counter()
    skipped: list[Skipped] = []
    undo: list[Callable[[], None]] = []
    has_norm_rope = callable(getattr(kernels_module, "rms_norm_rope", None))
    any_fused = False

    def skip(name: str, module: Any, reason: str) -> None:
        skipped.append(Skipped(name or "<root>", _cls_name(module), reason))

    # Snapshot first: binding forwards does not add modules, but be explicit about order.
    for name, module in list(transformer.named_modules()):
        cls = type(module)

        # ---- RMSNorm families
        if isinstance(module, DiffusersRMSNorm):
            if not norms:
                continue
            if cls is not DiffusersRMSNorm:
                skip(name, module, "subclass of diffusers RMSNorm: its forward is not verified")
            elif module.bias is not None:
                skip(name, module, "diffusers RMSNorm with bias=True: the kernel has no bias")
            elif (reason := source_reason("RMSNorm.forward")) is not None:
                skip(name, module, reason)
            elif (reason := _forward_taken(module)) is not None:
                skip(name, module, reason)
            else:
                _bind_forward(module, layers.DiffusersRMSNorm, undo)
                counts[KIND_RMSNORM_DIFFUSERS if module.weight is None else KIND_RMSNORM_DIFFUSERS_WEIGHT] += 1
            continue
        if isinstance(module, nn.RMSNorm):
            if not norms:
                continue
            if cls is not nn.RMSNorm:
                skip(name, module, "subclass of torch.nn.RMSNorm: its forward is not verified")
            elif len(module.normalized_shape) != 1:
                skip(name, module, f"normalizes over {tuple(module.normalized_shape)}: the kernel normalizes the last dim")
            elif (reason := _forward_taken(module)) is not None:
                skip(name, module, reason)
            else:
                _bind_forward(module, layers.TorchRMSNorm, undo)
                counts[KIND_RMSNORM_TORCH] += 1
            continue
        if "RMSNorm" in cls.__name__:
            # Gemma-style x * (1 + w), gated norms, Mochi's fp32 norm...: other formulas.
            if norms:
                skip(name, module, "RMSNorm-like class with an unverified formula")
            continue

        # ---- feed-forward activation
        if isinstance(module, GELU):
            if not gelu:
                continue
            if cls is not GELU:
                skip(name, module, "subclass of diffusers GELU: its forward is not verified")
            elif module.approximate != "tanh":
                skip(name, module, f"GELU(approximate={module.approximate!r}): the kernel is the tanh form")
            elif (reason := source_reason("GELU.forward", "GELU.gelu")) is not None:
                skip(name, module, reason)
            elif (reason := _forward_taken(module)) is not None:
                skip(name, module, reason)
            elif gelu_epilogue:
                _bind_forward(module, layers.GELUTanhEpilogue, undo)
                counts[KIND_GELU_TANH_EPILOGUE] += 1
            else:
                _bind_forward(module, layers.GELUTanh, undo)
                counts[KIND_GELU_TANH] += 1
            continue
        if isinstance(module, nn.GELU):
            if not gelu:
                continue
            if cls is not nn.GELU:
                skip(name, module, "subclass of torch.nn.GELU: its forward is not verified")
            elif module.approximate != "tanh":
                skip(name, module, f"nn.GELU(approximate={module.approximate!r}): the kernel is the tanh form")
            elif (reason := _forward_taken(module)) is not None:
                skip(name, module, reason)
            else:
                _bind_forward(module, layers.TorchGELUTanh, undo)
                counts[KIND_GELU_TANH_TORCH] += 1
            continue
        if gelu and cls.__name__ in {"GEGLU", "ApproximateGELU", "SwiGLU", "LinearActivation"}:
            skip(name, module, f"{cls.__name__} is not GELU-tanh; this package has no kernel for it")
            continue

        # ---- transformer block: fused norm + AdaLN modulation
        if isinstance(module, LTXVideoTransformerBlock):
            if not adaln:
                continue
            norm_ok = all(
                type(getattr(module, n, None)) is DiffusersRMSNorm and getattr(module, n).bias is None
                for n in ("norm1", "norm2")
            )
            if cls is not LTXVideoTransformerBlock:
                skip(name, module, "subclass of LTXVideoTransformerBlock: its forward is not verified")
            elif (reason := source_reason("LTXVideoTransformerBlock.forward", "RMSNorm.forward")) is not None:
                skip(name, module, reason)
            elif not norm_ok:
                skip(name, module, "norm1/norm2 are not bias-free diffusers RMSNorm modules")
            elif _has_hooks(module.norm1) or _has_hooks(module.norm2):
                skip(name, module, "norm1/norm2 carry hooks that the fused forward would bypass")
            elif module.scale_shift_table.shape[0] != 6:
                skip(name, module, f"scale_shift_table has {module.scale_shift_table.shape[0]} rows, expected 6")
            elif (reason := _forward_taken(module)) is not None:
                skip(name, module, reason)
            else:
                _bind_forward(module, layers.LTXVideoBlockAdaLN, undo)
                counts[KIND_BLOCK_ADALN] += 1
            continue

        # ---- attention: processor with kernel q/k norm + RoPE
        if isinstance(module, LTXAttention):
            if not attention:
                continue
            current = module.processor
            if type(current) is not LTXVideoAttnProcessor:
                skip(name, module, f"uses processor {type(current).__name__}, not diffusers' LTXVideoAttnProcessor")
            elif (reason := source_reason("LTXVideoAttnProcessor.__call__", "apply_rotary_emb")) is not None:
                skip(name, module, reason)
            else:
                fuse = (
                    fuse_norm_rope
                    and norms
                    and has_norm_rope
                    and _plain_torch_rmsnorm(module.norm_q)
                    and _plain_torch_rmsnorm(module.norm_k)
                )
                any_fused = any_fused or fuse
                processor = LTXKernelAttnProcessor(kernels_module, fuse_norm_rope=fuse)
                # keep what set_attention_backend / enable_parallelism configured
                processor._attention_backend = current._attention_backend
                processor._parallel_config = current._parallel_config
                module.set_processor(processor)

                def _restore_processor(module: nn.Module = module, original: Any = current) -> None:
                    module.set_processor(original)

                undo.append(_restore_processor)
                counts[KIND_ATTENTION] += 1
            continue

    report = PatchReport(
        counts=counts,
        skipped=skipped,
        fused_norm_rope=any_fused,
        kernels_module=kernels_module.__name__,
        _undo=undo,
        _owner=weakref.ref(transformer),
    )
    _ACTIVE[transformer] = report
    return report


def unpatch_ltx_transformer(transformer: nn.Module) -> bool:
    """Undo `patch_ltx_transformer`; returns False if the transformer was not patched."""
    report = _ACTIVE.get(transformer)
    if report is None:
        return False
    report.restore()
    return True
