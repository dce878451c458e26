"""Patch a transformers Qwen3 (or Llama) model so that it runs the qwen3_8b_kernels ops.

    report = patch_qwen3(model, qwen3_8b_kernels)     # before torch.compile / CUDA graphs
    print(report.summary())
    unpatch_qwen3(model)                              # back to transformers' code

Per model instance (transformers 5.17.0 to 5.25.0), each step a keyword of `patch_qwen3`:
RMSNorm -> `rms_norm`; the decoder layer's add + post-attention norm -> `fused_add_rms_norm`
and its last add done by `residual.addmm_(...)` of the down projection; the MLP -> `swiglu`
on one merged gate/up matmul; q_norm + k_norm + RoPE -> `qk_norm_rope_` on one merged q/k/v
matmul (Qwen3 only); else the module-global `apply_rotary_pos_emb` -> `rope`
(reference-counted, process-wide). Nothing is matched by name: exact classes, transformers'
own forwards (`co_names` checked) and a numerical probe for norms; anything else lands in
`report.skipped`. integration/README.md gives each rule and its reason.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import threading
import types
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

REQUIRED_OPS = ("rms_norm", "fused_add_rms_norm", "swiglu", "rope")
_STATE_ATTR = "_qwen3_kernels_patch"
_FUSED_GATE_UP = "_kernel_gate_up_weight"
_FUSED_QKV = "_kernel_qkv_weight"
_TAG = "_qwen3_kernels_role"  # set on every function this module installs


@dataclasses.dataclass(frozen=True)
class _Family:
    """The transformers classes of one model family whose code this module reproduces."""

    name: str
    module: str
    norm: str
    decoder: str
    mlp: str
    attention: str


_FAMILIES = (
    _Family("qwen3", "transformers.models.qwen3.modeling_qwen3", "Qwen3RMSNorm", "Qwen3DecoderLayer", "Qwen3MLP", "Qwen3Attention"),
    _Family("llama", "transformers.models.llama.modeling_llama", "LlamaRMSNorm", "LlamaDecoderLayer", "LlamaMLP", "LlamaAttention"),
)


@dataclasses.dataclass
class PatchReport:
    """What `patch_qwen3` changed. Lists hold qualified module names."""

    rms_norm: list[str] = dataclasses.field(default_factory=list)
    fused_add_rms_norm: list[str] = dataclasses.field(default_factory=list)
    down_residual: list[str] = dataclasses.field(default_factory=list)  # decoder layers
    swiglu: list[str] = dataclasses.field(default_factory=list)
    fused_gate_up: list[str] = dataclasses.field(default_factory=list)
    rope: list[str] = dataclasses.field(default_factory=list)  # patched module globals
    rope_attention_modules: int = 0  # attention modules that call a patched global
    qk_norm_rope: list[str] = dataclasses.field(default_factory=list)  # attention forwards fused
    fused_qkv: list[str] = dataclasses.field(default_factory=list)
    decoder_layers: int = 0
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def norm_roles(self) -> dict[str, int]:
        roles: Counter[str] = Counter()
        for name in self.rms_norm:
            last = name.rsplit(".", 1)[-1]
            roles["final_norm" if name in ("model.norm", "norm") else last] += 1
        return dict(roles)

    def counts(self) -> dict[str, Any]:
        return {
            "decoder_layers": self.decoder_layers,
            "rms_norm": len(self.rms_norm),
            "rms_norm_by_role": self.norm_roles(),
            "fused_add_rms_norm": len(self.fused_add_rms_norm),
            "down_residual": len(self.down_residual),
            "swiglu": len(self.swiglu),
            "fused_gate_up": len(self.fused_gate_up),
            "rope_attention_modules": self.rope_attention_modules,
            "qk_norm_rope": len(self.qk_norm_rope),
            "fused_qkv": len(self.fused_qkv),
            "rope_patch_points": list(self.rope),
            "skipped": len(self.skipped),
        }

    def summary(self) -> str:
        c = self.counts()
        lines = [
            f"decoder layers: {c['decoder_layers']}",
            f"RMSNorm -> rms_norm: {c['rms_norm']} {c['rms_norm_by_role']}",
            f"residual add + post_attention_layernorm -> fused_add_rms_norm: {c['fused_add_rms_norm']}",
            f"residual add after the MLP -> down_proj matmul accumulating into the residual: {c['down_residual']}",
            f"MLP activation -> swiglu: {c['swiglu']} (gate/up matmuls merged: {c['fused_gate_up']})",
            f"q_norm + k_norm + RoPE -> qk_norm_rope_: {c['qk_norm_rope']} attention modules "
            f"(q/k/v matmuls merged: {c['fused_qkv']}; their q_norm/k_norm modules are bypassed)",
            f"RoPE -> rope: {c['rope_attention_modules']} attention modules via {', '.join(self.rope) or 'nothing'}",
        ]
        lines += [f"skipped {name}: {reason}" for name, reason in self.skipped]
        return "\n".join(lines)


@dataclasses.dataclass
class _PatchState:
    modules: list[tuple[nn.Module, str]]
    rope_modules: list[str]
    report: PatchReport


# --------------------------------------------------------------------------- checks


def _family_classes(family: _Family) -> dict[str, type] | None:
    try:
        mod = importlib.import_module(family.module)
    except ImportError:
        return None
    classes = {}
    for role in ("norm", "decoder", "mlp", "attention"):
        name = getattr(family, role)
        cls = getattr(mod, name, None)
        # Another library may have swapped the module attribute for its own class
        # (liger-kernel does this); only transformers' own class is verified here.
        if not isinstance(cls, type) or (cls.__module__, cls.__qualname__) != (family.module, name):
            return None
        classes[role] = cls
    return classes


# Wrappers transformers itself puts around a layer's forward: `deprecate_kwarg` (>= 5.24:
# past_key_values -> cache), GradientCheckpointingLayer's (>= 5.23), and kernels'
# `use_kernelized_func` on the attention classes inside kernels' version window (see
# _attention_problem).
_TRANSFORMERS_WRAPPERS = ("transformers.utils.deprecation", "transformers.modeling_layers",
                          "kernels.layer.layer", "kernels._internals.layer.layer")


def _source_file(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    return getattr(module, "__file__", None)


def _own_forward(cls: type, family: _Family) -> types.FunctionType | None:
    """transformers' own forward of `cls`, under transformers' own wrappers; None if replaced.

    Code objects are compared by file, not by `__module__`/`__qualname__` alone: a wrapper made
    with functools.wraps copies those names, and would otherwise pass for transformers' code.
    """
    fwd = cls.__dict__.get("forward")
    wrapper_files = {f for f in map(_source_file, _TRANSFORMERS_WRAPPERS) if f}
    while isinstance(fwd, types.FunctionType) and fwd.__code__.co_filename in wrapper_files:
        fwd = getattr(fwd, "__wrapped__", None)
    if (
        isinstance(fwd, types.FunctionType)
        and fwd.__module__ == family.module
        and fwd.__qualname__ == f"{cls.__qualname__}.forward"
        and fwd.__code__.co_filename == _source_file(family.module)
    ):
        return fwd
    return None


def _has_own_forward(cls: type, family: _Family) -> bool:
    """The class's forward is still the one transformers defined for it."""
    return _own_forward(cls, family) is not None


