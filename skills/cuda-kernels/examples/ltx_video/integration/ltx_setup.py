"""Random-weight LTX-Video transformers and the exact inputs one denoising step feeds them.

Shared by the end-to-end benchmark, the tests and scripts/ltx_kernel_injection_example.py,
so all of them measure the same thing. Never downloads weights: the transformer is built
from its config (diffusers' default config is LTX-Video's 1.92 B-parameter transformer).

Latent geometry (diffusers 0.42.1 LTXPipeline): the VAE compresses 8x in time and 32x in
space into 128 channels, so a video of F frames at H x W becomes latents
[B, 128, (F - 1) // 8 + 1, H // 32, W // 32]; with patch size 1 the pipeline packs them
into hidden_states [B, tokens, 128]. 49 frames at 512 x 768 -> [B, 128, 7, 16, 24] -> 2688
tokens. The transformer gets the latent sizes (num_frames=7, height=16, width=24) to build
its 3-D RoPE, rope_interpolation_scale = (8 / frame_rate, 32, 32), T5 prompt embeddings
[B, 128, 4096] with their attention mask, and one timestep per sample. Classifier-free
guidance runs the negative and the positive prompt together: batch 2 per step.
"""

from __future__ import annotations

import dataclasses
import importlib
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent  # skills/cuda-kernels/examples/ltx_video
SKILL = EXAMPLE.parents[1]  # skills/cuda-kernels
SCRIPTS = SKILL / "scripts"

VAE_TEMPORAL_COMPRESSION = 8
VAE_SPATIAL_COMPRESSION = 32

# diffusers' LTXVideoTransformer3DModel() defaults = LTX-Video 0.9.x: 28 blocks, 32 heads x 64,
# cross-attention 2048, T5-XXL captions (4096), 128 latent channels.
DEFAULT_CONFIG: dict[str, Any] = {}

# Same structure, every size awkward and small: inner dim 2 x 24 = 48 (48 % 6 = 0) is avoided
# on purpose - 2 x 20 = 40 leaves 40 % 6 = 4 RoPE channels of padding, like 2048 % 6 = 2.
TINY_CONFIG: dict[str, Any] = {
    "in_channels": 8,
    "out_channels": 8,
    "num_attention_heads": 2,
    "attention_head_dim": 20,
    "cross_attention_dim": 40,
    "num_layers": 2,
    "caption_channels": 24,
}


@dataclasses.dataclass(frozen=True)
class VideoShape:
    """A generation request: pixel-space video size and prompt length."""

    frames: int = 49
    height: int = 512
    width: int = 768
    text_len: int = 128
    frame_rate: int = 25

    def latent(self, patch_size: int = 1, patch_size_t: int = 1) -> tuple[int, int, int]:
        """(frames, height, width) of the packed latent grid the transformer sees."""
        if self.height % VAE_SPATIAL_COMPRESSION or self.width % VAE_SPATIAL_COMPRESSION:
            raise ValueError(
                f"height and width must be multiples of {VAE_SPATIAL_COMPRESSION}, got {self.height}x{self.width}"
            )
        if self.frames < 1 or (self.frames - 1) % VAE_TEMPORAL_COMPRESSION:
            raise ValueError(f"frames must be 8k + 1 (the VAE keeps the first frame), got {self.frames}")
        f = (self.frames - 1) // VAE_TEMPORAL_COMPRESSION + 1
        h = self.height // VAE_SPATIAL_COMPRESSION
        w = self.width // VAE_SPATIAL_COMPRESSION
        return f // patch_size_t, h // patch_size, w // patch_size

    def tokens(self, patch_size: int = 1, patch_size_t: int = 1) -> int:
        f, h, w = self.latent(patch_size, patch_size_t)
        return f * h * w


FULL_SHAPE = VideoShape()  # 49 x 512 x 768 -> 2688 tokens
TINY_SHAPE = VideoShape(frames=17, height=96, width=160, text_len=7)  # 3 x 3 x 5 = 45 tokens


def build_transformer(
    config: dict[str, Any], *, device: str | torch.device, dtype: torch.dtype, seed: int = 0
) -> torch.nn.Module:
    """A random-weight LTXVideoTransformer3DModel, in eval mode, on `device` in `dtype`.

    Parameters are created directly on `device` (initialising 1.92 B parameters on the CPU
    takes minutes; on a GPU, a second) in fp32, then cast, so every dtype sees the same weights.
    """
    from diffusers import LTXVideoTransformer3DModel
    from diffusers.utils import logging as diffusers_logging

    torch.manual_seed(seed)
    with torch.device(device):
        model = LTXVideoTransformer3DModel(**config)
    # ModelMixin.to(dtype) warns about from_pretrained's fp32-module handling, which a
    # model built from its config does not have; keep the log quiet for this one call.
    verbosity = diffusers_logging.get_verbosity()
    diffusers_logging.set_verbosity_error()
    try:
        model = model.to(dtype=dtype)
    finally:
        diffusers_logging.set_verbosity(verbosity)
    return model.eval().requires_grad_(False)


