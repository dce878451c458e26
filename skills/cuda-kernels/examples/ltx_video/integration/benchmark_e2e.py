#!/usr/bin/env python3
"""End-to-end: one LTX-Video denoising step (one transformer forward), unpatched vs patched.

Times the random-weight diffusers LTXVideoTransformer3DModel on the real inputs of a
49-frame 512x768 generation (2688 latent tokens, 128 prompt tokens) at batch 1 and batch 2
(batch 2 = classifier-free guidance), in four configurations measured in one run:

  eager            diffusers as shipped
  patched          patch_ltx_transformer(transformer, ltx_video_kernels)
  compile          torch.compile of the unpatched transformer
  patched+compile  torch.compile of the patched transformer (the kernels are custom ops with
                   fake registrations, so they stay in the graph)

then the same four with the whole step captured once in a torch.cuda.CUDAGraph and
replayed (eager+cudagraph, ...; compiled ones are compiled, warmed up, then captured). A step
launches ~1,000 kernels, so at batch 1 the plain configurations time the host's pace as much
as the GPU's; a replay costs one launch and times GPU work alone. Opt-in comparison points
(--configs selects them):

  patched+epilogue[+compile]  patched, but the feed-forward's bias + tanh-GELU computed in
                   the projection GEMM's cuBLASLt epilogue instead of the gelu_tanh kernel
  patched+compile[+cudagraph]+nopdl  patched+compile[+cudagraph] with the kernels' programmatic
                   dependent launch switched off (set_pdl(False)): what PDL is worth in the model
  patched+compile[+cudagraph]+hints  the same with the default ops' cache-hint rule switched on
                   (set_cache_hints(True)): what the evict-first hints are worth in the model

Every configuration uses the same weights and inputs and is compared with eager's output
(relative L2 error). Times are CUDA-event medians after warm-up; the first call (compilation)
is reported apart. torch.compile is reset between configurations (dynamic=False,
fullgraph=True: a graph break or recompile fails loudly).

    python benchmark_e2e.py --device cuda --out RESULTS.json --markdown RESULTS.md
    python benchmark_e2e.py --device cpu            # tiny config, seconds: CI smoke test
    python benchmark_e2e.py --configs compile+cudagraph patched+compile+cudagraph --batch-sizes 1

--compile-mode regional (default) compiles the 28 identical blocks once
(diffusers' compile_repeated_blocks); full compiles the whole transformer (slower to compile).
The kernels package is built with the skill's scripts/build_local.py unless --package-path
points at a built one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
import traceback
from pathlib import Path
from collections.abc import Callable
from typing import Any

HERE = Path(__file__).resolve().parent
CONFIGS = ("eager", "patched", "compile", "patched+compile")
# the same four, the whole step captured in one CUDA graph and replayed (GPU time, not host pace)
CUDAGRAPH_CONFIGS = tuple(f"{name}+cudagraph" for name in CONFIGS)
# opt-in comparison: the feed-forward's GELU in the cuBLASLt GEMM epilogue instead of the kernel
# and the patched+compile pair with programmatic dependent launch off or the cache-hint rule on
# (the kernels' A/Bs)
EXTRA_CONFIGS = ("patched+epilogue", "patched+epilogue+compile", "patched+compile+nopdl",
                 "patched+compile+cudagraph+nopdl", "patched+compile+hints", "patched+compile+cudagraph+hints")
# config modifier -> (the kernels package's switch, the value the configuration runs with)
SWITCHES = {"nopdl": ("set_pdl", False), "hints": ("set_cache_hints", True)}
ALL_CONFIGS = CONFIGS + CUDAGRAPH_CONFIGS + EXTRA_CONFIGS


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cuda: default config (1.92 B params), bf16; cpu: tiny config, fp32 (CI)")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=None, metavar="B",
                   help="default: 1 2 (cuda), 1 (cpu)")
    p.add_argument("--configs", nargs="+", choices=ALL_CONFIGS, default=None, metavar="CONFIG",
                   help="any of: " + ", ".join(ALL_CONFIGS) + ". Default: the first eight on cuda "
                        "(plain and +cudagraph); the first four on cpu (no CUDA graphs, no cuBLASLt)")
    p.add_argument("--compile-mode", choices=["regional", "full"], default="regional",
                   help="regional: compile the repeated blocks once (default); full: the whole transformer")
    p.add_argument("--compile-backend", default=None,
                   help="torch.compile backend (default inductor on cuda; aot_eager on cpu, which "
                        "traces the same graph without minutes of C++ compilation)")
    p.add_argument("--frames", type=int, default=None, help="video frames, 8k+1 (default 49; cpu: tiny)")
    p.add_argument("--height", type=int, default=None, help="pixels, multiple of 32 (default 512)")
    p.add_argument("--width", type=int, default=None, help="pixels, multiple of 32 (default 768)")
    p.add_argument("--text-len", type=int, default=None, help="prompt tokens (default 128)")
    p.add_argument("--warmup", type=int, default=None, help="untimed calls before timing (default 5; cpu 1)")
    p.add_argument("--iters", type=int, default=None, help="timed calls (default 30; cpu 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--package-path", default=None,
                   help="directory containing a built ltx_video_kernels (skip building)")
    p.add_argument("--arch", action="append", default=None, metavar="X.Y",
                   help="CUDA capability to build for (repeatable; default: build_local's choice)")
    p.add_argument("--build-dir", default=None, help="build_local.py build directory")
    p.add_argument("--out", type=Path, default=None, help="write the results JSON here")
    p.add_argument("--markdown", type=Path, default=None,
                   help="also write a Markdown report generated from the JSON (render)")
    args = p.parse_args(argv)
    for name in ("warmup", "iters"):
        if getattr(args, name) is not None and getattr(args, name) < (0 if name == "warmup" else 1):
            p.error(f"--{name} is too small")
    if args.batch_sizes is not None and min(args.batch_sizes) < 1:
        p.error("--batch-sizes must be >= 1")
    if args.device == "cpu" and args.configs:
        cuda_only = [c for c in args.configs if c not in CONFIGS]
        if cuda_only:
            p.error(f"--device cpu cannot run {', '.join(cuda_only)} (CUDA graphs, cuBLASLt, the kernels' launch switches): "
                    f"choose from {', '.join(CONFIGS)}")
    return args


def _reset_compile(torch: Any, model: Any) -> None:
    import torch._dynamo

    for module in model.modules():
        if getattr(module, "_compiled_call_impl", None) is not None:
            module._compiled_call_impl = None
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()


GOAL_KEY = "goal_patched_compile_faster_than_compile"
GOAL_CUDAGRAPH_KEY = "goal_patched_compile_faster_than_compile_cudagraph"
# (configuration, baseline) pairs reported as "<config>_vs_<baseline>" speedups
_BASELINES = (
    *((name, "eager") for name in ("patched", "compile", "patched+compile", *EXTRA_CONFIGS)),
    ("patched+compile", "compile"),
    ("patched+epilogue+compile", "compile"),
    ("patched+compile+nopdl", "compile"),
    ("patched+compile+cudagraph+nopdl", "compile+cudagraph"),
    ("patched+compile+hints", "compile"),
    ("patched+compile+cudagraph+hints", "compile+cudagraph"),
    *((name, "eager") for name in CUDAGRAPH_CONFIGS),
    ("patched+cudagraph", "eager+cudagraph"),
    ("compile+cudagraph", "eager+cudagraph"),
    ("patched+compile+cudagraph", "eager+cudagraph"),
    ("patched+compile+cudagraph", "compile+cudagraph"),
)


def _speedups(results: list[dict[str, Any]], batches: list[int]) -> tuple[dict, dict, dict]:
    """Per batch: baseline / config time ratios, and the issue's goal without and with CUDA graphs."""
    speedups: dict[str, dict[str, float]] = {}
    goal: dict[str, bool] = {}
    goal_graphed: dict[str, bool] = {}
    for batch in batches:
        ms = {r["config"]: r["median_ms"] for r in results if r["batch"] == batch}
        speedups[str(batch)] = {
            f"{name}_vs_{base}": round(ms[base] / ms[name], 3)
            for name, base in _BASELINES
            if name in ms and base in ms
        }
        if "patched+compile" in ms and "compile" in ms:
            goal[str(batch)] = ms["patched+compile"] < ms["compile"]
        if "patched+compile+cudagraph" in ms and "compile+cudagraph" in ms:
            goal_graphed[str(batch)] = ms["patched+compile+cudagraph"] < ms["compile+cudagraph"]
    return speedups, goal, goal_graphed


