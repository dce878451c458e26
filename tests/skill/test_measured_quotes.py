"""Every measured number the skill's prose quotes is the number in the committed JSON it cites.

The hardware tables are generated from assets/gpu_specs.json (test_gpu_specs.py checks
them); the prose of the guides also quotes results of the worked examples' H200 runs. Each
quote below names the document, the JSON file (relative to the skill folder), how to read
the value, and the text the document must contain once the value is formatted in. When a
benchmark is rerun and its JSON changes, this test fails until the prose is updated.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import skilldocs

EVIDENCE = ("evidence/", "benchmarks/")  # repository files (run logs, sweeps): tests read them, the skill does not ship them
QWEN3_KERNELS_PUB = "examples/qwen3_8b/benchmarks/results.json"  # the published run (16)
QWEN3_KERNELS_RUN5 = "evidence/qwen3_8b/benchmarks/h200_run5/results.json"  # run-3 kernels, fresh outputs
QWEN3_KERNELS_RUN3 = "evidence/qwen3_8b/benchmarks/h200_run3/results.json"  # one-buffer timer, 50-register VPT 2
QWEN3_KERNELS_RUN7 = "evidence/qwen3_8b/benchmarks/h200_run7/results.json"  # 32-register VPT 2, generic row kernel
QWEN3_SWIGLU_RUN15 = "evidence/qwen3_8b/benchmarks/h200_run15/swiglu_tune.json"  # the flat SwiGLU kernel's sweep
GRID_STRIDE_128 = {"threads": 128, "vpt": 1, "exact": 0, "width": 0, "flat": 0}  # the SwiGLU default before run 16
QWEN3_E2E = "examples/qwen3_8b/integration/results/e2e_h200.json"
QWEN3_PROFILE = "examples/qwen3_8b/integration/results/profile_h200.json"  # benchmarks/qwen3_8b/profile_e2e.py, kernel ms by category
LTX_KERNELS = "examples/ltx_video/benchmarks/bench.json"
# Run 2 of the ltx_video kernels (earlier kernel, format-1 JSON): the last run that timed a
# graph-captured copy_, and the "before" of the weighted RMSNorm.
LTX_KERNELS_RUN2 = "evidence/ltx_video/benchmarks/h200_run2/bench.json"
LTX_E2E = "examples/ltx_video/integration/results/e2e_h200.json"
# Run 35: the hinted default ops against their unhinted lean kernels, one output buffer vs a
# fresh one per call (benchmarks/ltx_video/hint_check.py).
LTX_HINTS = "evidence/ltx_video/benchmarks/h200_run35/hint_check.json"
# Run 38: the GELU launch-configuration sweep (bench_ops.py --sweep-gelu, fresh output per call).
LTX_GELU_SWEEP = "evidence/ltx_video/benchmarks/h200_run38/sweeps.json"
# The model scripts' own CUDA runs (scripts/transformers_injection_example.py and
# scripts/huggingface_kernels_example.py --example qwen3_8b --real-size), kept beside their logs.
QWEN3_INJECTION = "examples/qwen3_8b/integration/results/transformers_injection_example_h200.json"
QWEN3_HUB = "examples/qwen3_8b/integration/results/huggingface_kernels_example_h200.json"
QWEN3_README = "examples/qwen3_8b/README.md"
QWEN3_INTEGRATION = "examples/qwen3_8b/integration/README.md"
LTX_README = "examples/ltx_video/README.md"
H200 = "references/h200-optimization-guide.md"
TRANSFORMERS = "references/transformers-integration.md"
HUB = "references/huggingface-kernels-integration.md"
TROUBLE = "references/troubleshooting.md"
LESSONS = "references/lessons.md"
QWEN3_BOUNDARY_H100 = "evidence/qwen3_8b/benchmarks/h100_run1/boundary_probe.json"
QWEN3_SPLIT_H100 = "evidence/qwen3_8b/benchmarks/h100_run5/call2_variants/w_v{}.json"  # split kernel: v0 weight in flight, v1 late  # boundary_probe.py on an H100
TEMPLATE_GLU = "benchmarks/results/template_glu_h200.json"  # the --op glu scaffold's own benchmark


def _result(op: str, shape: str, provider: str, field: str = "pct_copy") -> Callable[[Any], float]:
    def read(data: Any) -> float:
        (row,) = [r for r in data["results"] if r["op"] == op and r["shape"] == shape]
        return row["providers"][provider][field]
    return read


def _tuning(op: str, shape: str, field: str, **config: int) -> Callable[[Any], float]:
    def read(data: Any) -> float:
        rows = [r for r in data["tuning"] if r["op"] == op and r["shape"] == shape and r["config"]
                and all(r["config"].get(k) == v for k, v in config.items())]
        assert len(rows) == 1, f"{op} {shape} {config}: {len(rows)} sweep entries"
        return rows[0][field]
    return read


def _tuning_default(op: str, shape: str, field: str) -> Callable[[Any], float]:
    def read(data: Any) -> float:
        (row,) = [r for r in data["tuning"] if r["op"] == op and r["shape"] == shape and r.get("default")]
        return row[field]
    return read


def _path(file: str) -> Path:
    """A shipped file is named relative to the skill; evidence (never shipped) relative to the repository."""
    return skilldocs.REPO / file if file.startswith(EVIDENCE) else skilldocs.SKILL / file


def _load(file: str) -> Any:
    return json.loads(_path(file).read_text(encoding="utf-8"))


def _prefill(variant: str, tokens: int) -> Callable[[Any], float]:
    return lambda data: data["variants"][variant]["prefill"][str(tokens)]["median_ms"]


def _decode(variant: str) -> Callable[[Any], float]:
    return lambda data: data["variants"][variant]["decode"]["tokens_per_s"]


def _profile(variant: str, category: str | None = None) -> Callable[[Any], float]:
    """ms of GPU kernel time per forward in one category, or the median SM clock (category None)."""
    def read(data: Any) -> float:
        entry = data["variants"][variant]
        return entry["gpu"]["sm_mhz"] if category is None else entry["categories"][category]["ms"]
    return read


def _elementwise(variant: str) -> Callable[[Any], float]:
    """Everything that is neither matmul nor attention: our kernels and PyTorch's."""
    def read(data: Any) -> float:
        cats = data["variants"][variant]["categories"]
        return sum(c["ms"] for name, c in cats.items() if name not in ("matmul", "attention"))
    return read