def make_inputs(
    transformer: torch.nn.Module,
    batch: int,
    shape: VideoShape,
    *,
    seed: int = 0,
    per_token_timestep: bool = False,
) -> dict[str, Any]:
    """Keyword arguments for one `transformer(**inputs)` denoising step, as LTXPipeline builds them."""
    cfg = transformer.config
    param = next(transformer.parameters())
    device, dtype = param.device, param.dtype
    gen = torch.Generator(device="cpu").manual_seed(seed)
    f, h, w = shape.latent(cfg.patch_size, cfg.patch_size_t)
    tokens = f * h * w
    channels = cfg.in_channels * cfg.patch_size_t * cfg.patch_size**2

    # latents [B, C, F, H, W] packed to [B, F*H*W, C] exactly like LTXPipeline._pack_latents (patch 1)
    latents = torch.randn(batch, channels, f, h, w, generator=gen)
    hidden_states = latents.permute(0, 2, 3, 4, 1).reshape(batch, tokens, channels)

    prompt = torch.randn(batch, shape.text_len, cfg.caption_channels, generator=gen)
    # T5 pads every prompt to text_len; real prompts use a few dozen tokens of it.
    mask = torch.zeros(batch, shape.text_len)
    for b in range(batch):
        mask[b, : max(1, (shape.text_len * (b + 1)) // (batch + 2))] = 1

    if per_token_timestep:  # LTXConditionPipeline: conditioning tokens keep timestep 0
        timestep = torch.rand(batch, tokens, generator=gen) * 1000.0
    else:
        timestep = torch.full((batch,), 937.5)

    return {
        "hidden_states": hidden_states.to(device=device, dtype=dtype),
        "encoder_hidden_states": prompt.to(device=device, dtype=dtype),
        "timestep": timestep.to(device=device),
        "encoder_attention_mask": mask.to(device=device),
        "num_frames": f,
        "height": h,
        "width": w,
        "rope_interpolation_scale": (
            VAE_TEMPORAL_COMPRESSION / shape.frame_rate,
            VAE_SPATIAL_COMPRESSION,
            VAE_SPATIAL_COMPRESSION,
        ),
        "return_dict": False,
    }


def cast_inputs(inputs: dict[str, Any], dtype: torch.dtype) -> dict[str, Any]:
    """The same inputs for a model in another dtype (floating tensors except timestep/mask)."""
    out = dict(inputs)
    for key in ("hidden_states", "encoder_hidden_states"):
        out[key] = inputs[key].to(dtype)
    return out


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """||actual - expected|| / ||expected|| in float64 (the whole tensor, not elementwise)."""
    a, e = actual.detach().double(), expected.detach().double()
    return float(torch.linalg.vector_norm(a - e) / torch.linalg.vector_norm(e).clamp_min(1e-300))


def time_call(
    fn: Callable[[], Any], *, device: torch.device, warmup: int, iters: int
) -> list[float]:
    """Per-call times in ms: CUDA events around each call on GPU, perf_counter on CPU."""
    for _ in range(warmup):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for start, end in zip(starts, ends):
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize(device)
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def load_kernels(
    package_path: str | None, *, archs: Sequence[str] | None, build_dir: str | None
) -> Any:
    """Import ltx_video_kernels: from a directory holding the built package, or build it now.

    Building uses the skill's scripts/build_local.py (ninja-cached, so a second call is quick).
    """
    if package_path is not None:
        root = Path(package_path).resolve()
        if (root / "__init__.py").is_file():  # the package folder itself was given
            root = root.parent
        sys.path.insert(0, str(root))
        return importlib.import_module("ltx_video_kernels")
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    from build_local import build_project  # noqa: PLC0415 - lives in the skill's scripts/

    result = build_project(
        EXAMPLE, archs=list(archs) if archs else None, build_dir=Path(build_dir) if build_dir else None
    )
    if str(result.path) not in sys.path:
        sys.path.insert(0, str(result.path))
    return importlib.import_module(result.package)


def environment(device: torch.device) -> dict[str, Any]:
    """Versions and device facts recorded next to every result."""
    import platform

    import diffusers

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "diffusers": diffusers.__version__,
        "device": str(device),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(
            gpu=props.name,
            sm=f"{props.major}.{props.minor}",
            sms=props.multi_processor_count,
            gpu_memory_gib=round(props.total_memory / 2**30, 1),
        )
        try:
            import triton

            env["triton"] = triton.__version__
        except ImportError:
            pass
        try:
            import subprocess

            env["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20, check=False,
            ).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            pass
    else:
        env["cpu"] = platform.processor() or platform.machine()
        env["threads"] = torch.get_num_threads()
    return env