def _capture_step(torch: Any, step: Callable[[], Any], warmup: int) -> tuple[Any, Any]:
    """Capture one `step()` in a CUDA graph; returns (graph, its static output tensor).

    The warm-up calls run on a side stream first, as torch.cuda.graph asks: lazy
    initialisation (cuBLAS handles and workspaces, attention backend choice, allocator
    growth) must not happen inside the capture. The graph reads the input tensors it was
    captured with; a pipeline would copy each step's latents and timestep into them.
    """
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(2, warmup)):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    return graph, out


def run(args: argparse.Namespace, save: Callable[[dict[str, Any]], None] = lambda data: None) -> dict[str, Any]:
    """Measure every configuration; `save(data)` is called after each one (partial results survive)."""
    import torch

    sys.path.insert(0, str(HERE))
    import ltx_setup as S
    from patch_ltx import patch_ltx_transformer

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda but torch.cuda.is_available() is False (use --device cpu)")
    device = torch.device("cuda" if cuda else "cpu")
    dtype = torch.bfloat16 if cuda else torch.float32
    base = S.FULL_SHAPE if cuda else S.TINY_SHAPE
    shape = S.VideoShape(
        frames=args.frames or base.frames,
        height=args.height or base.height,
        width=args.width or base.width,
        text_len=args.text_len or base.text_len,
    )
    try:
        shape.latent()
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    batches = args.batch_sizes or ([1, 2] if cuda else [1])
    warmup = args.warmup if args.warmup is not None else (5 if cuda else 1)
    iters = args.iters if args.iters is not None else (30 if cuda else 3)
    backend = args.compile_backend or ("inductor" if cuda else "aot_eager")

    kernels = S.load_kernels(args.package_path, archs=args.arch, build_dir=args.build_dir)
    config = S.DEFAULT_CONFIG if cuda else S.TINY_CONFIG
    model = S.build_transformer(config, device=device, dtype=dtype, seed=args.seed)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"transformer: {n_params / 1e9:.3f} B params, {dtype}, {shape.tokens()} tokens "
          f"(latent {shape.latent()}), device {device}", flush=True)

    results: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    data: dict[str, Any] = {
        "benchmark": "ltx_video end-to-end: one denoising step (transformer forward)",
        "script": "skills/cuda-kernels/examples/ltx_video/integration/benchmark_e2e.py",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "complete": False,
        "environment": S.environment(device),
        "model": {
            "class": "diffusers LTXVideoTransformer3DModel",
            "config": "default (LTX-Video 0.9.x)" if cuda else "tiny (CI)",
            "params": n_params,
            "dtype": str(dtype).removeprefix("torch."),
            "weights": f"random (seed {args.seed})",
        },
        "inputs": {
            "frames": shape.frames, "height": shape.height, "width": shape.width,
            "latent_fhw": list(shape.latent()), "tokens": shape.tokens(), "text_len": shape.text_len,
        },
        "settings": {"warmup": warmup, "iters": iters, "compile_mode": args.compile_mode,
                     "compile_backend": backend,
                     "timing": "CUDA events per call, median" if cuda else "perf_counter per call, median",
                     "cudagraph": "+cudagraph: the whole step captured once with torch.cuda.graph after "
                                  f"{max(2, warmup)} warm-up calls on a side stream, static inputs; "
                                  "the timed call is one graph replay"},
        "patch": None,
        "results": results,
        "speedups": {},
        GOAL_KEY: {},
        GOAL_CUDAGRAPH_KEY: {},
        "errors": errors,
    }

    configs = args.configs or (list(CONFIGS + CUDAGRAPH_CONFIGS) if cuda else list(CONFIGS))
    # The main comparison for every batch size first, then its CUDA-graph form, the opt-in
    # comparison points last: an interrupted run loses the least important numbers.
    jobs = [(b, c) for group in (CONFIGS, CUDAGRAPH_CONFIGS, EXTRA_CONFIGS)
            for b in batches for c in configs if c in group]
    inputs_for = {b: S.make_inputs(model, b, shape, seed=args.seed) for b in batches}
    references: dict[int, Any] = {}
    started = time.perf_counter()

    for index, (batch, name) in enumerate(jobs, 1):
        inputs = inputs_for[batch]
        print(f"[{time.perf_counter() - started:6.1f} s] {index}/{len(jobs)} batch {batch} {name} ...", flush=True)
        parts = name.split("+")
        patched = parts[0] == "patched"
        compiled = "compile" in parts
        graphed = "cudagraph" in parts
        epilogue = "epilogue" in parts
        switched: list[tuple[Callable[[bool], bool], bool]] = []  # (switch, value to restore)
        report = None
        graph = None
        entry: dict[str, Any] = {"batch": batch, "config": name}
        try:
            _reset_compile(torch, model)
            for part in parts:
                if part in SWITCHES:
                    switch_name, value = SWITCHES[part]
                    if not hasattr(kernels, switch_name):
                        raise RuntimeError(f"this ltx_video_kernels build has no {switch_name}: rebuild it")
                    switch = getattr(kernels, switch_name)
                    switched.append((switch, switch(value)))
            if patched:
                report = patch_ltx_transformer(model, kernels, gelu_epilogue=epilogue)
                if not epilogue:
                    data["patch"] = report.as_dict()
            runner = model
            if compiled:
                options = {"fullgraph": True, "dynamic": False, "backend": backend}
                if args.compile_mode == "regional":
                    model.compile_repeated_blocks(**options)
                else:
                    runner = torch.compile(model, **options)

            with torch.inference_mode():
                def call() -> Any:
                    return runner(**inputs)[0]

                if cuda:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = call()
                if graphed:  # first call = (compile +) warm-up + capture
                    graph, out = _capture_step(torch, call, warmup)
                    static_out = out

                    def step() -> Any:
                        graph.replay()
                        return static_out
                else:
                    step = call
                if cuda:
                    torch.cuda.synchronize()
                entry["first_call_s"] = round(time.perf_counter() - t0, 3)
                times = S.time_call(step, device=device, warmup=warmup, iters=iters)
                out = step()
            entry.update(
                median_ms=round(S.median(times), 4),
                min_ms=round(min(times), 4),
                max_ms=round(max(times), 4),
                times_ms=[round(t, 4) for t in times],
            )
            if compiled:
                entry["graphs"] = int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
            if name == "eager":
                references[batch] = out.float().clone()
            if batch in references:
                entry["rel_err_vs_eager"] = S.relative_error(out, references[batch])
            if not bool(torch.isfinite(out).all()):
                entry["nonfinite_output"] = True
            print(f"batch {batch} {name:<26} {entry['median_ms']:9.3f} ms"
                  f"  (first call {entry['first_call_s']:.1f} s"
                  + (f", rel err vs eager {entry['rel_err_vs_eager']:.2e}" if "rel_err_vs_eager" in entry else "")
                  + ")", flush=True)
            results.append(entry)
        except Exception as exc:  # noqa: BLE001 - one failed configuration must not stop the rest
            errors.append({"batch": str(batch), "config": name, "error": f"{type(exc).__name__}: {exc}",
                           "traceback": traceback.format_exc(limit=8)})
            print(f"batch {batch} {name:<26} FAILED: {type(exc).__name__}: {exc}", flush=True)
        finally:
            # the graph holds its private memory pool until it is freed
            graph = step = out = static_out = None  # noqa: F841
            if report is not None:
                report.restore()
            for switch, was in reversed(switched):
                switch(was)
            _reset_compile(torch, model)
            if cuda:
                torch.cuda.empty_cache()
        data["speedups"], data[GOAL_KEY], data[GOAL_CUDAGRAPH_KEY] = _speedups(results, batches)
        save(data)

    data["complete"] = True
    save(data)
    return data


