"""Random-weight Qwen3 models for tests and benchmarks (weights are never downloaded).

- `qwen3_8b_config()`: the real Qwen3-8B architecture, values copied from the model's
  published config.json (https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json).
  Built on the meta device it has 36 decoder layers and 145 `Qwen3RMSNorm` modules
  (input_layernorm, post_attention_layernorm, q_norm, k_norm in every layer, plus the
  final norm) and 8,190,735,360 parameters (`count_modules` / the tests check this).
- `tiny_qwen3_config()`: the same structure at toy sizes, for CPU tests in CI.
- `build_random_model()`: instantiates directly on the target device with the target
  dtype (8B parameters initialise in about a second on a GPU; on the CPU it would take
  minutes), then gives every RMSNorm a non-trivial weight so that a kernel that ignored
  the weight, or applied it as (1 + w), could not pass a comparison.
- `compare_logits()`: relative L2 error, max abs error and top-1 agreement, in fp64.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import torch
from torch import nn

# https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json (transformers 5 spells
# rope_theta as rope_parameters). Only the architecture matters here; token ids are
# included so that generation utilities see the real values.
QWEN3_8B_CONFIG: dict[str, Any] = {
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_act": "silu",
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    "attention_bias": False,
    "attention_dropout": 0.0,
    "tie_word_embeddings": False,
    "use_sliding_window": False,
    "sliding_window": None,
    "max_window_layers": 36,
    "initializer_range": 0.02,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
}

# Published facts the tests hold the meta-device model to.
QWEN3_8B_LAYERS = 36
QWEN3_8B_RMSNORMS = 145  # 4 per layer (input, post-attention, q_norm, k_norm) + final norm
QWEN3_8B_PARAMETERS = 8_190_735_360

# Toy sizes with the same structure: GQA (4 query heads share 2 KV heads), per-head
# q/k norms, untied lm_head. Odd-ish sizes on purpose (hidden 96 is not a power of 2).
TINY_QWEN3_CONFIG: dict[str, Any] = {
    **QWEN3_8B_CONFIG,
    "vocab_size": 512,
    "hidden_size": 96,
    "intermediate_size": 160,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "max_position_embeddings": 512,
    "max_window_layers": 3,
    "bos_token_id": 1,
    "eos_token_id": 2,
}


def qwen3_8b_config(**overrides: Any):
    """`Qwen3Config` with the real Qwen3-8B sizes (see QWEN3_8B_CONFIG for the source)."""
    from transformers import Qwen3Config

    return Qwen3Config(**{**QWEN3_8B_CONFIG, **overrides})


def tiny_qwen3_config(**overrides: Any):
    from transformers import Qwen3Config

    return Qwen3Config(**{**TINY_QWEN3_CONFIG, **overrides})


def tiny_llama_config(**overrides: Any):
    """A toy Llama (same block structure as Qwen3 minus q_norm/k_norm)."""
    from transformers import LlamaConfig

    values = {
        "vocab_size": 512,
        "hidden_size": 96,
        "intermediate_size": 160,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 24,
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
    }
    return LlamaConfig(**{**values, **overrides})


def build_random_model(
    config,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    norm_weight_spread: float = 0.25,
    attn_implementation: str = "sdpa",
) -> nn.Module:
    """A causal LM with random weights, created on `device` in `dtype`, in eval mode.

    RMSNorm weights start at 1.0 in transformers; they are redrawn from
    1 + U(-spread, spread) so that weight handling is exercised.
    """
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn_implementation)
    model.eval()
    if norm_weight_spread and str(device) != "meta":
        generator = torch.Generator(device="cpu").manual_seed(seed + 1)
        with torch.no_grad():
            for module in model.modules():
                weight = getattr(module, "weight", None)
                if type(module).__name__.endswith("RMSNorm") and isinstance(weight, torch.Tensor):
                    noise = torch.rand(weight.shape, generator=generator, dtype=torch.float32)
                    weight.copy_((1.0 + (2.0 * noise - 1.0) * norm_weight_spread).to(weight.dtype))
    return model


def cast_parameters(model: nn.Module, dtype: torch.dtype) -> nn.Module:
    """Cast parameters only, in place: the model you would have built with `dtype=`.

    `model.to(torch.bfloat16)` would also round the rotary `inv_freq` buffer, which
    transformers keeps in fp32 when it builds a bf16 model; rounded frequencies shift the
    RoPE angles by up to ~1 rad at position 500, an error no kernel made.
    """
    with torch.no_grad():
        for param in model.parameters():
            param.data = param.data.to(dtype)
    return model


def count_modules(model: nn.Module) -> dict[str, Any]:
    """Decoder layers, RMSNorm modules (by exact class and by role) and parameters."""
    norm_classes: Counter[str] = Counter()
    roles: Counter[str] = Counter()
    layers = 0
    for name, module in model.named_modules():
        cls = type(module).__name__
        if cls.endswith("DecoderLayer"):
            layers += 1
        if cls.endswith("RMSNorm"):
            norm_classes[cls] += 1
            role = name.rsplit(".", 1)[-1]
            roles["final_norm" if name.endswith("model.norm") or name == "norm" else role] += 1
    return {
        "decoder_layers": layers,
        "rms_norm_modules": sum(norm_classes.values()),
        "rms_norm_by_class": dict(norm_classes),
        "rms_norm_by_role": dict(roles),
        "parameters": sum(p.numel() for p in model.parameters()),
    }


def compare_logits(test: torch.Tensor, reference: torch.Tensor, chunk_rows: int = 256) -> dict[str, float]:
    """Relative L2 error ||test - ref|| / ||ref||, max abs error, top-1 agreement.

    Works row-chunk by row-chunk in fp64 so that [4096, 151936] logits do not need a
    5 GB fp64 copy.
    """
    if test.shape != reference.shape:
        raise ValueError(f"logit shapes differ: {tuple(test.shape)} vs {tuple(reference.shape)}")
    a = test.reshape(-1, test.shape[-1])
    b = reference.reshape(-1, reference.shape[-1])
    err_sq = ref_sq = 0.0
    max_abs = 0.0
    agree = 0
    for start in range(0, a.shape[0], chunk_rows):
        ca = a[start : start + chunk_rows].double()
        cb = b[start : start + chunk_rows].double()
        diff = ca - cb
        err_sq += float(diff.square().sum())
        ref_sq += float(cb.square().sum())
        max_abs = max(max_abs, float(diff.abs().max())) if diff.numel() else max_abs
        agree += int((ca.argmax(-1) == cb.argmax(-1)).sum())
    rows = a.shape[0]
    return {
        "rel_l2": math.sqrt(err_sq) / math.sqrt(ref_sq) if ref_sq > 0 else math.sqrt(err_sq),
        "max_abs": max_abs,
        "top1_agreement": agree / rows if rows else 1.0,
        "positions": rows,
        "finite": bool(torch.isfinite(a).all()),
    }


def random_input_ids(batch: int, seq_len: int, vocab_size: int, *, device, seed: int = 1234) -> torch.Tensor:
    generator = torch.Generator(device="cpu").manual_seed(seed)
    ids = torch.randint(0, vocab_size, (batch, seq_len), generator=generator)
    return ids.to(device)


def cache_keyword(model: nn.Module) -> str:
    """The keyword `model`'s forward takes the KV cache under.

    transformers 5.24 renamed `past_key_values` to `cache`; the old name still works until
    5.40 but warns on every call, which a timed decode loop should not pay for.
    """
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