def _ltx_result(op: str, variant: str, shape: list[int], provider: str,
                field: str = "pct_copy") -> Callable[[Any], float]:
    """`field`: "pct_copy" (do_bench) or "graph_pct_copy" (graph replay, the verdict timer)."""
    def read(data: Any) -> float:
        (row,) = [r for r in data["results"] if r["op"] == op and r["variant"] == variant and r["shape"] == shape]
        return row["impls"][provider][field]
    return read


def _ltx_hint(op: str, shape: list[int], impl: str, mode: str) -> Callable[[Any], float]:
    def read(data: Any) -> float:
        (row,) = [r for r in data["results"] if r["op"] == op and r["shape"] == shape]
        return row["impls"][impl][mode]["graph_us"]
    return read


def _ltx_gelu_sweep(shape: list[int], config: str | None) -> Callable[[Any], float]:
    """graph µs of one GELU sweep point (threads x unroll), or of the default op with None."""
    def read(data: Any) -> float:
        (row,) = [r for r in data["gelu_sweep"] if r["shape"] == shape]
        return (row["default"] if config is None else row["configs"][config])["graph_us"]
    return read


def _ltx_step(batch: int, config: str) -> Callable[[Any], float]:
    def read(data: Any) -> float:
        (row,) = [r for r in data["results"] if r["batch"] == batch and r["config"] == config]
        return row["median_ms"]
    return read


@dataclass(frozen=True)
class Quote:
    doc: str
    file: str
    read: Callable[[Any], float]
    text: str  # the document's wording, `{}` where the formatted value stands
    fmt: str = "{:.1f}"

    @property
    def id(self) -> str:
        return f"{self.doc.removeprefix('references/')}: {self.text}"


RMS_BIG, RMS_SMALL = "16x8192x4096", "1x1024x4096"
QK_BIG = "16384x32x128 (524288 rows)"