# ----------------------------------------------------------------------- reports
# The JSON is the record; the Markdown is rendered from it, never typed.

ORDER = ("eager", "patched", "compile", "patched+compile", "patched+compile+nopdl", "patched+compile+hints",
         "patched+epilogue", "patched+epilogue+compile")
CUDAGRAPH_ORDER = ("eager+cudagraph", "patched+cudagraph", "compile+cudagraph", "patched+compile+cudagraph",
                   "patched+compile+cudagraph+nopdl", "patched+compile+cudagraph+hints")
LEGEND = {
    "eager": "diffusers as shipped",
    "patched": "patch_ltx_transformer(transformer, ltx_video_kernels)",
    "compile": "torch.compile of diffusers' transformer",
    "patched+compile": "torch.compile of the patched transformer (kernels are custom ops in the graph)",
    "patched+epilogue": "patched, but the feed-forward's bias + tanh-GELU in the cuBLASLt GEMM epilogue "
    "(torch._addmm_activation) instead of the gelu_tanh kernel: a comparison point",
    "patched+epilogue+compile": "the same, compiled",
    "patched+compile+nopdl": "patched+compile with the kernels' programmatic dependent launch switched off "
    "(set_pdl(False)): the A/B for PDL",
    "patched+compile+cudagraph+nopdl": "patched+compile+cudagraph with programmatic dependent launch off",
    "patched+compile+hints": "patched+compile with the kernels' cache-hint rule switched on "
    "(set_cache_hints(True)): the A/B for the evict-first hints",
    "patched+compile+cudagraph+hints": "patched+compile+cudagraph with the cache-hint rule on",
    "eager+cudagraph": "diffusers as shipped, the whole step captured in one CUDA graph and replayed",
    "patched+cudagraph": "the patched transformer, captured the same way",
    "compile+cudagraph": "torch.compile of diffusers' transformer, compiled and warmed up, then captured",
    "patched+compile+cudagraph": "torch.compile of the patched transformer, then captured",
}


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _fmt_params(n: int) -> str:
    return f"{n / 1e9:.2f} B" if n >= 10**8 else f"{n:,}"