# Names the decoder layer's and MLP's forwards use in 5.17.0-5.25.0 (Qwen3 and Llama): the
# copies reproduce those bodies; a forward with any other set is left alone.
_DECODER_NAMES = frozenset({"input_layernorm", "self_attn", "post_attention_layernorm", "mlp"})
_MLP_NAMES = frozenset({"gate_proj", "up_proj", "down_proj", "act_fn"})


def _changed_forward(cls: type, family: _Family, names: frozenset[str]) -> str | None:
    fwd = _own_forward(cls, family)
    if fwd is None:
        return f"{cls.__name__}.forward is not transformers' own"
    used = frozenset(fwd.__code__.co_names)
    if used == names:
        return None
    extra, missing = sorted(used - names), sorted(names - used)
    what = "; ".join(part for part in (extra and f"uses {', '.join(extra)}", missing and f"no longer uses {', '.join(missing)}") if part)
    return f"{cls.__name__}.forward differs from the copy patched in ({what}; another transformers version?)"


# The KV-cache parameter is `past_key_values` in 5.17-5.23 and `cache` from 5.24; patched
# forwards take the installed name so keyword callers still bind.
_DECODER_PARAMS = (("self", "hidden_states", "attention_mask", "position_ids"), ("use_cache", "position_embeddings", "kwargs"))
_ATTENTION_PARAMS = (("self", "hidden_states", "position_embeddings", "attention_mask"), ("kwargs",))
_CACHE_PARAMS = ("past_key_values", "cache")


def _cache_param(cls: type, family: _Family, params: tuple[tuple[str, ...], tuple[str, ...]]) -> str | None:
    """The name `cls`'s own forward gives its cache parameter, or None for another signature."""
    fwd = _own_forward(cls, family)
    if fwd is None:
        return None
    names = tuple(inspect.signature(fwd, follow_wrapped=False).parameters)
    before, after = params
    return next((cache for cache in _CACHE_PARAMS if names == (*before, cache, *after)), None)


# Keyed by (class, its forward function): a class whose forward is later replaced is probed again.
_NORM_VERDICTS: dict[tuple[type, Any], str | None] = {}


def _norm_formula_problem(cls: type) -> str | None:
    """Probe `cls` once: does its forward compute what the rms_norm kernel computes?

    A large eps (0.25) and a weight spanning negative values make eps placement,
    weight placement and (1 + w)-style offsets visible; fp32 input, fp64 reference.
    """
    key = (cls, cls.__dict__.get("forward"))
    if key in _NORM_VERDICTS:
        return _NORM_VERDICTS[key]
    verdict: str | None = None
    try:
        with torch.device("cpu"):
            probe = cls(24, eps=0.25).float()
        generator = torch.Generator().manual_seed(7)
        with torch.no_grad():
            probe.weight.copy_(torch.linspace(-1.5, 2.0, 24))
            x = torch.randn(5, 24, generator=generator) * 3.0
            got = cls.forward(probe, x)
            x64 = x.double()
            want = probe.weight.double() * (x64 * torch.rsqrt(x64.square().mean(-1, keepdim=True) + 0.25))
        if getattr(probe, "variance_epsilon", None) != 0.25:
            verdict = "eps is not stored as variance_epsilon"
        elif got.dtype != x.dtype or got.shape != x.shape:
            verdict = f"output {got.dtype}{tuple(got.shape)} differs from the input's"
        elif not torch.allclose(got.double(), want, rtol=1e-5, atol=1e-5):
            verdict = "forward does not compute weight * x * rsqrt(mean(x^2) + eps)"
    except Exception as exc:  # a class we cannot even probe is not one we can vouch for
        verdict = f"probe failed: {type(exc).__name__}: {exc}"
    _NORM_VERDICTS[key] = verdict
    return verdict