QUOTES = [
    # The copy bandwidth the H200 guide and the troubleshooting guide quote.
    Quote(H200, QWEN3_KERNELS_PUB, lambda d: d["meta"]["copy_bandwidth_GBps"], "streaming rate: {} GB/s", "{:.0f}"),
    Quote(TROUBLE, QWEN3_KERNELS_PUB, lambda d: d["meta"]["copy_bandwidth_GBps"], "H200 (driver 580.159.04): {} GB/s", "{:.0f}"),
    # Launch-bound prefill and decode (end to end, unpatched model).
    Quote(H200, QWEN3_E2E, _prefill("eager", 512), "{} ms per 512-token prefill eager", "{:.2f}"),
    Quote(H200, QWEN3_E2E, _prefill("eager_cudagraph", 512), "eager and {} ms replayed from a CUDA graph", "{:.2f}"),
    Quote(H200, QWEN3_E2E, _prefill("eager", 4096), "but {} vs", "{:.2f}"),
    Quote(H200, QWEN3_E2E, _prefill("eager_cudagraph", 4096), "vs {} ms at 4096 tokens", "{:.2f}"),
    Quote(H200, QWEN3_E2E, _decode("eager"), "decode went from {} to"),
    Quote(H200, QWEN3_E2E, _decode("eager_cudagraph"), "to {} tokens/s"),
    Quote(H200, QWEN3_E2E, _prefill("eager_cudagraph", 4096), "vs {} ms", "{:.2f}"),
    # Kernel micro-benchmarks.
    Quote(H200, QWEN3_KERNELS_PUB, _result("rms_norm", RMS_BIG, "kernel"), "4096-wide rows: {} % at 16×8192×4096"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("rms_norm", RMS_BIG, "triton"), "Triton {} %, `torch.compile` "),
    Quote(H200, QWEN3_KERNELS_PUB, _result("rms_norm", RMS_BIG, "compile"), "`torch.compile` {} %, `F.rms_norm`"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("rms_norm", RMS_BIG, "F.rms_norm"), "`F.rms_norm` {} %, transformers eager"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("rms_norm", RMS_BIG, "eager"), "transformers eager {} %)"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("rms_norm", RMS_SMALL, "kernel"), "{} % at 1×1024×4096"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("rms_norm", RMS_SMALL, "triton"), "plain Triton reached {} %"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("qk_norm", QK_BIG, "kernel"), "128-wide rows: {} % at 16384 tokens"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("qk_norm", QK_BIG, "compile"), "level with `torch.compile` ({} %)"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("qk_norm", QK_BIG, "F.rms_norm"), "while `F.rms_norm` ({} %)"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("qk_norm", QK_BIG, "triton"), "one-row-per-program Triton kernel ({} %)"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("swiglu", "4096x12288", "kernel"), "4096×12288: {} %"),
    Quote(H200, QWEN3_KERNELS_PUB, _result("swiglu", "4096x12288", "compile"), "(`torch.compile` {} %)"),
    # End to end, 4096-token prefill.
    Quote(H200, QWEN3_E2E, _prefill("eager", 4096), "4096 tokens {} ms eager", "{:.2f}"),
    Quote(H200, QWEN3_E2E, _prefill("patched", 4096), "eager, {} ms patched", "{:.2f}"),
    Quote(H200, QWEN3_E2E, _prefill("compile", 4096), "patched, {} ms `torch.compile(model)`", "{:.2f}"),
    Quote(H200, QWEN3_E2E, _prefill("patched_compile", 4096), "{} ms `torch.compile` of the patched model", "{:.2f}"),
    Quote(H200, QWEN3_E2E, lambda d: d["target"]["measured"], "The patched model was {}× eager", "{:.2f}"),
    Quote(H200, QWEN3_E2E, lambda d: d["target"]["required"], "the example's {}× target, met"),
    Quote(H200, QWEN3_E2E, lambda d: 100 * (_prefill("compile", 4096)(d) / _prefill("patched", 4096)(d) - 1),
          "only {} % faster than compile"),
    # Matmul parameters: all but the embedding table, which is a lookup (Qwen3-8B's config.json:
    # vocab_size 151936 x hidden_size 4096; its lm_head is a separate, untied matrix).
    Quote(H200, QWEN3_E2E, lambda d: 2 * (d["model"]["parameters"] - 151936 * 4096) * 4096 / 989e12 * 1e3,
          "layers alone need at least {} ms", "{:.0f}"),
    Quote(H200, QWEN3_E2E, lambda d: (d["model"]["parameters"] - 151936 * 4096) / 1e9,
          "(2 × {} B matmul parameters", "{:.2f}"),
    Quote(H200, QWEN3_E2E, _decode("eager"), "launch-bound: {} tokens/s eager"),
    Quote(H200, QWEN3_E2E, _decode("patched"), "eager, {} patched (fewer ops"),
    Quote(H200, QWEN3_E2E, _decode("patched_cudagraph"), "per token), {} patched and"),
    Quote(H200, QWEN3_E2E, _decode("compile"), "CUDA graph, {} compiled."),
    # The power cap: where the 4096-token forward's kernel time goes, eager vs patched.
    Quote(H200, QWEN3_PROFILE, _profile("eager", "matmul"), "eager {} ms of matmul", "{:.2f}"),
    Quote(H200, QWEN3_PROFILE, _profile("eager", "attention"), "of matmul, {} ms of attention", "{:.2f}"),
    Quote(H200, QWEN3_PROFILE, _profile("eager", "other"), "attention and {} ms of PyTorch elementwise", "{:.2f}"),
    Quote(H200, QWEN3_PROFILE, _profile("eager"), "at a median {} MHz", "{:.0f}"),
    Quote(H200, QWEN3_PROFILE, _profile("patched", "matmul"), "patched {} ms matmul", "{:.2f}"),
    Quote(H200, QWEN3_PROFILE, _profile("patched", "attention"), "matmul, {} ms attention", "{:.2f}"),
    Quote(H200, QWEN3_PROFILE, _profile("patched", "ours"), "{} ms of ours at", "{:.2f}"),
    Quote(H200, QWEN3_PROFILE, _profile("patched"), "of ours at {} MHz", "{:.0f}"),
    Quote(H200, QWEN3_PROFILE, lambda d: _elementwise("eager")(d) - _elementwise("patched")(d),
          "elementwise time fell by {} ms"),
    Quote(H200, QWEN3_PROFILE, lambda d: _profile("patched", "matmul")(d) - _profile("eager", "matmul")(d),
          "matmuls' rose by {} ms"),
    Quote(H200, QWEN3_PROFILE, lambda d: _profile("eager")(d) / _profile("patched")(d),
          "at a median clock {}× lower", "{:.3f}"),
    Quote(TRANSFORMERS, QWEN3_E2E, lambda d: _prefill("patched_no_down_residual", 4096)(d) - _prefill("patched", 4096)(d),
          "it saved {} ms of", "{:.2f}"),
    Quote(TROUBLE, QWEN3_PROFILE, _profile("eager"), "median SM clock was {} MHz", "{:.0f}"),
    Quote(TROUBLE, QWEN3_PROFILE, _profile("patched"), "and the patched model's {} MHz", "{:.0f}"),
    Quote(TROUBLE, QWEN3_PROFILE, lambda d: 100 * (_profile("patched", "matmul")(d) / _profile("eager", "matmul")(d) - 1),
          "the matmuls took {} %", "{:.0f}"),
    Quote(TROUBLE, LTX_KERNELS, _ltx_result("rms_norm_rope_qk", "norm_q/norm_k + RoPE on q and k", [2, 1024, 2048],
                                            "kernel", "graph_pct_copy"),
          "op picks it by row count ({} % at 2×1024×2048"),
    # ltx_video: kernels (graph replay, the verdict timer; do_bench where the text says so)
    # and one denoising step.
    Quote(H200, LTX_KERNELS, _ltx_result("rms_norm", "weight (norm_q/norm_k)", [4, 4096, 3072], "kernel", "graph_pct_copy"),
          "weighted RMSNorm reached {} % at 4×4096×3072"),
    Quote(H200, LTX_KERNELS, _ltx_result("rms_norm", "weight (norm_q/norm_k)", [4, 4096, 3072], "triton", "graph_pct_copy"),
          "plain Triton kernel reached {} %"),
    Quote(H200, LTX_KERNELS_RUN2, _ltx_result("rms_norm", "weight (norm_q/norm_k)", [4, 4096, 3072], "kernel"),
          "reached only {} % by `do_bench` at that shape"),
    Quote(H200, LTX_KERNELS, _ltx_result("rms_norm", "weight (norm_q/norm_k)", [4, 4096, 3072], "kernel"),
          "brought it to {} % by the same timer"),
    Quote(H200, LTX_E2E, _ltx_step(2, "patched+compile"), "patched model took {} ms", "{:.2f}"),
    Quote(H200, LTX_E2E, _ltx_step(2, "compile"), "against {} ms for `torch.compile` alone", "{:.2f}"),
    Quote(H200, LTX_E2E, _ltx_step(1, "patched+compile"), "({} vs", "{:.2f}"),
    Quote(H200, LTX_E2E, _ltx_step(1, "compile"), "vs {} ms here", "{:.2f}"),
    # ratios of the medians, as benchmark_e2e.py's report and the example README compute them
    Quote(H200, LTX_E2E, lambda d: _ltx_step(1, "compile+cudagraph")(d) / _ltx_step(1, "patched+compile+cudagraph")(d),
          "ms at batch 1 ({}×)", "{:.2f}"),
    Quote(H200, LTX_E2E, lambda d: _ltx_step(2, "compile+cudagraph")(d) / _ltx_step(2, "patched+compile+cudagraph")(d),
          "ms at batch 2 ({}×)", "{:.2f}"),
    Quote(H200, LTX_E2E, _ltx_step(1, "patched+compile+cudagraph"), "both batches: {} vs", "{:.2f}"),
    Quote(H200, LTX_E2E, _ltx_step(1, "compile+cudagraph"), "vs {} ms at batch 1", "{:.2f}"),
    Quote(H200, LTX_E2E, _ltx_step(2, "patched+compile+cudagraph"), "×), {} vs", "{:.2f}"),
    Quote(H200, LTX_E2E, _ltx_step(2, "compile+cudagraph"), "vs {} ms at batch 2", "{:.2f}"),
    # bf16 logit errors at full size, and what a one-class Hub mapping buys vs the full patch.
    Quote(TRANSFORMERS, QWEN3_HUB, lambda d: d["stock_rel_err_vs_float32"], "bf16 logits were {} (relative L2)", "{:.1e}"),
    Quote(TRANSFORMERS, QWEN3_INJECTION, lambda d: d["logits_vs_unpatched"]["rel_l2"], "the patched model {} from", "{:.1e}"),
    Quote(TRANSFORMERS, QWEN3_INJECTION, lambda d: d["performance"]["variants"]["compile"]["logits_vs_unpatched"]["rel_l2"],
          "`torch.compile` {} (", "{:.1e}"),
    Quote(HUB, QWEN3_HUB, lambda d: d["performance"]["variants"]["eager"]["median_ms"], "took {} ms eager", "{:.2f}"),
    Quote(HUB, QWEN3_HUB, lambda d: d["performance"]["variants"]["kernelized"]["median_ms"], "{} ms kernelized", "{:.2f}"),
    Quote(HUB, QWEN3_HUB, lambda d: d["performance"]["variants"]["compile"]["median_ms"], "and {} ms under", "{:.2f}"),
    Quote(HUB, QWEN3_HUB, lambda d: d["performance"]["speedup_kernelized_vs_eager"], "{}× over eager", "{:.2f}"),
    Quote(HUB, QWEN3_HUB, lambda d: d["performance"]["speedup_kernelized_vs_compile"], "but {}× of compile", "{:.2f}"),
    Quote(HUB, QWEN3_INJECTION, lambda d: d["performance"]["variants"]["patched"]["median_ms"], "took {} ms against", "{:.2f}"),
    Quote(HUB, QWEN3_INJECTION, lambda d: d["performance"]["variants"]["compile"]["median_ms"], "against {} ms for compile", "{:.2f}"),
    # The graph-captured copy the troubleshooting guide warns about (the current ltx_video
    # benchmark no longer times it; run 2's JSON holds it).
    Quote(TROUBLE, LTX_KERNELS_RUN2, lambda d: d["copy_bandwidth_graph_gbs"],
          "{} GB/s for a 1 GiB `copy_` replayed from a graph"),
    Quote(H200, QWEN3_KERNELS_PUB,
          lambda d: 100 * (1 - _tuning("rms_norm", RMS_SMALL, "us", threads=256, persistent=0, hint=0)(d)
                           / _tuning("rms_norm", RMS_SMALL, "us", threads=256, persistent=0, hint=4)(d)),
          "cut that to 5 % and the call by {} % in the same sweep"),
    # Launch-configuration sweep (the published run's tuning entries).
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("rms_norm", RMS_BIG, "us", threads=128, persistent=0, hint=0), "ran {} µs"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("rms_norm", RMS_BIG, "pct_copy", threads=128, persistent=0, hint=0),
          "µs ({} %), 256 threads"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("rms_norm", RMS_BIG, "us", threads=256, persistent=0, hint=0), "256 threads\n{} µs"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("rms_norm", RMS_BIG, "pct_copy", threads=256, persistent=0, hint=0),
          "µs ({} %), 512 threads"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("rms_norm", RMS_BIG, "us", threads=512, persistent=0, hint=0), "512 threads {} µs"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("rms_norm", RMS_BIG, "pct_copy", threads=512, persistent=0, hint=0),
          "µs ({} %): one pack"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("rms_norm", RMS_BIG, "us", threads=64, persistent=0, hint=0),
          "64 threads × 8 packs: {} µs"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("rms_norm", RMS_BIG, "pct_copy", threads=64, persistent=0, hint=0),
          "µs, {} %, a tie with 128), as long as"),
    Quote(H200, QWEN3_KERNELS_PUB,
          lambda d: 100 * (_tuning("rms_norm", RMS_BIG, "us", threads=512, persistent=0, hint=0)(d)
                           / _tuning("rms_norm", RMS_BIG, "us", threads=128, persistent=0, hint=0)(d) - 1),
          "one pack per thread took {} % longer than four", "{:.0f}"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("qk_norm", QK_BIG, "us", threads=128, rows_per_group=1, persistent=0),
          "one row per lane group, {} µs"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("qk_norm", QK_BIG, "pct_copy", threads=128, rows_per_group=1, persistent=0),
          "µs ({} %);"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("qk_norm", QK_BIG, "us", threads=128, rows_per_group=4, persistent=0),
          "four rows per group {} µs"),
    Quote(H200, QWEN3_KERNELS_PUB, _tuning("qk_norm", QK_BIG, "pct_copy", threads=128, rows_per_group=4, persistent=0),
          "µs ({} %)."),
]


