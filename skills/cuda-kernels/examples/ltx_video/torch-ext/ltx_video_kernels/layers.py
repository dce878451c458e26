"""Kernel Hub-style layers for diffusers' LTX-Video transformer (verified on diffusers 0.42.1).

A Hub layer is a stateless ``nn.Module`` subclass that only defines ``forward``: the
`kernels` library (``kernelize``) and our ``integration/patch_ltx.py`` bind that forward to an
existing module instance (``module.forward = MethodType(Layer.forward, module)``), so the
layer reads the original module's attributes (``self.weight``, ``self.eps``, ``self.proj``...)
and the model keeps its parameters, state dict and hooks.

Each layer reproduces exactly one diffusers forward, with the arithmetic moved into this
package's kernels. Where the kernel would not compute the same thing (a bias, a weight whose
dtype differs from the input: diffusers then returns the weight's dtype, not the input's)
the layer calls the original forward, ``type(self).forward``, instead of guessing.

=====================  ================================================  ===========================
layer                  replaces the forward of                           kernels
=====================  ================================================  ===========================
DiffusersRMSNorm       diffusers.models.normalization.RMSNorm            rms_norm (weight may be None)
TorchRMSNorm           torch.nn.RMSNorm (1-D normalized_shape)           rms_norm
GELUTanh               diffusers.models.activations.GELU, tanh variant   gelu_tanh
GELUTanhEpilogue       the same GELU, opt-in: GELU in the GEMM epilogue  cuBLASLt (torch), no kernel
TorchGELUTanh          torch.nn.GELU(approximate="tanh")                 gelu_tanh
LTXVideoBlockAdaLN     diffusers' LTXVideoTransformerBlock               rms_norm_modulate,
                                                                         add_rms_norm_modulate
=====================  ================================================  ===========================

In LTX-Video the attention's q/k norm + RoPE live in an attention *processor*, not in a
module forward, so that part is in ``integration/patch_ltx.py`` (a diffusers processor class).

Inference only (``has_backward = False``): the CUDA ops register no autograd formula.
"""

from __future__ import annotations

import importlib

import torch
from torch import nn

# The package's public functions, looked up on the package module at call time: this file
# then works whichever order `__init__` defines them and imports `layers` in, and when the
# `kernels` library loads the package under a generated module name.
_ops = importlib.import_module(__package__)

__all__ = [
    "DiffusersRMSNorm",
    "GELUTanh",
    "GELUTanhEpilogue",
    "LTXVideoBlockAdaLN",
    "TorchGELUTanh",
    "TorchRMSNorm",
    "torch_rms_norm_default_eps",
]


def torch_rms_norm_default_eps(dtype: torch.dtype) -> float:
    """The eps torch.nn.RMSNorm(eps=None) really uses for inputs of `dtype`.

    torch documents ``finfo(x.dtype).eps``, but ATen (and torch's own decomposition)
    take the epsilon of the *computation* dtype: float32 for fp16/bf16/fp32 inputs, float64
    for float64. For bf16 that is 1.19e-7, not 7.8e-3: using bf16's eps changes the output.
    """
    return torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps


class DiffusersRMSNorm(nn.Module):
    """diffusers ``RMSNorm``: ``x * rsqrt(mean(x^2) + eps)`` in fp32, times ``weight`` if any.

    Without a weight (``elementwise_affine=False``: every norm1/norm2 of LTX) diffusers
    returns the input dtype; the kernel takes ``weight=None`` (no ``torch.ones`` per call).
    With a weight of the input's dtype diffusers rounds twice (after the norm and after the
    weight); the kernel rounds once, within bf16 tolerance of it.
    """

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        weight = self.weight
        if self.bias is not None or (weight is not None and weight.dtype != hidden_states.dtype):
            # bias: not in the kernel; fp32 weight on bf16 input: diffusers returns fp32.
            return type(self).forward(self, hidden_states)
        return _ops.rms_norm(hidden_states, weight, self.eps)


class TorchRMSNorm(nn.Module):
    """``torch.nn.RMSNorm`` over the last dim: LTX's q/k norms (across all heads, eps 1e-5)."""

    can_torch_compile = True
    has_backward = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if len(self.normalized_shape) != 1:
            return type(self).forward(self, x)
        eps = self.eps if self.eps is not None else torch_rms_norm_default_eps(x.dtype)
        return _ops.rms_norm(x, self.weight, eps)


class GELUTanh(nn.Module):
    """diffusers ``GELU(approximate="tanh")``: ``gelu_tanh(proj(x))``, the LTX feed-forward's first half."""

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.approximate != "tanh":
            return type(self).forward(self, hidden_states)
        return _ops.gelu_tanh(self.proj(hidden_states))