def _fmt_x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def render(data: dict[str, Any], source: str | None = None) -> str:
    env = data["environment"]
    model = data["model"]
    inp = data["inputs"]
    settings = data["settings"]
    lines: list[str] = [
        "# LTX-Video end to end: one denoising step",
        "",
        "<!-- generated by integration/benchmark_e2e.py"
        + (f" from {source}" if source else "")
        + "; do not edit by hand -->",
        "",
        f"{model['class']}, {model['config']} config, {_fmt_params(model['params'])} parameters "
        f"({model['weights']}), {model['dtype']}. Input: {inp['frames']} frames at "
        f"{inp['height']}x{inp['width']} -> latent {'x'.join(map(str, inp['latent_fhw']))} = "
        f"{inp['tokens']} tokens, {inp['text_len']} prompt tokens. Batch 2 = classifier-free guidance.",
        "",
        f"Device: {env.get('gpu', env.get('cpu', env['device']))}"
        + (f" (sm_{env['sm'].replace('.', '')}, driver {env['driver']})" if "sm" in env and "driver" in env else "")
        + f"; torch {env['torch']}, CUDA {env.get('cuda')}, diffusers {env['diffusers']}"
        + (f", triton {env['triton']}" if "triton" in env else "")
        + f"; measured {data['date']}.",
        "",
        f"Timing: {settings['timing']} of {settings['iters']} calls after {settings['warmup']} warm-up calls; "
        f"torch.compile: `{settings['compile_mode']}` mode, backend `{settings.get('compile_backend', 'inductor')}`, "
        "fullgraph, static shapes, reset between configurations.",
        "",
        "| batch | configuration | median ms | min - max ms | vs eager | vs compile | rel. error vs eager | first call s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    by_key = {(r["batch"], r["config"]): r for r in data["results"]}
    batches = sorted({r["batch"] for r in data["results"]})
    for batch in batches:
        eager = by_key.get((batch, "eager"), {}).get("median_ms")
        compiled = by_key.get((batch, "compile"), {}).get("median_ms")
        for name in ORDER:
            r = by_key.get((batch, name))
            if r is None:
                continue
            ms = r["median_ms"]
            vs_eager = eager / ms if eager else None
            vs_compile = compiled / ms if compiled and "compile" in name.split("+") else None
            err = r.get("rel_err_vs_eager")
            spread = f"{_fmt_ms(r.get('min_ms'))} - {_fmt_ms(r.get('max_ms'))}" if "min_ms" in r else "-"
            lines.append(
                f"| {batch} | {name} | {_fmt_ms(ms)} | {spread} | {_fmt_x(vs_eager)} | {_fmt_x(vs_compile)} | "
                f"{'-' if err is None else f'{err:.1e}'} | {r.get('first_call_s', '-')} |"
            )
    lines.append("")

    present = [name for name in ORDER if any(r["config"] == name for r in data["results"])]
    lines += [f"- `{name}`: {LEGEND[name]}" for name in present]
    lines.append("")

    goal = data.get("goal_patched_compile_faster_than_compile", {})
    if goal:
        lines += [f"Goal - patched + compile faster than compile alone: {_verdicts(goal)}.", ""]

    lines += _cudagraph_section(data, by_key, batches)

    patch = data.get("patch")
    if patch:
        lines += [
            f"Patched sites ({patch['total']}, q/k norm + RoPE fused: {'yes' if patch['fused_norm_rope'] else 'no'}):",
            "",
            "| site | count |",
            "|---|---|",
        ]
        lines += [f"| {kind} | {n} |" for kind, n in patch["counts"].items()]
        if patch["skipped"]:
            lines += ["", f"Skipped: {len(patch['skipped'])} (see the JSON for the reasons)."]
        lines.append("")

    if not data.get("complete", True):
        lines += ["**Incomplete run**: the benchmark stopped before measuring every configuration.", ""]

    if data.get("errors"):
        lines += ["Failed configurations:", ""]
        lines += [f"- batch {e['batch']} {e['config']}: {e['error']}" for e in data["errors"]]
        lines.append("")
    return "\n".join(lines)


def _verdicts(goal: dict[str, bool]) -> str:
    return ", ".join(
        f"batch {b}: {'yes' if ok else 'no'}" for b, ok in sorted(goal.items(), key=lambda kv: int(kv[0]))
    )


def _cudagraph_section(data: dict[str, Any], by_key: dict, batches: list[int]) -> list[str]:
    """The +cudagraph configurations: GPU time per step without the host's launch pace."""
    if not any((batch, name) in by_key for batch in batches for name in CUDAGRAPH_ORDER):
        return []
    lines = [
        "## With CUDA graphs",
        "",
        "The whole step captured once in a `torch.cuda.CUDAGraph` (static inputs) and replayed: one "
        "launch per step instead of ~1,000, so these rows time the GPU's work, not how fast Python "
        "issues kernels. " + data["settings"].get("cudagraph", ""),
        "",
        "| batch | configuration | median ms | min - max ms | vs eager | vs eager+cudagraph "
        "| vs compile+cudagraph | rel. error vs eager | first call s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for batch in batches:
        base = {name: by_key.get((batch, name), {}).get("median_ms")
                for name in ("eager", "eager+cudagraph", "compile+cudagraph")}
        for name in CUDAGRAPH_ORDER:
            r = by_key.get((batch, name))
            if r is None:
                continue
            ms = r["median_ms"]
            ratios = [
                base["eager"] / ms if base["eager"] else None,
                base["eager+cudagraph"] / ms if base["eager+cudagraph"] else None,
                base["compile+cudagraph"] / ms if base["compile+cudagraph"] and "compile" in name.split("+") else None,
            ]
            err = r.get("rel_err_vs_eager")
            spread = f"{_fmt_ms(r.get('min_ms'))} - {_fmt_ms(r.get('max_ms'))}" if "min_ms" in r else "-"
            lines.append(
                f"| {batch} | {name} | {_fmt_ms(ms)} | {spread} | "
                + " | ".join(_fmt_x(x) for x in ratios)
                + f" | {'-' if err is None else f'{err:.1e}'} | {r.get('first_call_s', '-')} |"
            )
    lines.append("")
    present = [name for name in CUDAGRAPH_ORDER if any(r["config"] == name for r in data["results"])]
    lines += [f"- `{name}`: {LEGEND[name]}" for name in present]
    lines.append("")
    goal = data.get("goal_patched_compile_faster_than_compile_cudagraph", {})
    if goal:
        lines += [
            f"Goal with CUDA graphs - patched + compile faster than compile alone: {_verdicts(goal)}.", ""
        ]
    return lines


def dumps_records(data: dict[str, Any]) -> str:
    """JSON with one top-level key per line and one record per line: small and diffable."""
    def compact(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    lines = []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{compact(key)}:[\n" + ",\n".join(compact(v) for v in value) + "]")
        else:
            lines.append(f"{compact(key)}:{compact(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def save(data: dict[str, Any]) -> None:
        # rewritten after every configuration so an interrupted run still leaves its results
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            tmp = args.out.with_name(args.out.name + ".tmp")
            tmp.write_text(dumps_records(data))
            tmp.replace(args.out)
        if args.markdown:
            args.markdown.parent.mkdir(parents=True, exist_ok=True)
            args.markdown.write_text(render(data, source=args.out.name if args.out else None))

    data = run(args, save)
    for path in (args.out, args.markdown):
        if path:
            print(f"wrote {path}")
    for batch, s in data["speedups"].items():
        print(f"batch {batch}: " + ", ".join(f"{k} {v:.2f}x" for k, v in s.items()))
    return 1 if data["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