def _boundary(shape: str, provider: str, setting: str) -> Callable[[Any], float]:
    return lambda data: data["shapes"][shape][provider][f"{setting}_us"]


def _glu(rows: int, d: int, field: str) -> Callable[[Any], float]:
    def read(data: Any) -> float:
        (row,) = [r for r in data["results"] if r["rows"] == rows and r["d"] == d]
        return row[field] if field != "compile_speedup" else row["speedup"]["compile"]
    return read


LTX_W = "weight (norm_q/norm_k)"
# references/lessons.md: one rule, one number, one JSON per line (shipped, or the repository's evidence/).
QUOTES += [
    Quote(LESSONS, LTX_KERNELS_RUN2, lambda d: d["copy_bandwidth_graph_gbs"],
          "{} GB/s for a 1 GiB `copy_` replayed from a graph"),
    Quote(LESSONS, QWEN3_KERNELS_PUB, lambda d: d["meta"]["copy_bandwidth_GBps"], "copies {} GB/s outside graphs", "{:.0f}"),
    Quote(LESSONS, LTX_HINTS, _ltx_hint("rms_norm_rope_qk", [2, 1024, 2048], "kernel", "distinct"),
          "a fresh output per call: {} µs hinted", "{:.2f}"),
    Quote(LESSONS, LTX_HINTS, _ltx_hint("rms_norm_rope_qk", [2, 1024, 2048], "lean, no hints", "distinct"),
          "µs hinted, {} µs without hints", "{:.2f}"),
    Quote(LESSONS, QWEN3_BOUNDARY_H100, _boundary("rms_norm 1x1024x4096", "kernel", "spaced"),
          "between calls: {} µs against", "{:.2f}"),
    Quote(LESSONS, QWEN3_BOUNDARY_H100, _boundary("rms_norm 1x1024x4096", "triton", "spaced"),
          "against Triton's {} (back to back it led)", "{:.2f}"),
    Quote(LESSONS, QWEN3_SPLIT_H100.format(0), _result("rms_norm", "4096x12290", "kernel", "us"),
          "98 → 59 registers, {} →", "{:.2f}"),
    Quote(LESSONS, QWEN3_SPLIT_H100.format(1), _result("rms_norm", "4096x12290", "kernel", "us"),
          "→ {} µs (graph timer, one H100, same call)", "{:.2f}"),
    Quote(LESSONS, QWEN3_KERNELS_RUN5, _result("rms_norm", RMS_SMALL, "kernel", "us"), "50 → 32 registers: {} →", "{:.2f}"),
    Quote(LESSONS, QWEN3_KERNELS_RUN7, _result("rms_norm", RMS_SMALL, "kernel", "us"), "→ {} µs (graph timer)", "{:.2f}"),
    Quote(LESSONS, QWEN3_KERNELS_PUB,
          lambda d: 100 * (1 - _tuning("rms_norm", RMS_SMALL, "us", threads=256, persistent=0, hint=0)(d)
                           / _tuning("rms_norm", RMS_SMALL, "us", threads=256, persistent=0, hint=4)(d)),
          "took {} % less time at 1×1024×4096"),
    Quote(LESSONS, QWEN3_KERNELS_RUN3, _tuning("rms_norm", RMS_BIG, "us", threads=256, persistent=0, hint=0),
          "at 256 threads: {} µs with 50 registers"),
    Quote(LESSONS, QWEN3_KERNELS_PUB, _tuning("rms_norm", RMS_BIG, "us", threads=256, persistent=0, hint=0),
          "µs with 50 registers, {} µs with 32"),
    Quote(LESSONS, QWEN3_SWIGLU_RUN15, _tuning("swiglu", "1x12288", "us", threads=128, width=8, flat=1),
          "no loop) {} µs against", "{:.2f}"),
    Quote(LESSONS, QWEN3_SWIGLU_RUN15, _tuning("swiglu", "1x12288", "us", **GRID_STRIDE_128),
          "µs against {} for the grid-stride loop", "{:.2f}"),
    Quote(LESSONS, QWEN3_KERNELS_PUB, _tuning("fused_add_rms_norm", "512x4096", "us", threads=512, hint=8),
          "written in CUDA {} µs", "{:.2f}"),
    Quote(LESSONS, QWEN3_KERNELS_PUB, _tuning_default("fused_add_rms_norm", "512x4096", "us"),
          "our one-pass kernel {}, compile", "{:.2f}"),
    Quote(LESSONS, QWEN3_KERNELS_PUB, _result("fused_add_rms_norm", "512x4096", "compile", "us"),
          "compile {} (graph timer)", "{:.2f}"),
    Quote(LESSONS, LTX_GELU_SWEEP, _ltx_gelu_sweep([2, 1024, 2048], None), "256 threads × 4 packs {} µs", "{:.2f}"),
    Quote(LESSONS, LTX_GELU_SWEEP, _ltx_gelu_sweep([2, 1024, 2048], "128x1"), "128 × 1 {} µs", "{:.2f}"),
    Quote(LESSONS, LTX_KERNELS, _ltx_result("rms_norm", LTX_W, [1, 1024, 2048], "kernel, PDL off", "graph_us"),
          "back to back: {} µs without PDL", "{:.2f}"),
    Quote(LESSONS, LTX_KERNELS, _ltx_result("rms_norm", LTX_W, [1, 1024, 2048], "kernel", "graph_us"),
          "µs without PDL, {} with", "{:.2f}"),
    Quote(LESSONS, QWEN3_PROFILE, lambda d: _profile("eager")(d) / _profile("patched")(d),
          "median SM clock {}× lower", "{:.3f}"),
    Quote(LESSONS, TEMPLATE_GLU, _glu(4096, 12288, "pct_of_copy_bandwidth"), "reached {} % of copy bandwidth at 4096×12288"),
    Quote(LESSONS, TEMPLATE_GLU, _glu(4096, 12288, "compile_speedup"), "and {}× `torch.compile`'s speed", "{:.2f}"),
    Quote(LESSONS, LTX_KERNELS, _ltx_result("rms_norm", LTX_W, [4, 4096, 3072], "kernel", "graph_pct_copy"),
          "4×4096×3072 reads {} % by the graph timer"),
    Quote(LESSONS, LTX_KERNELS, _ltx_result("rms_norm", LTX_W, [4, 4096, 3072], "kernel"),
          "by the graph timer and {} % by do_bench"),
]


