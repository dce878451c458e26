"""Kernel Hub layers: drop-in `forward`s for transformers' Qwen3 / Llama modules.

`kernels.kernelize` swaps a module's `forward` for the `forward` of a class found in
`<package>.layers`, binding it to the *original* module instance. So these classes own
no state: no `__init__`, no extra members (kernels' `_validate_layer` rejects both),
and their `forward` uses only attributes the transformers module already has
(`weight` and `variance_epsilon` on `Qwen3RMSNorm`; `gate_proj`, `up_proj`,
`down_proj` and `act_fn` on `Qwen3MLP`). Each forward has the same parameters as the
forward it replaces, which kernels also checks.

Mapping names used by the example (`integration/kernel_hub.py`, HUB_LAYERS):
    "RMSNorm"        -> RMSNorm          (Qwen3RMSNorm / LlamaRMSNorm)
    "SwiGLUMLP"      -> SwiGLUMLP        (Qwen3MLP / LlamaMLP without bias)
and, for transformers' own `@use_kernel_forward_from_hub("rotary_pos_emb")` on
`apply_rotary_pos_emb`, which only acts while transformers accepts the installed kernels
(0.16.x; not with the 0.17.2 this project pins, so HUB_LAYERS leaves it out):
    "rotary_pos_emb" -> ApplyRotaryPosEmb (unsqueeze_dim=1)

The kernels are inference kernels (no autograd formula), hence `has_backward = False`;
they have fake (meta) registrations, hence `can_torch_compile = True`.
"""

from __future__ import annotations

import importlib

import torch
from torch import nn

# The package's public functions (rms_norm, swiglu, rope, ...). Looked up through the
# package module at call time, so this file does not care in which order `__init__`
# defines them and imports this module; it also works when `kernels` loads the
# package under a generated module name.
_ops = importlib.import_module(__package__)


def _is_silu(act: nn.Module) -> bool:
    # transformers' ACT2FN["silu"] is `transformers.activations.SiLUActivation` (its forward
    # is F.silu); `nn.SiLU` is equivalent. Matched by exact class identity (module and
    # name), not by a substring, and without importing transformers into the kernel package.
    cls = type(act)
    return cls is nn.SiLU or (cls.__module__, cls.__qualname__) == ("transformers.activations", "SiLUActivation")


class RMSNorm(nn.Module):
    """`weight * (x * rsqrt(mean(x^2) + variance_epsilon))`, fp32 math, cast back.

    transformers computes the normalized value in fp32, casts it to the input dtype and
    then multiplies by the weight, so a weight whose dtype differs from the input
    promotes the result (fp32 weight, bf16 input -> fp32 output). The kernel returns the
    input dtype, so that case keeps transformers' formula: weightless kernel, then the
    multiply in PyTorch.
    """

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if hidden_states.dtype != self.weight.dtype:
            return self.weight * _ops.rms_norm(hidden_states, None, self.variance_epsilon)
        return _ops.rms_norm(hidden_states, self.weight, self.variance_epsilon)


class SwiGLUMLP(nn.Module):
    """`down_proj(silu(gate_proj(x)) * up_proj(x))` with the activation and product in one kernel."""

    can_torch_compile = True
    has_backward = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.gate_proj(x)
        up = self.up_proj(x)
        if not _is_silu(self.act_fn) or gate.dtype != up.dtype:
            return self.down_proj(self.act_fn(gate) * up)
        return self.down_proj(_ops.swiglu(gate, up))


def rope_layout_is_transformers(q, k, cos, sin, unsqueeze_dim: int = 1) -> bool:
    """True for exactly the layout transformers' attention passes to apply_rotary_pos_emb
    (q, k: [B, H, S, D]; cos, sin: [B, S, D]; one dtype and device; unsqueeze_dim=1), the
    only one the kernel is sent. Shared by this layer and integration/patch_qwen3.py."""
    return (
        unsqueeze_dim == 1
        and q.dim() == 4
        and k.dim() == 4
        and cos.dim() == 3
        and cos.shape == sin.shape
        and cos.shape[0] == q.shape[0] == k.shape[0]
        and cos.shape[1] == q.shape[2] == k.shape[2]
        and cos.shape[2] == q.shape[3] == k.shape[3]
        and q.shape[3] % 2 == 0
        and q.dtype == k.dtype == cos.dtype == sin.dtype
        and q.device == k.device == cos.device == sin.device
    )


class ApplyRotaryPosEmb(nn.Module):
    """transformers' `apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)` (rotate-half form).

    Only the layout transformers' attention uses is sent to the kernel: q, k as
    [B, H, S, D], cos/sin as [B, S, D] of the same dtype, `unsqueeze_dim=1`. Anything
    else runs the PyTorch formula, so the layer is safe to map for any caller.
    """

    can_torch_compile = True
    has_backward = False

    def forward(self, q, k, cos, sin, unsqueeze_dim=1):
        if rope_layout_is_transformers(q, k, cos, sin, unsqueeze_dim):
            return _ops.rope(q, k, cos, sin)
        cos = cos.unsqueeze(unsqueeze_dim)
        sin = sin.unsqueeze(unsqueeze_dim)
        half = q.shape[-1] // 2
        q_rot = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
        k_rot = torch.cat((-k[..., half:], k[..., :half]), dim=-1)
        return (q * cos) + (q_rot * sin), (k * cos) + (k_rot * sin)


__all__ = ["ApplyRotaryPosEmb", "RMSNorm", "SwiGLUMLP", "rope_layout_is_transformers"]
