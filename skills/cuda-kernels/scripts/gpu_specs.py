#!/usr/bin/env python3
"""Look up the GPU facts a kernel design depends on, from the skill's one data file.

The numbers live in ../assets/gpu_specs.json; every value names its source (a NVIDIA
document, or a committed measurement JSON inside the skill plus the key that holds the
number there). The hardware guides embed the same tables (`--markdown`), and the skill's
tests fail when a guide and the data file disagree.

    python scripts/gpu_specs.py                      # detect the current GPU (torch + CUDA), print its facts
    python scripts/gpu_specs.py --gpu h100-sxm       # one GPU from the table
    python scripts/gpu_specs.py --list               # every GPU key
    python scripts/gpu_specs.py --markdown h200-sxm  # the Markdown table a guide embeds
    python scripts/gpu_specs.py --gpu a100-40gb --json

Standard library only; torch is imported only to detect the current device.
Exit codes: 0 ok, 1 failure (e.g. no CUDA device to detect), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

SPECS_PATH = Path(__file__).resolve().parent.parent / "assets" / "gpu_specs.json"

# Row order and labels of the rendered tables. Keys absent from a GPU entry are skipped.
GPU_ROWS: tuple[tuple[str, str], ...] = (
    ("compute_capability", "Compute capability"),
    ("sm_count", "SMs"),
    ("tensor_cores", "Tensor cores"),
    ("memory_gb", "Memory"),
    ("memory_bandwidth_gbs", "Memory bandwidth (peak)"),
    ("copy_bandwidth_measured_gbs", "Copy bandwidth, measured (`copy_` outside CUDA graphs)"),
    ("copy_bandwidth_graph_gbs", "`copy_` inside a CUDA graph, measured (copy engine; not a roof)"),
    ("l2_cache_mb", "L2 cache"),
    ("fp32_tflops", "FP32 (non-tensor)"),
    ("bf16_tensor_tflops_dense", "BF16 tensor, dense"),
    ("fp16_tensor_tflops_dense", "FP16 tensor, dense"),
    ("power_w", "Max power"),
)
CC_ROWS: tuple[tuple[str, str], ...] = (
    ("shared_memory_per_sm_kb", "Shared memory per SM"),
    ("shared_memory_per_block_kb", "Shared memory per block (opt-in)"),
    ("static_shared_memory_per_block_kb", "Static shared memory per block"),
    ("registers_per_sm", "32-bit registers per SM"),
    ("max_registers_per_thread", "Registers per thread (max)"),
    ("max_threads_per_block", "Threads per block (max)"),
    ("max_resident_threads_per_sm", "Resident threads per SM"),
    ("max_resident_warps_per_sm", "Resident warps per SM"),
    ("max_resident_blocks_per_sm", "Resident blocks per SM"),
)
UNITS = {
    "memory_bandwidth_gbs": "GB/s",
    "copy_bandwidth_measured_gbs": "GB/s",
    "copy_bandwidth_graph_gbs": "GB/s",
    "l2_cache_mb": "MB",
    "fp32_tflops": "TFLOPS",
    "bf16_tensor_tflops_dense": "TFLOPS",
    "fp16_tensor_tflops_dense": "TFLOPS",
    "power_w": "W",
    "shared_memory_per_sm_kb": "KB",
    "shared_memory_per_block_kb": "KB",
    "static_shared_memory_per_block_kb": "KB",
}


class SpecError(Exception):
    """A lookup that cannot be answered; the message says what to do instead."""


def load_specs(path: Path = SPECS_PATH) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def gpu_entry(specs: dict[str, Any], key: str) -> dict[str, Any]:
    try:
        return specs["gpus"][key]
    except KeyError:
        known = ", ".join(sorted(specs["gpus"]))
        raise SpecError(f"unknown GPU '{key}'; known: {known}") from None


def match_device_name(specs: dict[str, Any], device_name: str) -> str | None:
    """The GPU key whose `match` strings occur in a CUDA device name as whole words (longest
    match wins): "NVIDIA L4" must not match "NVIDIA L40S", nor "A10G" an A100, nor "B200" a GB200."""
    best: tuple[int, str] | None = None
    for key, entry in specs["gpus"].items():
        for pattern in entry.get("match", []):
            found = re.search(rf"(?<![A-Za-z0-9]){re.escape(pattern)}(?![A-Za-z0-9])", device_name, re.IGNORECASE)
            if found and (best is None or len(pattern) > best[0]):
                best = (len(pattern), key)
    return best[1] if best else None


def value_of(fact: dict[str, Any]) -> Any:
    return fact["value"]


def _format_value(key: str, fact: dict[str, Any]) -> str:
    value = fact["value"]
    if value is None:  # not read from an NVIDIA document yet: say how to get it instead
        return f"not in this file yet: {fact['note']}"
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # a measured 4254.0 reads as 4254
    unit = fact.get("unit") or UNITS.get(key, "")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 10000:
        text = f"{value:,}"
    else:
        text = str(value)
    return f"{text} {unit}".strip()


def _format_source(specs: dict[str, Any], source_key: str) -> str:
    source = specs["sources"][source_key]
    if source["kind"] == "none":
        return "none read yet"
    if source["kind"] == "measured":
        # `file` and `script` are relative to the skill folder; the tables live in references/.
        return f"measured: [{source['file']}](../{source['file']}) ({Path(source['script']).name}, {source['date']})"
    return f"[{source_key}]"  # a reference link: markdown_table defines each URL once, under the table


def _facts_of(specs: dict[str, Any], key: str, cc_rows: bool = True) -> list[str]:
    entry = gpu_entry(specs, key)
    cc = specs["compute_capabilities"][entry["compute_capability"]["value"]]
    return [entry[f]["source"] for f, _ in GPU_ROWS if f in entry] + [cc[f]["source"] for f, _ in CC_ROWS if cc_rows]


def rows_for(specs: dict[str, Any], key: str, *, links: bool = True, cc_rows: bool = True) -> list[tuple[str, str, str]]:
    """(label, value, source) rows for one GPU: its own facts, then its compute capability's."""
    entry = gpu_entry(specs, key)
    cc = entry["compute_capability"]["value"]
    facts = [(label, field, entry[field]) for field, label in GPU_ROWS if field in entry]
    facts += [(label, field, specs["compute_capabilities"][cc][field]) for field, label in CC_ROWS if cc_rows]
    rows = []
    for label, field, fact in facts:
        source = _format_source(specs, fact["source"]) if links else fact["source"]
        rows.append((label, _format_value(field, fact), source))
    return rows