def _speedup(baseline: str, variant: str, tokens: int) -> Callable[[Any], float]:
    return lambda data: _prefill(baseline, tokens)(data) / _prefill(variant, tokens)(data)


# The worked example's READMEs quote its end-to-end run: its headline numbers, here, so a
# new committed run cannot leave the README telling the old one.
QUOTES += [
    Quote(QWEN3_README, QWEN3_E2E, _prefill("eager", 4096), "| prefill 4096 tokens | {} ms |", "{:.2f}"),
    Quote(QWEN3_README, QWEN3_E2E, _prefill("patched", 4096), "**{} ms (", "{:.2f}"),
    Quote(QWEN3_README, QWEN3_E2E, _speedup("eager", "patched", 4096), "ms ({}×)**", "{:.3f}"),
    Quote(QWEN3_README, QWEN3_E2E, _speedup("compile", "patched", 4096), "of the unpatched model: {}×", "{:.3f}"),
    Quote(QWEN3_README, QWEN3_E2E, _prefill("eager", 512), "| prefill 512 tokens | {} ms |", "{:.2f}"),
    Quote(QWEN3_README, QWEN3_E2E, _prefill("patched_cudagraph", 512), "| **{} ms** |", "{:.2f}"),
    Quote(QWEN3_README, QWEN3_E2E, _decode("eager"), "| decode, tokens/s | {} |"),
    Quote(QWEN3_README, QWEN3_E2E, _decode("patched_cudagraph"), "| **{}** |"),
    Quote(QWEN3_INTEGRATION, QWEN3_E2E, _prefill("eager", 4096), "Prefill at 4096 tokens: {} ms eager", "{:.2f}"),
    Quote(QWEN3_INTEGRATION, QWEN3_E2E, _prefill("patched", 4096), "ms eager, {} ms patched", "{:.2f}"),
    Quote(QWEN3_INTEGRATION, QWEN3_E2E, _speedup("eager", "patched", 4096), "ms patched, **{}×** (target 1.3×)", "{:.3f}"),
    Quote(QWEN3_INTEGRATION, QWEN3_PROFILE, _profile("eager", "matmul"), "| eager | {} |", "{:.2f}"),
    Quote(QWEN3_INTEGRATION, QWEN3_PROFILE, _profile("patched", "matmul"), "| patched | {} |", "{:.2f}"),
]

