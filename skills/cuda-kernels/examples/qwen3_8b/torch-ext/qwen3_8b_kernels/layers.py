"""Kernel Hub layers: drop-in `forward`s for transformers' Qwen3 / Llama modules.

`kernels.kernelize` binds a layer class's `forward` to the *original* module, so these
classes own no state (no `__init__`, no extra members: kernels rejects both), use only the
module's own attributes, and keep the replaced forward's parameters. Mapping names
(integration/kernel_hub.py, HUB_LAYERS; why each: integration/README.md):
    "RMSNorm"        -> RMSNorm          (Qwen3RMSNorm / LlamaRMSNorm)
    "SwiGLUMLP"      -> SwiGLUMLP        (Qwen3MLP / LlamaMLP without bias)
    "rotary_pos_emb" -> ApplyRotaryPosEmb (not in HUB_LAYERS: transformers' own decorator,
                        acting only inside its kernels version window)
No autograd formula (`has_backward = False`); fake kernels (`can_torch_compile = True`).
"""

from __future__ import annotations

import importlib

import torch
from torch import nn

# The package's public functions, looked up at call time: independent of the order
# `__init__` defines them, and works under the module name `kernels` loads the package as.
_ops = importlib.import_module(__package__)


def _is_silu(act: nn.Module) -> bool:
    # transformers' SiLUActivation or nn.SiLU, by exact class (no transformers import).
    cls = type(act)
    return cls is nn.SiLU or (cls.__module__, cls.__qualname__) == ("transformers.activations", "SiLUActivation")


class RMSNorm(nn.Module):
    """`weight * (x * rsqrt(mean(x^2) + variance_epsilon))`, fp32 math, cast back.

    A weight of another dtype promotes in transformers (fp32 weight, bf16 input -> fp32);
    the kernel returns the input dtype, so then: weightless kernel, multiply in PyTorch.
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

    Only transformers' layout goes to the kernel; anything else runs the PyTorch formula,
    so the layer is safe to map for any caller.
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