def markdown_table(specs: dict[str, Any], key: str, *, limits_above: str | None = None) -> str:
    """The table a guide embeds between `<!-- gpu-specs:KEY -->` and `<!-- /gpu-specs -->`.
    `limits_above` names an earlier table of the same guide and compute capability: its
    per-SM limit rows are not repeated here."""
    entry = gpu_entry(specs, key)
    lines = [f"| {entry['name']} | Value | Source |", "|---|---|---|"]
    lines += [f"| {label} | {value} | {source} |"
              for label, value, source in rows_for(specs, key, cc_rows=limits_above is None)]
    if limits_above is not None:
        lines.append(f"| Per-SM and per-block limits | as in the {limits_above} table above | |")
    used = dict.fromkeys(f for f in _facts_of(specs, key, limits_above is None)
                         if specs["sources"][f]["kind"] == "document")
    return "\n".join(lines + [""] + [f"[{k}]: {specs['sources'][k]['url']}" for k in used])


def detect_current_gpu() -> tuple[str, tuple[int, int]]:
    try:
        import torch  # noqa: PLC0415 - only needed for detection
    except ImportError:
        raise SpecError("torch is not installed: pass --gpu KEY (see --list)") from None
    if not torch.cuda.is_available():
        raise SpecError("no CUDA device visible to torch: pass --gpu KEY (see --list)")
    index = torch.cuda.current_device()
    return torch.cuda.get_device_name(index), torch.cuda.get_device_capability(index)


def _print_entry(specs: dict[str, Any], key: str, as_json: bool) -> None:
    entry = gpu_entry(specs, key)
    if as_json:
        cc = entry["compute_capability"]["value"]
        print(json.dumps({"key": key, **entry, "compute_capability_limits": specs["compute_capabilities"][cc]}, indent=2))
        return
    print(f"{entry['name']}  (key: {key}; guide: {entry['guide']})")
    rows = rows_for(specs, key, links=False)
    width = max(len(label) for label, _, _ in rows)
    for label, value, source in rows:
        print(f"  {label:<{width}}  {value}  [{source}]")
    named = sorted({s for _, _, s in rows if specs["sources"][s]["kind"] != "none"})
    print("sources: " + ", ".join(f"{s} = {specs['sources'][s].get('url', specs['sources'][s].get('file'))}" for s in named))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Print the GPU facts (SMs, shared memory, L2, bandwidth, ...) that kernel design depends on, "
        "from the skill's assets/gpu_specs.json. Without options, detect the current CUDA device.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--gpu", metavar="KEY", help="a GPU key from --list")
    group.add_argument("--list", action="store_true", help="list the GPU keys and names")
    group.add_argument("--markdown", metavar="KEY", help="print the Markdown table that the GPU's guide embeds")
    parser.add_argument("--json", action="store_true", help="print the entry as JSON (with --gpu or detection)")
    args = parser.parse_args(argv)

    specs = load_specs()
    try:
        if args.list:
            width = max(len(key) for key in specs["gpus"])
            for key, entry in specs["gpus"].items():
                cc = entry["compute_capability"]["value"]
                print(f"{key:<{width}} {entry['name']:<34} cc {cc:<5} {entry['guide']}")
        elif args.markdown:
            print(markdown_table(specs, args.markdown))
        elif args.gpu:
            _print_entry(specs, args.gpu, args.json)
        else:
            name, (major, minor) = detect_current_gpu()
            key = match_device_name(specs, name)
            print(f"current device: {name}, compute capability {major}.{minor} (build for cuda-capabilities \"{major}.{minor}\")")
            if key is None:
                print("not in assets/gpu_specs.json: use the guide of the same compute capability and measure "
                      "the copy bandwidth yourself (see the benchmark scripts).")
                return 0
            _print_entry(specs, key, args.json)
        sys.stdout.flush()  # inside the try: a closed pipe is reported here, not at exit
    except SpecError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2 if args.gpu or args.markdown else 1
    except BrokenPipeError:
        # `gpu_specs.py --list | head`: the reader has what it wanted. Point stdout at
        # /dev/null so the interpreter's final flush does not raise again, and exit as a
        # tool killed by SIGPIPE would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0


if __name__ == "__main__":
    sys.exit(main())
