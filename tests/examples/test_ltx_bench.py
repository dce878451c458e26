"""The ltx_video micro-benchmark plans every peer, rotates inputs past L2, and its
RESULTS.md generator bases verdicts on the rotated graph timer (format 2).

These run without a GPU: the timing itself runs on the GPU machine (benchmarks/ltx_video/run_gpu.sh;
the launch sweeps: benchmarks/ltx_video/sweep_ops.py).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "skills" / "cuda-kernels" / "examples" / "ltx_video" / "benchmarks"
TOOLS = REPO / "benchmarks" / "ltx_video"  # the repository's run tools, not shipped


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench_ops():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    return _load(BENCH / "bench_ops.py", "ltx_bench_ops")


@pytest.fixture(scope="module")
def sweep_ops(bench_ops):
    """The repository's sweep tool: the example's bench_ops.py plus the --sweep* options."""
    return _load(TOOLS / "sweep_ops.py", "ltx_sweep_ops")


@pytest.fixture(scope="module")
def make_results():
    return _load(TOOLS / "make_results.py", "ltx_make_results_v2")


def test_plan_measures_every_peer_of_every_shape_within_four_minutes(bench_ops, tmp_path, capsys) -> None:
    assert bench_ops.main(["--plan", "--out", str(tmp_path / "x.json"), "--compile-workers", "7"]) == 0
    first, payload = capsys.readouterr().out.strip().splitlines()[-2:]
    plan = json.loads(payload)
    assert first.startswith("plan: 58 op x shape cases")
    # every case has a torch.compile peer and the default run leaves none out
    assert plan["cases"] == 58 and plan["compiles"] == 58
    # 140 non-compile implementations + 58 compile peers + every kernel again with PDL off +
    # the 27 cases of the three ops the cache-hint rule touches again with the rule on
    hinted = [c for c in bench_ops.select_cases(_Stub(), False, set()) if c["op"] in bench_ops.HINT_OPS]
    assert len(hinted) == 27
    assert plan["measurements"] == 140 + 58 + 58 + 27 and plan["sweep_measurements"] == 0
    assert plan["estimated_s"] <= 240
    shapes = {tuple(c["shape"]) for c in bench_ops.select_cases(_Stub(), False, set())}
    for shape in bench_ops.ISSUE_SHAPES + [(1, 2688, 2048), (2, 2688, 2048)]:
        assert shape in shapes


class _Stub:
    reference = None


def test_the_sweep_is_opt_in_and_counted(sweep_ops, bench_ops, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit):  # the shipped benchmark has no sweep options: the repository's tool has
        bench_ops.main(["--plan", "--sweep", "--out", str(tmp_path / "x.json")])
    capsys.readouterr()
    assert sweep_ops.main(["--plan", "--sweep", "--out", str(tmp_path / "x.json"), "--compile-workers", "7"]) == 0
    plan = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert plan["sweep_measurements"] > 0
    assert plan["measurements"] == 256 + 27 + plan["sweep_measurements"]


def test_the_adaln_sweep_is_opt_in_counted_and_covers_every_issue_and_ltx_shape(sweep_ops, bench_ops, tmp_path, capsys) -> None:
    out = str(tmp_path / "x.json")
    assert bench_ops.main(["--plan", "--out", out, "--compile-workers", "7"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["adaln_sweep_measurements"] == 0
    ops = "rms_norm_modulate,add_rms_norm_modulate"
    assert sweep_ops.main(["--plan", "--sweep-adaln", "--ops", ops, "--out", out, "--compile-workers", "7"]) == 0
    plan = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    shapes = sweep_ops.adaln_sweep_shapes()
    # every issue shape (torch.compile must be beaten on the small ones too) and both
    # 2688-token LTX shapes
    assert set(bench_ops.ISSUE_SHAPES) <= set(shapes) and (1, 1024, 2048) in shapes
    assert (1, 2688, 2048) in shapes and (2, 2688, 2048) in shapes
    per_op = sum(len(sweep_ops.adaln_sweep_grid(s[-1])) + 1 for s in shapes)  # + the default op
    assert plan["adaln_sweep_measurements"] == 2 * per_op
    # kernel, kernel with PDL off, kernel with the cache-hint rule on, eager, compile
    assert plan["measurements"] == plan["adaln_sweep_measurements"] + 5 * plan["cases"]
    # every (threads, chunks) gets the rows kernel with scale/shift held early (flags 0),
    # read late (4) and the pipelined kernel (8, 16) - those three in blocks of <= 256
    # threads only - the lean kernel (64) and its reload variant (128) at 1-2 chunks, and every rows_per_block x flags
    # point of the column-stationary kernel (blocks of <= 256 threads)
    grid = sweep_ops.adaln_sweep_grid(2048)
    assert {(64, 4, 0, f) for f in (0, 4, 8, 16)} <= set(grid) and (64, 4, 16, 3) in grid
    assert {(t, v, 0, f) for t, v in ((128, 2), (256, 1)) for f in (64, 128, 320)} <= set(grid)
    assert all(f in (0, 4, 8, 16, 64, 128, 320) for _, _, r, f in grid if r == 0)
    assert all(r == 0 for _, _, r, f in grid if f & (4 | 8 | 16 | 64 | 128 | 256))
    assert all(t <= 256 for t, _, _, f in grid if f & (4 | 8 | 16))
    assert all(v <= 2 and f in (64, 128, 320) for _, v, _, f in grid if f & (64 | 128 | 256))
    assert {(384, 1, 0, f) for f in (64, 128, 320)} <= set(sweep_ops.adaln_sweep_grid(3072))
    assert all(t <= 256 for t, _, r, _ in sweep_ops.adaln_sweep_grid(3072) if r > 0)
    # --adaln-rows-only: just the rows_per_block 0 points, a sweep that fits one GPU call
    rows_only = sweep_ops.adaln_sweep_grid(3072, colstat=False)
    assert rows_only and all(r == 0 for _, _, r, _ in rows_only) and (128, 3, 0, 16) in rows_only
    assert sweep_ops.main(["--plan", "--sweep-adaln", "--adaln-rows-only", "--ops", ops, "--out", out,
                           "--compile-workers", "7"]) == 0
    small = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert small["adaln_sweep_measurements"] == 2 * sum(len(sweep_ops.adaln_sweep_grid(s[-1], False)) + 1 for s in shapes)
    assert small["estimated_s"] <= 300
    # --adaln-ungated (the fused add as LTX calls it after attn2) times the same points
    assert sweep_ops.main(["--plan", "--sweep-adaln", "--adaln-rows-only", "--adaln-ungated", "--ops",
                           "add_rms_norm_modulate", "--out", out, "--compile-workers", "7"]) == 0
    ungated = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert ungated["adaln_sweep_measurements"] == small["adaln_sweep_measurements"] // 2


def test_the_qk_sweep_is_opt_in_counted_and_each_point_covers_a_row(sweep_ops, bench_ops, tmp_path, capsys) -> None:
    out = str(tmp_path / "x.json")
    args = ["--plan", "--ops", "rms_norm_rope_qk", "--out", out, "--compile-workers", "7"]
    assert bench_ops.main(args) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["qk_sweep_measurements"] == 0
    assert sweep_ops.main([*args, "--sweep-qk"]) == 0
    plan = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    shapes = bench_ops.ISSUE_SHAPES + bench_ops.LTX_SHAPES
    assert plan["qk_sweep_measurements"] == sum(len(sweep_ops.qk_sweep_points(s[-1])) + 1 for s in shapes) > len(shapes)
    for d, points in sweep_ops.QK_SWEEP.items():
        for tpr, vpt in points:  # bf16: 8 elements per chunk; no thread entirely idle
            assert tpr * vpt * 8 >= d > tpr * (vpt - 1) * 8 and 1 <= vpt <= 4
            assert tpr % 32 == 0 and tpr <= 512
    # the lean kernel (flag 64, and 320 with cache hints) joins every one-chunk point whose row fits
    # 256 threads, only those
    assert (256, 1, 64) in sweep_ops.qk_sweep_points(2048)
    assert all(f == 0 for _, _, f in sweep_ops.qk_sweep_points(3072))  # 3072 at one chunk is 384 threads
    assert all(v == 1 and t <= 256 for t, v, f in sweep_ops.qk_sweep_points(2048) if f)


@pytest.mark.parametrize("nbytes", [1 << 20, 8_392_704, 67_000_000, 201_000_000, 805_000_000, 4 << 30])
def test_input_sets_move_four_l2s_and_a_replay_ends_on_a_full_cycle(bench_ops, nbytes: int) -> None:
    l2 = 60 * 1024 * 1024
    n = bench_ops.n_sets_for(nbytes, l2)
    assert n >= 2  # never the same input set twice in a row, however large
    assert n * nbytes >= 4 * l2 or n == 256
    calls = bench_ops.graph_calls(nbytes, n, 4300.0)
    assert calls % n == 0 and calls >= 5


def _v2_data(kernel_graph_us: float) -> dict:
    raw = {
        "op": "gelu_tanh", "variant": "synthetic", "shape": [1, 10, 20], "bytes": 100_000_000, "input_sets": 3,
        "impls": {
            # do_bench says 80 % and a 2x win; the graph timer (rotated) decides the verdicts
            "kernel": {"us": 125.0, "graph_us": kernel_graph_us, "graph_pct_copy": 999.0},
            "eager": {"us": 250.0, "graph_us": 110.0},
            "compile": {"us": 300.0, "graph_us": 105.0},
        },
    }
    return {"format": 2, "device": "GPU", "torch": "t", "cuda": "c", "date": "d", "copy_bandwidth_gbs": 1000.0,
            "l2_bytes": 60 * 1024 * 1024, "copy_bandwidth_method": "copy", "graph_timer": "rotated graph",
            "results": [raw]}


def test_format_2_verdicts_follow_the_rotated_graph_timer(make_results) -> None:
    text = make_results.render(_v2_data(kernel_graph_us=140.0), "bench.json")
    # graph: 100 MB in 140 us against 1000 GB/s = 71.4 % (< 80: NO); slower than compile's 105 us
    assert "| `gelu_tanh` | 1×10×20 | 100.0 | >= 80 % | 71.4 | NO | compile x0.75 | 80.0 | eager x2.00 | - |" in text
    assert "NO (compile x0.75)" in text
    assert "| 140.0 / 125.0 | 71.4 / 80.0 |" in text  # cells read graph / do_bench
    assert "999" not in text  # stale %-fields never leak
    assert "rotate" in text and "verdicts use it" in text

    text = make_results.render(_v2_data(kernel_graph_us=100.0), "bench.json")
    assert "| 100.0 | yes | compile x1.05 |" in text
    assert "yes (compile x1.05)" in text


def test_the_pdl_off_kernel_is_shown_next_to_the_verdicts_and_is_never_a_peer(make_results) -> None:
    data = _v2_data(kernel_graph_us=100.0)
    # without PDL the kernel takes 105.2 us: 95.1 % of copy, and compile (105 us) is 0.2 % faster
    data["results"][0]["impls"]["kernel, PDL off"] = {"us": 126.0, "graph_us": 105.2}
    text = make_results.render(data, "bench.json")
    assert "| 100.0 | yes | compile x1.05 | 95.1 | yes | x1.00 |" in text  # x rounds: the count must not
    summary = next(line for line in text.splitlines() if line.startswith("| `gelu_tanh` | 1 |"))
    assert summary.startswith("| `gelu_tanh` | 1 | 1 of 1 | 1.05 | 0 of 1 | 1.00 |")
    assert "best peer (graph) | kernel, PDL off" not in text and "NO (kernel, PDL off" not in text


def test_the_cache_hint_row_is_shown_and_is_never_a_peer(make_results) -> None:
    data = _v2_data(kernel_graph_us=100.0)
    # with the hint rule on the kernel takes 104 us: the default is x1.04 against it
    data["results"][0]["impls"]["kernel, cache hints"] = {"us": 130.0, "graph_us": 104.0}
    text = make_results.render(data, "bench.json")
    assert "| 104.0 / 130.0 |" in text and "| 1.04 / 1.04 |" in text
    assert "compile x1.05" in text and "kernel, cache hints x" not in text


def test_format_2_summary_reports_the_graph_verdict(make_results) -> None:
    out = make_results.summary(_v2_data(kernel_graph_us=100.0))
    assert "yes (100.0 vs 80)" in out.splitlines()[-1]


def test_the_rope_sweep_is_opt_in_and_times_every_kernel_choice_on_every_shape(sweep_ops, bench_ops, tmp_path, capsys) -> None:
    out = str(tmp_path / "x.json")
    assert bench_ops.main(["--plan", "--ops", "rope_interleaved", "--out", out]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["rope_sweep_measurements"] == 0
    assert sweep_ops.main(["--plan", "--sweep-rope", "--ops", "rope_interleaved", "--out", out]) == 0
    plan = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    shapes = bench_ops.ISSUE_SHAPES + bench_ops.LTX_SHAPES
    # the per-row kernel, the flat kernel at 1, 2 and 4 chunks per thread, the narrow flat kernel
    # at 2 and 4 elements per thread plain and with streaming hints, and the default op
    assert list(sweep_ops.ROPE_SWEEP_POINTS.values()) == [
        (0, 0, 0), (1, 0, 0), (2, 0, 0), (4, 0, 0), (1, 2, 0), (1, 4, 0), (1, 2, 1), (1, 4, 1)]
    assert plan["rope_sweep_measurements"] == len(shapes) * 9


def test_the_gelu_sweep_is_opt_in_and_times_every_block_size_and_unroll_on_every_gelu_shape(
        sweep_ops, bench_ops, tmp_path, capsys) -> None:
    out = str(tmp_path / "x.json")
    assert bench_ops.main(["--plan", "--ops", "gelu_tanh", "--out", out]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["gelu_sweep_measurements"] == 0
    assert sweep_ops.main(["--plan", "--sweep-gelu", "--ops", "gelu_tanh", "--out", out]) == 0
    plan = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # blocks of 64 / 128 / 256 threads x 1, 2, 4, 8 chunks per thread, and the default op
    assert sorted(sweep_ops.GELU_SWEEP_POINTS) == [(t, u) for t in (64, 128, 256) for u in (1, 2, 4, 8)]
    shapes = bench_ops.ISSUE_SHAPES + bench_ops.LTX_FF_SHAPES
    assert plan["gelu_sweep_measurements"] == len(shapes) * 13


def test_each_sweep_writes_its_method_then_its_rows_saving_after_every_row(sweep_ops, monkeypatch) -> None:
    import argparse

    rows = {name: [{"shape": f"{name}-{i}"} for i in range(n)]
            for name, n in (("rope", 2), ("gelu", 1), ("qk", 3), ("adaln", 2))}
    for name in rows:
        monkeypatch.setattr(sweep_ops, f"run_{name}_sweep", lambda *a, _r=rows[name], **k: iter(_r))
    result: dict = {"rows": []}
    saved: list[list[str]] = []
    args = argparse.Namespace(sweep=False, sweep_rope=True, sweep_gelu=True, sweep_qk=True, sweep_adaln=True,
                              adaln_rows_only=False, adaln_ungated=True)
    sweep_ops.run(args, None, None, set(), result, lambda: saved.append(list(result)))
    keys = [k for name in ("rope", "gelu", "qk", "adaln") for k in (f"{name}_sweep_method", f"{name}_sweep")]
    assert list(result) == ["rows", *keys]
    assert all(result[f"{name}_sweep"] == r for name, r in rows.items())
    assert len(saved) == sum(map(len, rows.values()))
    assert result["adaln_sweep_method"].endswith("(gate=None)")


def test_the_ncu_profile_driver_explains_itself_and_refuses_a_machine_without_gpu(tmp_path) -> None:
    import subprocess
    import sys

    script = TOOLS / "profile_ops.py"
    help_text = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert help_text.returncode == 0 and "--shape" in help_text.stdout
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the driver would run")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "needs a CUDA GPU" in run.stderr


def test_the_cache_hint_check_explains_itself_and_refuses_a_machine_without_gpu() -> None:
    import subprocess
    import sys

    script = TOOLS / "hint_check.py"
    help_text = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert help_text.returncode == 0 and "--package-path" in help_text.stdout
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the check would run")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "needs a CUDA GPU" in run.stderr


def test_the_benchmark_writes_the_published_json_layout(bench_ops, make_results) -> None:
    data = {"format": 2, "plan": {"cases": 1}, "results": [{"op": "gelu_tanh", "impls": {"kernel": {"us": 1.5}}},
                                                            {"op": "rope_interleaved", "shape": [1, 2, 4]}],
            "rope_sweep": [], "elapsed_s": 1.0}
    text = bench_ops.dumps_records(data)
    assert text == make_results.dumps_records(data)
    assert json.loads(text) == data
    assert text.splitlines()[4] == '{"op":"gelu_tanh","impls":{"kernel":{"us":1.5}}},'  # one record per line


def test_the_benchmarks_flag_numbers_are_the_packages(sweep_ops, bench_ops) -> None:
    # sweep_ops.py plans its sweeps without importing the built package, so it repeats the
    # flag bits; a renumbered flag in torch-ext must not leave the sweep timing another kernel.
    import re

    init = (BENCH.parent / "torch-ext" / "ltx_video_kernels" / "__init__.py").read_text(encoding="utf-8")
    package = {m.group(1): int(m.group(2)) for m in re.finditer(r"^([A-Z][A-Z0-9_]*) = (\d+)\b", init, re.M)}
    assert package["ADALN_LEAN"] == sweep_ops.ADALN_LEAN
    assert package["ADALN_RELOAD"] == sweep_ops.ADALN_RELOAD
    assert package["LEAN_HINTS"] == sweep_ops.LEAN_HINTS
    assert package["ROPE_STREAMING"] == sweep_ops.ROPE_STREAMING
    assert package["QK_LEAN"] == sweep_ops.QK_LEAN
    assert package["QK_PREFETCH"] == sweep_ops.QK_PREFETCH
    lean, hints, prefetch = package["QK_LEAN"], package["LEAN_HINTS"], package["QK_PREFETCH"]
    lean_points = [p for p in sweep_ops.qk_sweep_points(2048) if p[2]]
    assert lean_points == [(256, 1, lean), (256, 1, lean | hints), (256, 1, lean | prefetch),
                           (256, 1, lean | prefetch | hints)]
    keys = [sweep_ops.qk_sweep_key(*p) for p in sweep_ops.qk_sweep_points(2048)]
    assert len(set(keys)) == len(keys)  # every point gets its own column
    assert keys[-4:] == ["256x1/lean", "256x1/lean+hints", "256x1/lean+prefetch", "256x1/lean+prefetch+hints"]
