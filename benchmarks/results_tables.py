#!/usr/bin/env python3
"""Fill the measured tables of the skill's Markdown from the committed benchmark JSON.

Repository tooling: maintainers run it after committing a GPU run's JSON; the skill does not ship it.

A table that quotes measurements is generated, never typed: the document marks its place

    <!-- generated: KIND PATH -->
    ...table...
    <!-- end generated -->

where PATH is the JSON relative to the document and KIND says how to read it:

  qwen3-kernels      examples/qwen3_8b/benchmarks/results.json (bench_ops.py): every shape,
                     our kernel against the best peer and torch.compile, graph timer
  ltx-kernels        examples/ltx_video/benchmarks/bench.json (bench_ops.py): the LTX-Video
                     shapes (2688 tokens), graph timer and do_bench side by side
  both-timers        examples/qwen3_8b/benchmarks/both_timers.json (both_timers.py): the
                     headline shapes under both timers, our kernel and the fastest peer
                     under each (every peer is in the JSON)
  both-timers-kernel the same, our kernel only
  long-rows          examples/long_rows/benchmarks/results.json (bench_long_rows.py): the
                     rows of >= 64 MB, logsumexp and cross-entropy against the best peer

Every table names its timer and the copy bandwidth its percentages refer to. A JSON that
does not exist yet (a run still to be made) leaves a one-line note saying which script
writes it.

    python benchmarks/results_tables.py DOC.md [DOC.md ...]           # rewrite the tables in place
    python benchmarks/results_tables.py --check DOC.md [DOC.md ...]    # exit 1 if one is stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

BLOCK = re.compile(r"(<!-- generated: (?P<kind>[a-z0-9-]+) (?P<path>\S+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.DOTALL)

GRAPH = "CUDA graph of back-to-back calls (median of 15 replays, inputs rotated past 4x L2, a fresh output per call)"
DO_BENCH = "`triton.testing.do_bench` median (L2 flushed, each call timed alone)"


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.1f}"


def qwen3_kernels(data: dict[str, Any]) -> list[str]:
    meta = data["meta"]
    out = [(f"Timer: {GRAPH}. % = of the {meta['copy_bandwidth_GBps']:.0f} GB/s `copy_` measured in the same run "
            f"({meta['device']}, {meta.get('source') or 'source unrecorded'}, {meta['date'][:10]})."),
           "",
           "| op | shape (bf16) | MB | ours µs | ours % of copy | best peer: µs (% of copy) | × best peer | × compile |",
           "|---|---|--:|--:|--:|---|--:|--:|"]
    for r in data["results"]:
        k = r["providers"].get("kernel")
        if not k:
            continue
        best = r.get("best_peer")
        peer = r["providers"].get(best, {}) if best else {}
        peer_txt = f"{best}: {peer['us']:.2f} ({peer['pct_copy']:.1f})" if peer else "-"
        compile_x = r.get("speedup", {}).get("compile")
        out.append(f"| {r['op']} | {r['shape']} | {_mb(r['bytes'])} | {k['us']:.2f} | {k['pct_copy']:.1f} | {peer_txt} | "
                   f"{r.get('kernel_vs_best_peer', float('nan')):.2f} | {'-' if compile_x is None else f'{compile_x:.2f}'} |")
    return out


def ltx_kernels(data: dict[str, Any]) -> list[str]:
    out = [(f"Two timers: graph = {GRAPH}; do_bench = {DO_BENCH}. % = of the {data['copy_bandwidth_gbs']:.0f} GB/s "
            f"`copy_` measured in the same run ({data['device']}, {data['date'][:10]}); × = the best peer's time / ours, "
            "graph timer."),
           "",
           "| op | variant | shape (bf16) | MB | graph µs | graph % | do_bench µs | do_bench % | best peer (graph) | × |",
           "|---|---|---|--:|--:|--:|--:|--:|---|--:|"]
    for r in data["results"]:
        if r["shape"][1] != 2688:  # LTX-Video's own shapes: 49 frames of 512x768, batch 1 and 2 (CFG)
            continue
        k = r["impls"]["kernel"]
        shape = "×".join(str(s) for s in r["shape"])
        out.append(f"| {r['op']} | {r['variant']} | {shape} | {_mb(r['bytes'])} | {k['graph_us']:.2f} | "
                   f"{k['graph_pct_copy']:.1f} | {k['us']:.2f} | {k['pct_copy']:.1f} | {r.get('best_peer_graph', '-')} | "
                   f"{r.get('speedup_vs_best_peer_graph', float('nan')):.2f} |")
    return out


def _both_timers(data: dict[str, Any], kernel_only: bool) -> list[str]:
    meta = data["meta"]
    out = [(f"graph = {GRAPH}; do_bench = {DO_BENCH}. Both in one process on one build; % = of the "
            f"{meta['copy_bandwidth_GBps']:.0f} GB/s `copy_` measured in the same run ({meta['device']}, "
            f"{meta.get('source') or 'source unrecorded'}, {meta['date'][:10]})."),
           ""]
    head = "| op | shape (bf16) | MB |" + ("" if kernel_only else " provider |")
    out += [head + " graph µs | graph % | do_bench µs | do_bench % | do_bench / graph |",
            "|---|---|--:|" + ("" if kernel_only else "---|") + "--:|--:|--:|--:|--:|"]
    for r in data["results"]:
        # Ours and the fastest peer under each timer (one or two rows); the JSON has every peer.
        peers = {n: p for n, p in r["providers"].items() if n != "kernel"}
        keep = {"kernel"}
        if peers and not kernel_only:
            keep |= {min(peers, key=lambda n: peers[n][t]) for t in ("graph_us", "do_bench_us")}
        for name, p in r["providers"].items():
            if name not in keep:
                continue
            who = "" if kernel_only else f" {'ours' if name == 'kernel' else name} |"
            out.append(f"| {r['op']} | {r['shape']} | {_mb(r['bytes'])} |{who} {p['graph_us']:.2f} | "
                       f"{p['graph_pct_copy']:.1f} | {p['do_bench_us']:.2f} | {p['do_bench_pct_copy']:.1f} | "
                       f"{p['do_bench_us'] / p['graph_us']:.2f} |")
    return out


def long_rows(data: dict[str, Any]) -> list[str]:
    out = [f"Timer: {data['timer']}. % = of the bandwidth of a `copy_` of the same tensor, measured in the same run ({data['device']}, "
           f"{data['date'][:10]}); target {data['target']}. Rows of >= 64 MB; every shape is in RESULTS.md.", "",
           "| dtype | rows x vocab | MB | logsumexp µs | % of copy | × best peer | cross-entropy µs | % of copy | × best peer |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for r in data["results"]:
        if r["mbytes"] >= 64:  # the benchmark's MB are 10^6 bytes, as its target
            out.append(f"| {r['dtype']} | {r['rows']} x {r['vocab']} | {r['mbytes']:.1f} | {r['lse_ours_us']:.1f} | "
                       f"{r['lse_pct_copy']:.1f} | {r['lse_vs_best_peer']:.2f} | {r['ce_ours_us']:.1f} | "
                       f"{r['ce_pct_copy']:.1f} | {r['ce_vs_best_peer']:.2f} |")
    return out


KINDS: dict[str, tuple[Callable[[dict[str, Any]], list[str]], str]] = {
    "qwen3-kernels": (qwen3_kernels, "benchmarks/bench_ops.py"),
    "ltx-kernels": (ltx_kernels, "benchmarks/bench_ops.py"),
    "both-timers": (lambda d: _both_timers(d, False), "examples/qwen3_8b/benchmarks/both_timers.py"),
    "both-timers-kernel": (lambda d: _both_timers(d, True), "examples/qwen3_8b/benchmarks/both_timers.py"),
    "long-rows": (long_rows, "examples/long_rows/benchmarks/bench_long_rows.py"),
}


def render(kind: str, json_path: Path) -> str:
    """The body of one generated block (ends with a newline)."""
    if kind not in KINDS:
        raise ValueError(f"unknown table kind {kind!r}; known: {', '.join(KINDS)}")
    make, writer = KINDS[kind]
    if not json_path.is_file():
        return (f"Not measured yet: this table is generated from `{json_path.name}`, which `{writer}` writes "
                "on a GPU; until that JSON is committed there is no number to show.\n")
    return "\n".join(make(json.loads(json_path.read_text(encoding="utf-8")))) + "\n"


def blocks(doc: Path) -> list[tuple[str, Path, str]]:
    """(kind, JSON path, current body) of every generated block of a document."""
    text = doc.read_text(encoding="utf-8")
    return [(m["kind"], (doc.parent / m["path"]).resolve(), m["body"]) for m in BLOCK.finditer(text)]


def update(doc: Path) -> str:
    """The document with every generated block rewritten from its JSON."""
    text = doc.read_text(encoding="utf-8")
    return BLOCK.sub(lambda m: m[1] + render(m["kind"], (doc.parent / m["path"]).resolve()) + m[5], text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("docs", nargs="+", type=Path, help="Markdown files with generated blocks")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table is stale")
    args = parser.parse_args(argv)
    stale = 0
    for doc in args.docs:
        if not doc.is_file():
            print(f"results_tables: error: {doc} does not exist", file=sys.stderr)
            return 2
        if not blocks(doc):
            print(f"results_tables: error: {doc} has no <!-- generated: KIND PATH --> block", file=sys.stderr)
            return 2
        new = update(doc)
        if new != doc.read_text(encoding="utf-8"):
            if args.check:
                print(f"{doc}: a generated table differs from its JSON (run without --check)")
                stale += 1
            else:
                doc.write_text(new, encoding="utf-8")
                print(f"updated {doc}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
