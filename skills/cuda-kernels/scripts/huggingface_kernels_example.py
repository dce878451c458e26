#!/usr/bin/env python3
"""Kernel Hub integration: load a kernel the way `kernels` does and kernelize a transformers model.

    python scripts/huggingface_kernels_example.py --check        # CPU: a pure-PyTorch kernel in Hub layout
    python scripts/huggingface_kernels_example.py --example qwen3_8b --device cuda   # build_local + Hub variant
    python scripts/huggingface_kernels_example.py --local path/to/my-rmsnorm/build --device cuda
    python scripts/huggingface_kernels_example.py --repo-id my-org/my-rmsnorm --version 1 --device cuda

--check needs no network or compiler: it loads the demo kernel with get_local_kernel, kernelizes a
tiny random Qwen3 through LocalLayerRepository, checks every Qwen3RMSNorm runs the layer with equal
logits, and binds the kernels API calls the skill documents. The model is a random-weight Qwen3
(--real-size: Qwen3-8B shapes), never downloaded; the kernel provides `layers.<--layer>`.
Accuracy: fp32 against the unpatched model (bound 1e-5); bf16 against an fp32 run of the same
weights (bound 1.25x the unpatched bf16 model's own error + 1e-3). Timing (CUDA events; wall
clock on CPU, which checks the path, not speed): unpatched eager, torch.compile of it (compiled
before kernelize so it never sees the kernel; "aot_eager" on CPU; --no-compile skips it) and
kernelized. Every variant gets attention_mask={"full_attention": None}: under dynamo transformers
would build an [S, S] mask and compile would time a slower attention. Roofline context: 1 GiB
copy bandwidth (CUDA) and each variant's weight traffic as % of it; prefill is matmul-bound, so
that % is context, not a target. --out writes JSON. --help needs none of torch/transformers/kernels.
Exit codes: 0 ok, 1 check failed, 2 usage error.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Callable

SKILL = Path(__file__).resolve().parent.parent
EXAMPLE_LAYER_NAMES = {"qwen3_8b": "RMSNorm"}

DEMO_NAME = "demo-rmsnorm"
DEMO_INIT = '''\
"""demo-rmsnorm: a pure-PyTorch kernel laid out like one build variant of a Hub kernel."""

import torch

from . import layers  # noqa: F401  (kernels looks up `<module>.layers`)

CALLS = {"rms_norm": 0}


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """transformers' Qwen3RMSNorm formula: fp32 statistics, cast, then the weight."""
    CALLS["rms_norm"] += 1
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    return weight * y if weight is not None else y
'''
DEMO_LAYERS = '''\
"""Stateless layers for kernels.kernelize: no __init__, same forward signature as the module."""

import importlib

import torch
from torch import nn

_kernel = importlib.import_module(__package__)  # works under the loader's unique module name