class GELUTanhEpilogue(nn.Module):
    """diffusers ``GELU(approximate="tanh")`` with the GELU applied in the projection's GEMM epilogue.

    The activation is a pure bandwidth cost: LTX's ``ff.net[0]`` writes a ``[tokens, 8192]``
    projection and the GELU reads and rewrites it. cuBLASLt can apply bias + tanh-GELU to the
    fp32 accumulator before the single store, which removes that pass entirely; torch exposes
    it as ``torch._addmm_activation(bias, x, w.t(), use_gelu=True)``. That op is private, and
    its GELU is the tanh form *only on CUDA* (its CPU path uses the erf form), so this layer
    uses it for CUDA inputs that need no autograd and takes the ``gelu_tanh`` kernel path
    otherwise. Not a kernel of this package: an opt-in comparison point
    (``patch_ltx_transformer(..., gelu_epilogue=True)``).
    """

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.approximate != "tanh":
            return type(self).forward(self, hidden_states)
        proj = self.proj
        if (
            hidden_states.is_cuda
            and proj.bias is not None
            and proj.weight.dtype == hidden_states.dtype
            and proj.bias.dtype == hidden_states.dtype
            and not (torch.is_grad_enabled() and (hidden_states.requires_grad or proj.weight.requires_grad))
        ):
            rows = hidden_states.reshape(-1, hidden_states.shape[-1])
            out = torch._addmm_activation(proj.bias, rows, proj.weight.t(), use_gelu=True)
            return out.view(*hidden_states.shape[:-1], out.shape[-1])
        return _ops.gelu_tanh(proj(hidden_states))


class TorchGELUTanh(nn.Module):
    """``torch.nn.GELU(approximate="tanh")``: LTX's caption projection (PixArtAlphaTextProjection)."""

    can_torch_compile = True
    has_backward = False

    def forward(self, input: torch.Tensor) -> torch.Tensor:  # noqa: A002 - torch's parameter name
        if self.approximate != "tanh":
            return type(self).forward(self, input)
        return _ops.gelu_tanh(input)


def _fusable(norm: nn.Module, x: torch.Tensor, *others: torch.Tensor) -> bool:
    # The fused kernels return x.dtype; diffusers' unfused expressions promote to the widest
    # of x, weight, scale, shift (and residual). Fuse only where both give the same dtype.
    weight = norm.weight
    return (
        norm.bias is None
        and (weight is None or weight.dtype == x.dtype)
        and all(t.dtype == x.dtype for t in others)
    )


def _norm_modulate(
    norm: nn.Module, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor
) -> torch.Tensor:
    """``norm(x) * (1 + scale) + shift``."""
    if _fusable(norm, x, scale, shift):
        return _ops.rms_norm_modulate(x, norm.weight, scale, shift, norm.eps)
    return norm(x) * (1 + scale) + shift


def _add_norm_modulate(
    norm: nn.Module, x: torch.Tensor, residual: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``h = residual + x``; ``(norm(h) * (1 + scale) + shift, h)``."""
    if _fusable(norm, x, residual, scale, shift) and residual.shape == x.shape:
        return _ops.add_rms_norm_modulate(x, residual, None, norm.weight, scale, shift, norm.eps)
    h = residual + x
    return norm(h) * (1 + scale) + shift, h


class LTXVideoBlockAdaLN(nn.Module):
    """``LTXVideoTransformerBlock.forward`` of diffusers 0.42.1 with the AdaLN sites fused.

    diffusers computes ``norm1(h) * (1 + scale_msa) + shift_msa`` as three kernels and three
    bf16 roundings; here it is one ``rms_norm_modulate``. The cross-attention's residual add
    and the MLP's AdaLN, ``h = h + attn2(h)`` then ``norm2(h) * (1 + scale_mlp) + shift_mlp``,
    are one ``add_rms_norm_modulate`` (it writes both the new residual stream and the
    modulated norm). The two gated residual adds, ``h + y * gate``, are one ``torch.addcmul``
    each instead of a multiply and an add. ``scale``/``shift``/``gate`` are ``[B, T, D]`` views
    into the ``[B, T, 6, D]`` AdaLN table, with T = 1 (one timestep per video) or T = sequence
    length (per-token timesteps, as LTX's condition pipeline passes them). Otherwise this is
    the diffusers forward line for line; integration/patch_ltx.py binds this layer only to
    blocks whose class and source it has checked.
    """

    can_torch_compile = True
    has_backward = False

    def forward(
        self,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        temb: torch.Tensor,
        image_rotary_emb: tuple[torch.Tensor, torch.Tensor] | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        batch_size = hidden_states.size(0)

        num_ada_params = self.scale_shift_table.shape[0]
        ada_values = self.scale_shift_table[None, None].to(temb.device) + temb.reshape(
            batch_size, temb.size(1), num_ada_params, -1
        )
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = ada_values.unbind(dim=2)
        norm_hidden_states = _norm_modulate(self.norm1, hidden_states, scale_msa, shift_msa)

        attn_hidden_states = self.attn1(
            hidden_states=norm_hidden_states,
            encoder_hidden_states=None,
            image_rotary_emb=image_rotary_emb,
        )
        hidden_states = torch.addcmul(hidden_states, attn_hidden_states, gate_msa)

        attn_hidden_states = self.attn2(
            hidden_states,
            encoder_hidden_states=encoder_hidden_states,
            image_rotary_emb=None,
            attention_mask=encoder_attention_mask,
        )
        norm_hidden_states, hidden_states = _add_norm_modulate(
            self.norm2, attn_hidden_states, hidden_states, scale_mlp, shift_mlp
        )

        ff_output = self.ff(norm_hidden_states)
        hidden_states = torch.addcmul(hidden_states, ff_output, gate_mlp)

        return hidden_states