# ltx_video's README: both per-step tables (launched from Python, and one CUDA graph), as cells.
QUOTES += [
    Quote(LTX_README, LTX_E2E, _ltx_step(batch, config + graph), f"| {batch} |" + " {} |" if config == "eager" else "| {} |", "{:.2f}")
    for batch in (1, 2)
    for graph in ("", "+cudagraph")
    for config in ("eager", "patched", "compile", "patched+compile")
]


def _normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("quote", QUOTES, ids=[q.id for q in QUOTES])
def test_quoted_number_is_the_committed_one(quote: Quote) -> None:
    data = _load(quote.file)
    expected = _normalized(quote.text.format(quote.fmt.format(quote.read(data))))
    doc = _normalized((skilldocs.SKILL / quote.doc).read_text(encoding="utf-8"))
    assert expected in doc, f"{quote.doc} should say {expected!r} (from {quote.file})"


def test_quoted_files_are_linked_where_they_are_quoted() -> None:
    # A reader must be able to open the JSON (or the RESULTS.md generated from it) that a
    # document quotes: the document links the file or its folder's RESULTS.md. Evidence is
    # not installed with the skill, so a document names it as a repository path instead.
    for doc, file in sorted({(q.doc, q.file) for q in QUOTES}):
        text = (skilldocs.SKILL / doc).read_text(encoding="utf-8")
        if file.startswith(EVIDENCE):
            assert f"`{file}`" in text, f"{doc} quotes {file} but does not name it"
            continue
        folder = file.rsplit("/", 1)[0]
        results_md = folder.rsplit("/results", 1)[0] + "/RESULTS.md"
        here = doc.rsplit("/", 1)[0]
        targets = {os.path.relpath(path, here) for path in (file, f"{folder}/RESULTS.md", results_md)}
        assert any(f"]({t})" in text for t in targets), f"{doc} quotes {file} but links none of {sorted(targets)}"


def test_lessons_ranking_claims_hold_in_their_json() -> None:
    # lessons.md: the qwen3_8b RMSNorm led Triton back to back on the H100 and trailed it spaced.
    probe = _load(QWEN3_BOUNDARY_H100)
    ours, triton = (_boundary("rms_norm 1x1024x4096", who, "back_to_back")(probe) for who in ("kernel", "triton"))
    assert ours < triton
    ours, triton = (_boundary("rms_norm 1x1024x4096", who, "spaced")(probe) for who in ("kernel", "triton"))
    assert ours > triton