class RMSNorm(nn.Module):
    can_torch_compile = True
    has_backward = True

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return _kernel.rms_norm(hidden_states, self.weight, self.variance_epsilon)
'''


class ExampleError(Exception):
    """A failure with what to do about it."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _require(module: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        raise ExampleError(f"this needs the '{module}' package: pip install {module}") from None


def variant_digest(variant: Path) -> dict[str, Any] | None:
    """metadata.json's `digest` for the files now in `variant`, hashed by kernels itself.

    kernels 0.19 checks it on every get_local_kernel (a mismatch raises; none: a warning),
    0.17.2 ignores it. Hashing with kernels' own `Digest.hash_variant`, which the loader
    compares with, cannot drift from its rules (which files, symlinks). None when the
    installed kernels has no digest support.
    """
    try:
        from kernels._rust import Digest, DigestAlgorithm  # noqa: PLC0415
    except ImportError:
        return None
    digest = Digest.hash_variant(DigestAlgorithm.SHA256, variant)
    # "sha256" is DigestAlgorithm.SHA256's name in metadata.json; the files map is
    # relative path -> base64 of the file's SHA-256.
    return {"algorithm": "sha256", "files": dict(digest.files)}


def _write_metadata(variant: Path, name: str, backend: dict[str, Any]) -> None:
    """Write metadata.json last: its digest covers the files already in `variant`."""
    meta: dict[str, Any] = {"id": f"_{name.replace('-', '_')}_{variant.name.replace('-', '_')}", "name": name,
                            "version": 1, "license": "apache-2.0", "python-depends": [], "backend": backend}
    digest = variant_digest(variant)
    if digest is not None:
        meta["digest"] = digest
    (variant / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def write_demo_kernel(root: Path) -> Path:
    """A Hub-layout tree `root/build/torch-universal/demo_rmsnorm/` whose metadata.json records
    the digest kernels 0.19 verifies on load; returns root."""
    variant = root / "build" / "torch-universal"
    package = variant / DEMO_NAME.replace("-", "_")
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(DEMO_INIT, encoding="utf-8")
    (package / "layers.py").write_text(DEMO_LAYERS, encoding="utf-8")
    # A noarch variant's backend type is not checked by get_local_kernel; "cpu" says what it is.
    _write_metadata(variant, DEMO_NAME, {"type": "cpu"})
    return root


def build_example_kernel(example: str, root: Path, archs: list[str] | None) -> Path:
    """Build examples/<example> with build_local.py and lay it out as a CUDA Hub variant
    (build_local's --hub-layout: the variant links to the build, it is not a copy)."""
    _require("torch")
    project = SKILL / "examples" / example
    if not (project / "build.toml").is_file():
        raise ExampleError(f"no worked example '{example}' (expected {project}/build.toml)", 2)
    sys.path.insert(0, str(SKILL / "scripts"))
    try:
        from build_local import BuildError, build_project, write_hub_layout  # noqa: PLC0415
    except ImportError as exc:
        raise ExampleError(f"scripts/build_local.py is missing or broken: {exc}") from exc
    try:
        result = build_project(project, archs=archs)
        return write_hub_layout(result, project, root)
    except BuildError as exc:
        raise ExampleError(str(exc)) from exc


def tiny_qwen3(torch: Any, transformers: Any, real_size: bool, device: str, dtype: Any) -> Any:
    if real_size:
        config = transformers.Qwen3Config(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                                          num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                          vocab_size=151936, rms_norm_eps=1e-6, tie_word_embeddings=False)
    else:
        config = transformers.Qwen3Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                          vocab_size=128, rms_norm_eps=1e-6, tie_word_embeddings=False)
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.Qwen3ForCausalLM(config).to(dtype)
    return model.eval()


def check_api_signatures() -> list[str]:
    """Bind the kernels calls the skill documents against the installed package."""
    kernels = _require("kernels")
    calls: list[tuple[str, Any, tuple, dict]] = [
        ("get_kernel", kernels.get_kernel, ("org/name",), {"version": 1}),
        ("get_kernel", kernels.get_kernel, ("org/name",), {"revision": "main", "trust_remote_code": ["org/name"]}),
        ("get_local_kernel", kernels.get_local_kernel, (Path("build"),), {}),
        ("has_kernel", kernels.has_kernel, ("org/name",), {"version": 1}),
        ("get_locked_kernel", kernels.get_locked_kernel, ("org/name",), {"lockfile": Path("kernels.lock")}),
        ("load_kernel", kernels.load_kernel, ("org/name",), {"lockfile": Path("kernels.lock")}),
        ("LayerRepository", kernels.LayerRepository, ("org/name",), {"layer_name": "RMSNorm", "version": 1}),
        ("LocalLayerRepository", kernels.LocalLayerRepository, (), {"repo_path": Path("x"), "layer_name": "RMSNorm"}),
        ("LockedLayerRepository", kernels.LockedLayerRepository, ("org/name",),
         {"lockfile": Path("kernels.lock"), "layer_name": "RMSNorm"}),
        ("kernelize", kernels.kernelize, (object(),), {"mode": kernels.Mode.INFERENCE, "device": "cuda"}),
        ("use_kernel_mapping", kernels.use_kernel_mapping, ({},), {}),
        ("use_kernel_forward_from_hub", kernels.use_kernel_forward_from_hub, ("RMSNorm",), {}),
        ("replace_kernel_forward_from_hub", kernels.replace_kernel_forward_from_hub, (object, "RMSNorm"), {}),
    ]
    bound = []
    for name, fn, args, kwargs in calls:
        target = fn.__init__ if inspect.isclass(fn) else fn
        params = inspect.signature(target)
        try:
            params.bind(*((None,) if inspect.isclass(fn) else ()), *args, **kwargs)
        except TypeError as exc:
            raise ExampleError(f"kernels {kernels.__version__}: {name}{tuple(args)} {kwargs} does not bind: {exc}")
        bound.append(name)
    _ = kernels.Mode.INFERENCE | kernels.Mode.TORCH_COMPILE  # the mode the docs use with torch.compile
    return bound


def measuring() -> Any:
    """benchmark_example.py, imported from this script's folder: the one definition of the
    same-run copy bandwidth and the weight bytes of a forward that every model script reports."""
    if str(Path(__file__).resolve().parent) not in sys.path:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
    import benchmark_example  # noqa: PLC0415 - lazily: `--help` must work without torch

    return benchmark_example


def median_ms(torch: Any, fn: Callable[[], Any], device: str) -> float:
    """CUDA events on a GPU (median of 10 after 3 warm-ups), wall clock on CPU (median of 3)."""
    warmup, repeats = (3, 10) if device == "cuda" else (3, 3)
    return measuring().time_forward(torch, fn, device, warmup, repeats)["median_ms"]


def kernelize_and_compare(kernel_root: Path, layer: str, device: str, real_size: bool,
                          compile_peer: bool = True) -> dict[str, Any]:
    torch = _require("torch")
    transformers = _require("transformers")
    kernels = _require("kernels")
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm  # noqa: PLC0415

    # transformers' own kernels integration is on only for KERNELS_MIN_VERSION <= kernels <
    # KERNELS_MAX_VERSION (5.17.0: 0.16.0..0.17.0, 5.25.0: 0.19.1..0.20.0); outside it
    # @use_kernel_forward_from_hub is a no-op and kernelize finds no layer. Marking the class
    # with kernels' own API works with every version.
    if getattr(Qwen3RMSNorm, "kernel_layer_name", None) != "RMSNorm":
        kernels.replace_kernel_forward_from_hub(Qwen3RMSNorm, "RMSNorm", condition=lambda m: type(m) is Qwen3RMSNorm)
    module = kernels.get_local_kernel(kernel_root)
    if getattr(getattr(module, "layers", None), layer, None) is None:
        raise ExampleError(f"the kernel at {kernel_root} has no layers.{layer}")
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    model = tiny_qwen3(torch, transformers, real_size, device, dtype)
    tokens = torch.randint(0, model.config.vocab_size, (1, 512 if real_size else 16), device=device)
    layer_types = getattr(model.config, "layer_types", None) or []
    mask_kwargs = {"attention_mask": {"full_attention": None}} if set(layer_types) == {"full_attention"} else {}

    def forward(runner: Any = model) -> Any:
        with torch.inference_mode():
            return runner(tokens, **mask_kwargs).logits.float()

    bandwidth = measuring().copy_bandwidth_gbps(torch, device)
    weight_bytes = measuring().weight_bytes_per_forward(model, tokens.numel())
    reference = forward()
    baseline_ms = median_ms(torch, forward, device)
    variants: dict[str, dict[str, Any]] = {"eager": {"status": "ok", "median_ms": baseline_ms}}
    stock_err = None
    if dtype != torch.float32:
        # bf16 logits of a deep random model drift a few % from any change of rounding order, so a
        # fixed bound either fails correct kernels (36 layers) or passes wrong ones (2 layers).
        # Measure the stock model's own bf16 error against an fp32 run of the same weights
        # (bf16 -> fp32 -> bf16 is exact) and allow the kernel about as much.
        model.float()
        exact = forward()
        model.to(dtype)
        stock_err = ((reference - exact).norm() / exact.norm()).item()
    # The compile peer: the unpatched model, after the accuracy references and before
    # kernelize; the compiled handle is dropped and dynamo reset, so the graph never guards on
    # (or runs) the kernel's forward.
    if compile_peer:
        backend = "inductor" if device == "cuda" else "aot_eager"
        entry: dict[str, Any] = {"status": "ok", "backend": backend, "dynamic": False}
        try:
            torch._dynamo.reset()
            compiled = torch.compile(model, dynamic=False, backend=backend)
            t0 = time.perf_counter()
            compiled_logits = forward(compiled)  # the first call compiles the graph for this shape
            if device == "cuda":
                torch.cuda.synchronize()
            entry["first_call_s"] = round(time.perf_counter() - t0, 2)
            entry["median_ms"] = median_ms(torch, lambda: forward(compiled), device)
            entry["logits_rel_err_vs_unpatched"] = ((compiled_logits - reference).norm() / reference.norm()).item()
            del compiled, compiled_logits
        except Exception as exc:
            raise ExampleError(f"torch.compile of the unpatched model failed ({type(exc).__name__}: {exc}); "
                               "--no-compile skips the compile peer") from exc
        finally:
            torch._dynamo.reset()
        variants["compile"] = entry
    else:
        variants["compile"] = {"status": "skipped", "reason": "--no-compile"}
    originals = {id(m): m.forward for m in model.modules() if type(m) is Qwen3RMSNorm}
    mapping = {"RMSNorm": {device: kernels.LocalLayerRepository(repo_path=kernel_root, layer_name=layer)}}
    with kernels.use_kernel_mapping(mapping, inherit_mapping=False):
        # Inside that window transformers also marks Qwen3's MLP activation (`SiLU`) and
        # apply_rotary_pos_emb (`rotary_pos_emb`), and use_fallback=False raises "No layer
        # mapping for `rotary_pos_emb`" (kernels 0.19.1 + transformers 5.25.0). NO_LAYER keeps
        # the forward of exactly the layers this mapping does not name; an RMSNorm that cannot
        # be mapped or loaded still raises. The count below checks the swap happened.
        kernels.kernelize(model, mode=kernels.Mode.INFERENCE, device=device,
                          use_fallback=kernels.KernelizeFallback.NO_LAYER)
    kernel_layer = getattr(module.layers, layer)
    patched = [m for m in model.modules() if type(m) is Qwen3RMSNorm
               and getattr(m.forward, "__func__", None) is kernel_layer.forward]
    if len(patched) != len(originals):
        raise ExampleError(f"kernelize replaced {len(patched)} of {len(originals)} Qwen3RMSNorm forwards")
    calls_before = dict(getattr(module, "CALLS", {}))
    result = forward()
    calls_one_forward = dict(getattr(module, "CALLS", {}))  # before the timed forwards add theirs
    patched_ms = median_ms(torch, forward, device)
    variants["kernelized"] = {"status": "ok", "median_ms": patched_ms}
    rel_err = ((result - reference).norm() / reference.norm()).item()
    if stock_err is None:
        tolerance = 1e-5
    else:
        rel_err = ((result - exact).norm() / exact.norm()).item()
        tolerance = 1.25 * stock_err + 1e-3
    report = {
        "kernel": str(kernel_root), "variant": getattr(module, "__name__", ""), "layer": layer, "device": device,
        "dtype": str(dtype).replace("torch.", ""), "model": "qwen3-8b-shapes" if real_size else "qwen3-tiny",
        "rmsnorm_modules": len(originals), "patched": len(patched), "logits_rel_err": rel_err,
        "logits_rel_err_reference": "unpatched model, same dtype" if stock_err is None else "unpatched model in float32",
        "stock_rel_err_vs_float32": stock_err, "tolerance": tolerance, "forward_ms_unpatched": baseline_ms,
        "forward_ms_kernelized": patched_ms, "forward_ms_compile": variants["compile"].get("median_ms"),
    }
    mask_text = "attention_mask={'full_attention': None}" if mask_kwargs else "attention_mask=None"
    forward_text = f"model(input_ids, {mask_text}), prefill of {tokens.numel()} tokens, all logits"
    timer = ("CUDA events, median of 10 after 3 warm-ups" if device == "cuda"
             else "wall clock, median of 3 after 3 warm-ups (CPU: checks the path, not a benchmark)")
    report["performance"] = measuring().performance(variants, weight_bytes, bandwidth, "kernelized", timer, forward_text)
    if "CALLS" in dir(module):
        calls = calls_one_forward["rms_norm"] - calls_before.get("rms_norm", 0)
        report["kernel_calls_per_forward"] = calls
        if calls != len(originals):
            raise ExampleError(f"one forward made {calls} kernel calls, expected {len(originals)}")
    if not rel_err <= tolerance:
        raise ExampleError(f"kernelized logits differ: relative error {rel_err:.3g} > {tolerance}")
    return report


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Load a kernel through the Kernel Hub machinery (kernels.get_local_kernel / get_kernel) and "
        "kernelize a random-weight Qwen3 with its RMSNorm layer; compare logits (and time on CUDA).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent("""\
            examples:
              huggingface_kernels_example.py --check
              huggingface_kernels_example.py --example qwen3_8b --device cuda --real-size --out hub.json
              huggingface_kernels_example.py --local my-rmsnorm/build --device cuda
              huggingface_kernels_example.py --repo-id my-org/my-rmsnorm --version 1 --device cuda"""),
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--check", action="store_true", help="CPU self-check without network or compiler")
    source.add_argument("--example", choices=sorted(EXAMPLE_LAYER_NAMES), help="build this skill's worked example")
    source.add_argument("--local", metavar="PATH", help="a kernel-builder build/ folder (or the repo containing it)")
    source.add_argument("--repo-id", metavar="ORG/NAME", help="a Hub kernel repository (needs network)")
    parser.add_argument("--version", type=int, help="with --repo-id: major version (branch v<N>)")
    parser.add_argument("--revision", help="with --repo-id: branch, tag or commit instead of --version")
    parser.add_argument("--trust-remote-code", action="store_true", help="with --repo-id: allow untrusted publishers")
    parser.add_argument("--layer", default="RMSNorm", help="layer class in the kernel's layers.py (default: RMSNorm)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the model runs (default: cpu)")
    parser.add_argument("--arch", action="append", help="with --example: CUDA arch(s) to build, e.g. 9.0")
    parser.add_argument("--real-size", action="store_true", help="Qwen3-8B shapes instead of a tiny config (GPU)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile peer of the unpatched model")
    parser.add_argument("--out", metavar="FILE", help="write the report as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.repo_id and (args.version is None) == (args.revision is None):
            raise ExampleError("--repo-id needs exactly one of --version N or --revision REF", 2)
        if args.device == "cuda":
            torch = _require("torch")
            if not torch.cuda.is_available():
                raise ExampleError("--device cuda but torch sees no CUDA device; use --check on CPU")
        report: dict[str, Any] = {}
        with tempfile.TemporaryDirectory(prefix="ks-hub-") as tmp:
            root = Path(tmp)
            if args.check:
                report["api_calls_bound"] = check_api_signatures()
                report.update(kernelize_and_compare(write_demo_kernel(root), "RMSNorm", "cpu", False,
                                                    not args.no_compile))
            elif args.example:
                build_example_kernel(args.example, root, args.arch)
                report.update(kernelize_and_compare(root, args.layer, args.device, args.real_size,
                                                    not args.no_compile))
            elif args.local:
                report.update(kernelize_and_compare(Path(args.local).resolve(), args.layer, args.device,
                                                    args.real_size, not args.no_compile))
            else:
                kernels = _require("kernels")
                trust: bool | list[str] = True if args.trust_remote_code else False
                module = kernels.get_kernel(args.repo_id, version=args.version, revision=args.revision,
                                            trust_remote_code=trust)
                variant_dir = Path(module.__file__).resolve().parent
                root_dir = variant_dir if (variant_dir / "metadata.json").exists() else variant_dir.parent
                report.update(kernelize_and_compare(root_dir, args.layer, args.device, args.real_size,
                                                    not args.no_compile))
    except ExampleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    for key, value in report.items():
        if key != "performance":
            print(f"{key}: {value}")
    perf = report["performance"]
    measuring().print_performance(perf, "kernelized", f"timing: {perf['timer']}; {perf['forward']}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