def _norm_instance_problem(module: nn.Module) -> str | None:
    if "forward" in module.__dict__:
        return "forward already replaced on this instance (kernelize or another patch?)"
    weight = getattr(module, "weight", None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 1:
        return "weight is not a 1-D tensor"
    if not isinstance(getattr(module, "variance_epsilon", None), (float, int)):
        return "variance_epsilon is not a number"
    return None


def _is_silu(act: nn.Module) -> bool:
    cls = type(act)
    return cls is nn.SiLU or (cls.__module__, cls.__qualname__) == ("transformers.activations", "SiLUActivation")


def _plain_linear(layer: Any) -> bool:
    return (type(layer) is nn.Linear and not layer._forward_hooks and not layer._forward_pre_hooks
            and "forward" not in layer.__dict__)


def _records_grad(module: nn.Module, *tensors: torch.Tensor) -> bool:
    """Whether autograd would record this call. The fused paths are inference-only (merged
    weights outside the Parameters, q and k rewritten in place), so such a call runs
    transformers' own forward; under no_grad / inference_mode this is one flag check."""
    if not torch.is_grad_enabled():
        return False
    return any(t.requires_grad for t in tensors) or any(p.requires_grad for p in module.parameters())


def _merged_weight(module: nn.Module, buffer: str, projections: tuple[Any, ...]) -> torch.Tensor | None:
    """The merged weight, if the projections still are the plain Linears whose weights were
    made views of it; None sends the call through the modules themselves.

    A quantizer or PEFT swaps a projection for another module, a hook wraps it, and
    `model.to(...)` or `load_state_dict` after a dtype round trip gives a weight new storage:
    in each case the merged copy would silently compute with the old weights.
    """
    merged = module._buffers.get(buffer)
    if merged is None:
        return None
    params = module.__dict__.get("_kernel_merged_params")
    row_bytes = merged.stride(0) * merged.element_size()
    offset = 0
    current = params is not None and len(params) == len(projections)
    for proj, param in zip(projections, params or ()):
        if not current:
            break
        current = _plain_linear(proj) and proj.weight is param and proj.bias is None
        # Storage is checked in eager mode only (compiled code cannot read data pointers).
        if current and not torch.compiler.is_compiling():
            current = param.data_ptr() == merged.data_ptr() + offset * row_bytes
        offset += param.shape[0]
    if current:
        return merged
    if not torch.compiler.is_compiling():
        # The merge is over for good: drop the buffer, else a dead full copy of the weights.
        del module._buffers[buffer]
        module.__dict__.pop("_kernel_merged_params", None)
    return None


def _installed_role(module: nn.Module) -> str | None:
    """The role of the forward this module installed on `module`, or None (none, or someone else's)."""
    return getattr(getattr(module.__dict__.get("forward"), "__func__", None), _TAG, None)


def _hook_free_forward(module: nn.Module) -> bool:
    return "forward" not in module.__dict__ or _installed_role(module) is not None


def _hook_free(module: nn.Module) -> bool:
    """No hooks and no foreign forward: calling its pieces directly skips nothing."""
    return _hook_free_forward(module) and not module._forward_hooks and not module._forward_pre_hooks


# ------------------------------------------------------------------ patched forwards


def _tag(fn: Callable, role: str) -> Callable:
    setattr(fn, _TAG, role)
    return fn


def _make_norm_forward(ops: types.ModuleType) -> Callable:
    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if hidden_states.dtype != self.weight.dtype:
            # transformers promotes (fp32 weight * bf16 -> fp32); keep its exact code path.
            return type(self).forward(self, hidden_states)
        return ops.rms_norm(hidden_states, self.weight, self.variance_epsilon)

    return _tag(forward, "rms_norm")


def _mlp_activation(ops: types.ModuleType, mlp: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """A patched Qwen3MLP's down_proj input: swiglu(gate_proj(x), up_proj(x))."""
    merged = _merged_weight(mlp, _FUSED_GATE_UP, (mlp.gate_proj, mlp.up_proj))
    if merged is not None:
        gate_up = F.linear(x, merged)
        # Two views with row stride 2*intermediate: no copy before the kernel.
        gate, up = gate_up.split(mlp.intermediate_size, dim=-1)
        return ops.swiglu(gate, up)
    gate = mlp.gate_proj(x)
    up = mlp.up_proj(x)
    if gate.dtype != up.dtype:
        return mlp.act_fn(gate) * up
    return ops.swiglu(gate, up)


def _old_cache_keyword(cache: Any, kwargs: dict[str, Any]) -> Any:
    """What transformers' deprecate_kwarg wrapper does for a caller still using `past_key_values`.

    The patched forward sits on the instance, so the class's wrapper never sees the call: a
    layer called directly with the old name (code written for 5.17-5.23) would otherwise get
    its cache in **kwargs and silently not update it.
    """
    old = kwargs.pop("past_key_values", None)
    return old if cache is None else cache


def _make_decoder_forward(ops: types.ModuleType, down_residual: bool, cache_param: str = "past_key_values") -> Callable:
    # Same parameters and order as the decoder layer's forward (5.17.0-5.25.0); only the add +
    # norm is fused, and with down_residual the last add is done by the down_proj matmul.
    def run(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None, position_ids: torch.LongTensor | None,
            cache: dict[str, Any], use_cache: bool | None, position_embeddings: tuple[torch.Tensor, torch.Tensor] | None,
            kwargs: dict[str, Any]) -> torch.Tensor:
        if _records_grad(self, hidden_states):
            return type(self).forward(self, hidden_states, attention_mask=attention_mask, position_ids=position_ids,
                                      use_cache=use_cache, position_embeddings=position_embeddings, **cache, **kwargs)
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(
            hidden_states=hidden_states,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=use_cache,
            position_embeddings=position_embeddings,
            **cache,
            **kwargs,
        )
        norm = self.post_attention_layernorm
        if hidden_states.dtype == residual.dtype == norm.weight.dtype:
            # (rms_norm(attn + residual), attn + residual) in one pass; the sum is
            # rounded to the activation dtype before normalising, as transformers does.
            hidden_states, residual = ops.fused_add_rms_norm(hidden_states, residual, norm.weight, norm.variance_epsilon)
            down = self.mlp.down_proj
            if (down_residual and not torch.is_grad_enabled() and _hook_free(self.mlp) and _plain_linear(down)
                    and down.bias is None):
                # `residual` is a new tensor nobody else holds: the matmul accumulates into it (beta = 1)
                # instead of a separate add. Without grad only: autograd needs the overwritten value.
                act = _mlp_activation(ops, self.mlp, hidden_states)
                weight = down.weight
                if act.dtype == residual.dtype == weight.dtype and residual.is_contiguous():
                    residual.view(-1, residual.shape[-1]).addmm_(act.reshape(-1, act.shape[-1]), weight.t())
                    return residual
                return residual + self.mlp.down_proj(act)
        else:
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = norm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states

    # Two signatures, one body: Python cannot name a parameter from a variable.
    if cache_param == "cache":
        def forward(
            self,
            hidden_states: torch.Tensor,
            attention_mask: torch.Tensor | None = None,
            position_ids: torch.LongTensor | None = None,
            cache: Any = None,
            use_cache: bool | None = False,
            position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
            **kwargs: Any,
        ) -> torch.Tensor:
            cache = _old_cache_keyword(cache, kwargs)
            return run(self, hidden_states, attention_mask, position_ids, {"cache": cache}, use_cache, position_embeddings, kwargs)
    else:
        def forward(
            self,
            hidden_states: torch.Tensor,
            attention_mask: torch.Tensor | None = None,
            position_ids: torch.LongTensor | None = None,
            past_key_values: Any = None,
            use_cache: bool | None = False,
            position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
            **kwargs: Any,
        ) -> torch.Tensor:
            return run(self, hidden_states, attention_mask, position_ids, {"past_key_values": past_key_values}, use_cache,
                       position_embeddings, kwargs)

    return _tag(forward, "fused_add_rms_norm+down_residual" if down_residual else "fused_add_rms_norm")


def _make_mlp_forward(ops: types.ModuleType, fused: bool) -> Callable:
    # Two functions with one body: the tag tells patched_roles whether gate/up were merged.
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _records_grad(self, x):
            return type(self).forward(self, x)
        return self.down_proj(_mlp_activation(ops, self, x))

    return _tag(forward, "swiglu+fused_gate_up" if fused else "swiglu")


def _kernels_dispatches(original: Callable) -> bool:
    """Whether the global `original` (kernels' module around transformers' function) would now
    run a kernel that kernels.kernelize bound: to the global itself (kernels 0.17), or to the
    calling model's private copy, which kernels 0.19 selects through a context variable its
    use_kernelized_func wrapper sets around each attention forward."""
    if not isinstance(original, nn.Module):
        return False
    if _kernelized_funcs_of({"global": original}):
        return True
    active = getattr(type(original).forward, "__globals__", {}).get("_ACTIVE_KERNEL_FUNCS")
    entry = (active.get() or {}).get(id(original)) if active is not None else None
    return bool(entry) and bool(_kernelized_funcs_of({"copy": entry[0]}))


def _make_rope(original: Callable, ops: types.ModuleType) -> Callable:
    wrapped_by_kernels = isinstance(original, nn.Module)  # else transformers' plain function: nothing to defer to

    def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
        # Only transformers' exact layout; anything else, or a model whose RoPE kernelize
        # replaced (the global is process-wide), runs the original.
        if ops.layers.rope_layout_is_transformers(q, k, cos, sin, unsqueeze_dim) and not (
            wrapped_by_kernels and _kernels_dispatches(original)
        ):
            return ops.rope(q, k, cos, sin)
        return original(q, k, cos, sin, unsqueeze_dim)

    apply_rotary_pos_emb.__wrapped__ = original  # type: ignore[attr-defined]
    return _tag(apply_rotary_pos_emb, "rope")


# Names Qwen3Attention.forward (transformers 5.17.0-5.25.0) uses; the fused forward reproduces
# that sequence, so a forward that no longer mentions one of them is not patched.
_ATTENTION_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm", "apply_rotary_pos_emb",
                    "ALL_ATTENTION_FUNCTIONS", "get_interface", "eager_attention_forward", "sliding_window",
                    "scaling", "layer_idx", "update")


def _make_attention_forward(ops: types.ModuleType, family_module: str, cache_param: str = "past_key_values") -> Callable:
    mod = importlib.import_module(family_module)
    # transformers 5.24 renamed the cache parameter and, in the same change, started handing
    # the forward's kwargs to cache.update (kwargs=kwargs); both are reproduced together.
    new_cache_api = cache_param == "cache"

    def run(self, hidden_states: torch.Tensor, position_embeddings: tuple[torch.Tensor, torch.Tensor],
            attention_mask: torch.Tensor | None, past_key_values: Any, kwargs: dict[str, Any]
            ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if _records_grad(self, hidden_states):
            return type(self).forward(self, hidden_states, position_embeddings, attention_mask,
                                      **{cache_param: past_key_values}, **kwargs)
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        merged = _merged_weight(self, _FUSED_QKV, (self.q_proj, self.k_proj, self.v_proj))
        if merged is not None:
            # One matmul; q, k, v are column slices of its output (row stride (Hq + 2 Hk) D),
            # viewed as heads without a copy.
            qkv = F.linear(hidden_states, merged)
            q, k, v = qkv.split([self.q_proj.out_features, self.k_proj.out_features, self.v_proj.out_features], dim=-1)
            q, k, v = q.view(hidden_shape), k.view(hidden_shape), v.view(hidden_shape)
        else:
            q = self.q_proj(hidden_states).view(hidden_shape)
            k = self.k_proj(hidden_states).view(hidden_shape)
            v = self.v_proj(hidden_states).view(hidden_shape)
        value_states = v.transpose(1, 2)
        cos, sin = position_embeddings
        qn, kn = self.q_norm, self.k_norm
        if (
            q.dim() == 4
            and cos.dim() == 3
            and cos.shape == sin.shape
            and cos.shape[0] in (1, q.shape[0])  # position_ids [1, S] broadcast over the batch
            and cos.shape[1:] == (q.shape[1], q.shape[3])
            and q.dtype == k.dtype == cos.dtype == sin.dtype == qn.weight.dtype == kn.weight.dtype
            and qn.variance_epsilon == kn.variance_epsilon
        ):
            # In place on the [B, S, H, D] views: norm with each weight, then rotate.
            ops.qk_norm_rope_(q, k, qn.weight, kn.weight, cos, sin, qn.variance_epsilon)
            query_states, key_states = q.transpose(1, 2), k.transpose(1, 2)
        else:
            query_states = qn(q).transpose(1, 2)
            key_states = kn(k).transpose(1, 2)
            query_states, key_states = mod.apply_rotary_pos_emb(query_states, key_states, cos, sin)

        if past_key_values is not None:
            if new_cache_api:
                key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx, kwargs=kwargs)
            else:
                key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)

        attention_interface: Callable = mod.ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, mod.eager_attention_forward
        )
        attn_output, attn_weights = attention_interface(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling,
            sliding_window=self.sliding_window,
            **kwargs,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights

    if new_cache_api:
        def forward(
            self,
            hidden_states: torch.Tensor,
            position_embeddings: tuple[torch.Tensor, torch.Tensor],
            attention_mask: torch.Tensor | None,
            cache: Any = None,
            **kwargs: Any,
        ) -> tuple[torch.Tensor, torch.Tensor | None]:
            cache = _old_cache_keyword(cache, kwargs)
            return run(self, hidden_states, position_embeddings, attention_mask, cache, kwargs)
    else:
        def forward(
            self,
            hidden_states: torch.Tensor,
            position_embeddings: tuple[torch.Tensor, torch.Tensor],
            attention_mask: torch.Tensor | None,
            past_key_values: Any = None,
            **kwargs: Any,
        ) -> tuple[torch.Tensor, torch.Tensor | None]:
            return run(self, hidden_states, position_embeddings, attention_mask, past_key_values, kwargs)

    return _tag(forward, "qk_norm_rope")


def _kernelized_funcs(module: nn.Module) -> list[str]:
    """Names of the module's use_kernelized_func copies that kernels.kernelize gave a kernel's forward.

    kernelize binds the chosen layer's forward on the instance; when it falls back, kernels
    0.19 removes that binding but 0.17 binds the class's own forward, which is no kernel.
    """
    return _kernelized_funcs_of(module.__dict__.get("_kernel_funcs") or {})


def _kernelized_funcs_of(funcs: dict[str, Any]) -> list[str]:
    kernelized = []
    for name, func in funcs.items():
        bound = getattr(func, "__dict__", {}).get("forward")
        if bound is not None and getattr(bound, "__func__", bound) is not getattr(type(func), "forward", None):
            kernelized.append(name)
    return sorted(kernelized)


def _attention_problem(module: nn.Module, cls: type, family: _Family, families_norm: Callable) -> str | None:
    """Why the fused attention forward must not replace `module`'s, or None."""
    if family.name != "qwen3":
        return f"{family.attention} has no q_norm/k_norm"
    fwd = _own_forward(cls, family)
    if fwd is None:
        return f"{family.attention}.forward is not transformers' own"
    if "forward" in module.__dict__:
        return "forward already replaced on this instance"
    # The fused forward would silently drop a kernel kernelize bound to the instance's RoPE copy.
    if kernelized := _kernelized_funcs(module):
        return f"{', '.join(kernelized)} already kernelized on this instance (kernels.kernelize)"
    names = set(fwd.__code__.co_names)
    if missing := [n for n in _ATTENTION_NAMES if n not in names]:
        return f"{family.attention}.forward no longer uses {', '.join(missing)} (another transformers version?)"
    if _cache_param(cls, family, _ATTENTION_PARAMS) is None:
        return f"{family.attention}.forward has parameters the copy does not reproduce (another transformers version?)"
    for role in ("q_norm", "k_norm"):
        norm = getattr(module, role, None)
        hit = families_norm(norm) if isinstance(norm, nn.Module) else None
        if hit is None:
            return f"{role} is not a verified RMSNorm"
        problem = _norm_formula_problem(hit[1]) or _norm_instance_problem(norm)
        if problem:
            return f"{role}: {problem}"
    for role in ("q_proj", "k_proj", "v_proj", "o_proj"):
        if not isinstance(getattr(module, role, None), nn.Module):
            return f"{role} is missing"
    if not isinstance(getattr(module, "head_dim", None), int):
        return "head_dim is not an int"
    return None


def _merge_qkv(module: nn.Module) -> bool:
    """Merge q/k/v_proj weights into one [Nq + Nk + Nv, hidden] tensor (the Linears become views)."""
    q, k, v = module.q_proj, module.k_proj, module.v_proj
    if not all(_plain_linear(p) and p.bias is None for p in (q, k, v)):
        return False
    w = (q.weight, k.weight, v.weight)
    if len({(t.dtype, t.device, t.shape[1]) for t in w}) != 1:
        return False
    with torch.no_grad():
        merged = torch.cat([t.detach() for t in w], dim=0)
        sizes = [t.shape[0] for t in w]
        parts = merged.split(sizes, dim=0)
        for proj, part, old in zip((q, k, v), parts, w):
            proj.weight = nn.Parameter(part, requires_grad=old.requires_grad)
    module.register_buffer(_FUSED_QKV, merged, persistent=False)
    # Plain attribute (not a submodule or parameter): what _merged_weight checks against.
    module.__dict__["_kernel_merged_params"] = (q.weight, k.weight, v.weight)
    return True


# ------------------------------------------------------------- RoPE global (shared)

_ROPE_LOCK = threading.Lock()
_ROPE_PATCHES: dict[str, list[Any]] = {}  # module name -> [original, replacement, users]


def _rope_target_problem(mod: types.ModuleType, family: _Family, attention_cls: type) -> str | None:
    fwd = _own_forward(attention_cls, family)
    if fwd is None or "apply_rotary_pos_emb" not in fwd.__code__.co_names:
        return f"{family.attention}.forward does not call the module-level apply_rotary_pos_emb"
    current = getattr(mod, "apply_rotary_pos_emb", None)
    if getattr(current, _TAG, None) == "rope":
        return None  # ours, installed for another model
    if isinstance(current, types.FunctionType) and current.__module__ == family.module:
        return None  # transformers' function
    if isinstance(current, nn.Module) and getattr(type(current).forward, "__module__", "").split(".")[0] == "kernels":
        # kernels' use_kernel_forward_from_hub module (kernels.layer.layer in 0.16.x,
        # kernels._internals.layer.layer in 0.19.x).
        return None
    return f"{family.module}.apply_rotary_pos_emb was replaced by {current!r}; not patching over it"


def _install_rope(family: _Family, ops: types.ModuleType) -> str:
    mod = importlib.import_module(family.module)
    with _ROPE_LOCK:
        entry = _ROPE_PATCHES.get(family.module)
        if entry is None:
            original = mod.apply_rotary_pos_emb
            replacement = _make_rope(original, ops)
            mod.apply_rotary_pos_emb = replacement
            entry = _ROPE_PATCHES[family.module] = [original, replacement, 0]
        entry[2] += 1
    return f"{family.module}.apply_rotary_pos_emb"


def _release_rope(module_name: str) -> None:
    with _ROPE_LOCK:
        entry = _ROPE_PATCHES.get(module_name)
        if entry is None:
            return
        entry[2] -= 1
        if entry[2] > 0:
            return
        del _ROPE_PATCHES[module_name]
        mod = importlib.import_module(module_name)
        if mod.apply_rotary_pos_emb is entry[1]:
            mod.apply_rotary_pos_emb = entry[0]


# ------------------------------------------------------------------------ public API


def patch_qwen3(
    model: nn.Module,
    kernels_module: types.ModuleType,
    *,
    norms: bool = True,
    fuse_residual: bool = True,
    fuse_down_residual: bool = True,
    swiglu: bool = True,
    fuse_mlp: bool = True,
    rope: bool = True,
    fuse_qk_norm_rope: bool = True,
    fuse_qkv: bool = True,
) -> PatchReport:
    """Replace the verified Qwen3/Llama modules of `model` with the kernels; return what changed.

    Patch where the model will run (device and dtype final), before `torch.compile` or
    CUDA-graph capture. Inference only: the ops have no backward. `fuse_down_residual` needs
    `fuse_residual` and `swiglu`; `fuse_mlp` needs `swiglu` (gate/up weights become views of
    one merged tensor); `fuse_qk_norm_rope` needs `norms` and `rope`; `fuse_qkv` needs
    `fuse_qk_norm_rope` and merges q/k/v_proj like gate/up.
    """
    missing = [name for name in REQUIRED_OPS if not callable(getattr(kernels_module, name, None))]
    if missing:
        raise ValueError(f"{getattr(kernels_module, '__name__', kernels_module)!r} lacks {', '.join(missing)}")
    if isinstance(model, torch._dynamo.eval_frame.OptimizedModule):
        raise ValueError("patch the model before torch.compile (got a compiled wrapper); patch model._orig_mod")
    if getattr(model, _STATE_ATTR, None) is not None:
        raise RuntimeError("model is already patched; call unpatch_qwen3(model) first")
    if getattr(model, "use_kernels", False) is True:
        # transformers >= 5.25 loads with use_kernels=True by default and kernelizes again on
        # every train()/eval(), which would silently unbind the patched norms.
        raise ValueError("the model uses transformers' Hub kernels (use_kernels=True, the from_pretrained default "
                         "from transformers 5.25); load it with use_kernels=False before patching")

    families = [(fam, cls) for fam in _FAMILIES if (cls := _family_classes(fam)) is not None]
    report = PatchReport()
    patched: list[tuple[nn.Module, str]] = []
    norm_fwd = _make_norm_forward(kernels_module)
    decoder_fwds: dict[tuple[str, bool], Callable] = {}  # by (cache parameter name, down_residual)
    mlp_fwd = _make_mlp_forward(kernels_module, fused=False)
    mlp_fused_fwd = _make_mlp_forward(kernels_module, fused=True)
    attention_fwds: dict[str, Callable] = {}
    fuse_attention = fuse_qk_norm_rope and norms and rope and callable(getattr(kernels_module, "qk_norm_rope_", None))
    rope_families: dict[str, tuple[_Family, type]] = {}
    rope_counts: Counter[str] = Counter()  # attention modules per family module that would call the global
    rope_kernelized: dict[str, str] = {}  # family module -> an attention module whose RoPE copy kernelize replaced
    fused_layers: list[tuple[str, nn.Module, str]] = []  # decoder layers given the fused forward, cache name

    def decoder_forward(cache_param: str, down_residual: bool) -> Callable:
        key = (cache_param, down_residual)
        if key not in decoder_fwds:
            decoder_fwds[key] = _make_decoder_forward(kernels_module, down_residual, cache_param)
        return decoder_fwds[key]

    def family_of(module: nn.Module, role: str) -> tuple[_Family, type] | None:
        for fam, classes in families:
            if type(module) is classes[role]:
                return fam, classes[role]
        return None

    for name, module in model.named_modules():
        cls_name = type(module).__name__

        if (hit := family_of(module, "norm")) is not None:
            fam, cls = hit
            problem = (
                None if _has_own_forward(cls, fam) else f"{cls_name}.forward is not transformers' own"
            ) or _norm_formula_problem(cls) or _norm_instance_problem(module)
            if problem:
                report.skipped.append((name, problem))
            elif norms:
                module.forward = types.MethodType(norm_fwd, module)
                patched.append((module, "rms_norm"))
                report.rms_norm.append(name)
            continue

        if (hit := family_of(module, "decoder")) is not None:
            fam, cls = hit
            report.decoder_layers += 1
            if not fuse_residual:
                continue
            post = getattr(module, "post_attention_layernorm", None)
            problem = _changed_forward(cls, fam, _DECODER_NAMES)
            cache_param = _cache_param(cls, fam, _DECODER_PARAMS)
            if problem is None and cache_param is None:
                problem = f"{cls_name}.forward has parameters the copy does not reproduce (another transformers version?)"
            if problem is None and "forward" in module.__dict__:
                problem = "forward already replaced on this instance"
            if problem is None:
                norm_hit = family_of(post, "norm") if isinstance(post, nn.Module) else None
                if norm_hit is None:
                    problem = "post_attention_layernorm is not a verified RMSNorm"
                else:
                    problem = _norm_formula_problem(norm_hit[1]) or _norm_instance_problem(post)
                    problem = problem and f"post_attention_layernorm: {problem}"
            if problem:
                report.skipped.append((name, f"residual fusion: {problem}"))
            else:
                module.forward = types.MethodType(decoder_forward(cache_param, False), module)
                patched.append((module, "fused_add_rms_norm"))
                report.fused_add_rms_norm.append(name)
                fused_layers.append((name, module, cache_param))
            continue

        if (hit := family_of(module, "mlp")) is not None:
            fam, cls = hit
            if not swiglu:
                continue
            problem = _changed_forward(cls, fam, _MLP_NAMES)
            if problem is None and "forward" in module.__dict__:
                problem = "forward already replaced on this instance"
            if problem is None and not _is_silu(getattr(module, "act_fn", None)):
                problem = f"activation is {type(getattr(module, 'act_fn', None)).__name__}, not SiLU"
            if problem:
                report.skipped.append((name, f"swiglu: {problem}"))
                continue
            gate, up = module.gate_proj, module.up_proj
            can_fuse = (
                fuse_mlp
                and _plain_linear(gate)
                and _plain_linear(up)
                and gate.bias is None
                and up.bias is None
                and gate.weight.dtype == up.weight.dtype
                and gate.weight.device == up.weight.device
                and gate.weight.shape == up.weight.shape
                and gate.weight.shape[0] == module.intermediate_size
            )
            if can_fuse:
                with torch.no_grad():
                    merged = torch.cat([gate.weight.detach(), up.weight.detach()], dim=0)
                    size = module.intermediate_size
                    gate.weight = nn.Parameter(merged[:size], requires_grad=gate.weight.requires_grad)
                    up.weight = nn.Parameter(merged[size:], requires_grad=up.weight.requires_grad)
                module.register_buffer(_FUSED_GATE_UP, merged, persistent=False)
                module.__dict__["_kernel_merged_params"] = (gate.weight, up.weight)
                module.forward = types.MethodType(mlp_fused_fwd, module)
                report.fused_gate_up.append(name)
            else:
                if fuse_mlp:
                    report.skipped.append((name, "gate/up merge: projections are not plain bias-free nn.Linear of one dtype"))
                module.forward = types.MethodType(mlp_fwd, module)
            patched.append((module, "swiglu"))
            report.swiglu.append(name)
            continue

        if (hit := family_of(module, "attention")) is not None:
            fam, cls = hit
            if fuse_attention:
                problem = _attention_problem(module, cls, fam, lambda m: family_of(m, "norm"))
                if problem is None:
                    if fam.module not in attention_fwds:
                        cache_param = _cache_param(cls, fam, _ATTENTION_PARAMS)
                        attention_fwds[fam.module] = _make_attention_forward(kernels_module, fam.module, cache_param)
                    if fuse_qkv and _merge_qkv(module):
                        report.fused_qkv.append(name)
                    elif fuse_qkv:
                        report.skipped.append((name, "q/k/v merge: projections are not plain bias-free nn.Linear of one dtype"))
                    module.forward = types.MethodType(attention_fwds[fam.module], module)
                    patched.append((module, "qk_norm_rope"))
                    report.qk_norm_rope.append(name)
                    continue
                if fam.name == "qwen3":
                    report.skipped.append((name, f"qk_norm_rope: {problem}"))
            if rope:
                mod = importlib.import_module(fam.module)
                problem = _rope_target_problem(mod, fam, cls)
                if problem:
                    report.skipped.append((name, f"rope: {problem}"))
                else:
                    rope_families[fam.module] = (fam, cls)
                    rope_counts[fam.module] += 1
                    if _kernelized_funcs(module):
                        rope_kernelized.setdefault(fam.module, name)
            continue

        if cls_name.endswith("Norm") and not isinstance(module, (nn.LayerNorm, nn.GroupNorm)):
            # Informational: norms of classes this module has not proved equivalent.
            report.skipped.append((name, f"{type(module).__module__}.{cls_name} is not a verified Qwen3/Llama RMSNorm class"))

    if fuse_down_residual:
        # After the walk: a decoder layer is visited before the MLP it holds.
        swiglu_mlps = {id(m) for m, role in patched if role == "swiglu"}
        for name, module, cache_param in fused_layers:
            mlp = getattr(module, "mlp", None)
            down = getattr(mlp, "down_proj", None)
            if id(mlp) not in swiglu_mlps:
                report.skipped.append((name, "down_proj residual: its MLP is not patched with swiglu"))
            elif not (_plain_linear(down) and down.bias is None):
                report.skipped.append((name, "down_proj residual: down_proj is not a plain bias-free nn.Linear"))
            else:
                module.forward = types.MethodType(decoder_forward(cache_param, True), module)
                report.down_residual.append(name)

    for module_name, name in rope_kernelized.items():
        # The global is process-wide: replacing it would bypass that module's kernel too.
        del rope_families[module_name]
        report.skipped.append((name, f"rope: its apply_rotary_pos_emb copy is kernelized (kernels.kernelize), so "
                                     f"{module_name}.apply_rotary_pos_emb is left alone for all "
                                     f"{rope_counts[module_name]} attention modules that call it"))
    report.rope_attention_modules = sum(rope_counts[m] for m in rope_families)
    for module_name, (fam, _cls) in rope_families.items():
        report.rope.append(_install_rope(fam, kernels_module))

    setattr(model, _STATE_ATTR, _PatchState(modules=patched, rope_modules=list(rope_families), report=report))
    return report


def unpatch_qwen3(model: nn.Module) -> None:
    """Restore transformers' forwards (and the RoPE global once no patched model is left).

    Merged gate/up (and q/k/v) weights stay merged: the Linear weights remain views of one tensor
    holding the same values, which transformers' forward uses unchanged.
    """
    state: _PatchState | None = getattr(model, _STATE_ATTR, None)
    if state is None:
        raise RuntimeError("model is not patched by patch_qwen3")
    # A forward wrapped after patching (accelerate / diffusers hooks) cannot be unwrapped here:
    # refuse before changing anything rather than leave kernels running in an "unpatched" model.
    wrapped = [type(m).__name__ for m, _role in state.modules if not _hook_free_forward(m)]
    if wrapped:
        raise RuntimeError(f"{len(wrapped)} patched module(s) ({', '.join(sorted(set(wrapped)))}) had their forward "
                           "replaced after patching (a hook wrapper?); remove those wrappers, then unpatch")
    for module, _role in state.modules:
        if "forward" in module.__dict__:
            del module.forward
        for buffer in (_FUSED_GATE_UP, _FUSED_QKV):
            if buffer in module._buffers:
                del module._buffers[buffer]
        module.__dict__.pop("_kernel_merged_params", None)
    for module_name in state.rope_modules:
        _release_rope(module_name)
    delattr(model, _STATE_ATTR)


def is_patched(model: nn.Module) -> bool:
    return getattr(model, _STATE_ATTR, None) is not None


def patched_roles(model: nn.Module) -> Counter[str]:
    """Count the forwards of this module installed on `model`'s submodules, by role."""
    roles: Counter[str] = Counter()
    for module in model.modules():
        role = _installed_role(module)
        if role is not None:
            roles[role] += 1
    return roles
