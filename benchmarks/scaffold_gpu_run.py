#!/usr/bin/env python3
"""Scaffold every op of new_kernel_project.py, build it, and prove it on this GPU.

    PYTHONPATH=src python benchmarks/scaffold_gpu_run.py OUT [--ops rmsnorm ...] [--stages build test bench sanitizer]
                                                          [--budget-s 560] [--work DIR]

For each op (rmsnorm, layernorm, glu, elementwise, rope): scaffold it with
new_kernel_project.py, build it for the visible GPU with build_local.py --check, run the
project's own tests (every `gpu` test except compute-sanitizer's: the width x dtype x
layout sweep, opcheck, torch.compile), run its benchmark (bf16, >= 64 MB at widths 1024,
2048, 4096, 4100, 5120, 8192, aligned and misaligned, plus small shapes; peers eager,
torch.compile, Triton, and F.rms_norm for RMSNorm; copy bandwidth measured in the same
run), then the compute-sanitizer memcheck/racecheck tests.

Writes, under OUT (at most 4 files, refreshed after every step so a run cut short still
leaves what it finished):
    scaffold_results.json   every op's build, test, sanitizer and benchmark results
    RESULTS.md              the tables generated from that JSON, with the targets checked
    logs.tar.gz             build/test/benchmark logs and each benchmark's own JSON
    summary.txt             one line per op and stage

Builds and tests run several ops at once (CPU-bound compiles, small GPU tests); the
benchmarks run one at a time (timings need the GPU to themselves). Stages stop starting new
work once --budget-s seconds have passed, so the files are always written before an
outer time limit.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "cuda-kernels" / "scripts"
OPS = ["rmsnorm", "layernorm", "glu", "elementwise", "rope"]
STAGES = ["build", "test", "bench", "sanitizer"]
TARGET_PCT_COPY = 85.0  # issue 32: >= 85 % of copy bandwidth at >= 64 MB, widths >= 1024
TIE = 0.98  # within 2 % of the best peer counts as a tie
BIG_BYTES = 64 * 1024 * 1024


class Run:
    def __init__(self, out: Path, work: Path, budget_s: float) -> None:
        self.out = out
        self.work = work
        self.logs = work / "logs"
        self.start = time.monotonic()
        self.budget_s = budget_s
        self.results: dict = {"started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                              "ops": {}}

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.start)

    def op(self, op: str) -> dict:
        return self.results["ops"].setdefault(op, {})

    def run(self, args: list[str], log: Path, cwd: Path | None = None, env: dict | None = None,
            timeout: float | None = None) -> tuple[int, float, str]:
        log.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        limit = max(timeout if timeout is not None else self.left(), 5)
        try:
            proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=limit, check=False)
            rc, text = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc = 124
            text = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            text += f"\n[scaffold_gpu_run: killed after {limit:.0f} s]\n"
        log.write_text(f"$ {' '.join(map(str, args))}\n{text}")
        return rc, time.monotonic() - t0, text

    def save(self) -> None:
        self.results["elapsed_s"] = round(time.monotonic() - self.start, 1)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "scaffold_results.json").write_text(json.dumps(self.results, indent=2) + "\n")
        (self.out / "RESULTS.md").write_text(render_markdown(self.results))
        (self.out / "summary.txt").write_text(summary(self.results))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            if self.logs.is_dir():
                tar.add(self.logs, arcname="logs")
        (self.out / "logs.tar.gz").write_bytes(buf.getvalue())


def project_env(build_dir: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir), env.get("PYTHONPATH", "")])
    return env


def gpu_arch() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def build(run: Run, op: str, arch: str) -> None:
    project = run.work / "projects" / f"sg-{op}"
    build_dir = run.work / "builds" / op
    if project.exists():
        shutil.rmtree(project)
    rc, secs, text = run.run([sys.executable, str(SCRIPTS / "new_kernel_project.py"), f"sg-{op}", "--op", op,
                              "--capabilities", arch, "--out", str(project.parent)], run.logs / op / "scaffold.log")
    if rc != 0:
        run.op(op)["build"] = {"ok": False, "error": "scaffold failed", "tail": text[-2000:]}
        return
    rc, secs, text = run.run([sys.executable, str(SCRIPTS / "build_local.py"), str(project), "--arch", arch,
                              "--build-dir", str(build_dir), "--check"], run.logs / op / "build.log")
    run.op(op)["build"] = {"ok": rc == 0, "seconds": round(secs, 1), "arch": arch,
                           **({} if rc == 0 else {"tail": text[-3000:]})}
    # What was measured: the scaffold's kernel source, byte for byte.
    if (project / "kernel_src").is_dir():
        shutil.copytree(project / "kernel_src", run.logs / op / "kernel_src", dirs_exist_ok=True)


def source_commit() -> str | None:
    """$SOURCE_COMMIT when the caller names it, else this checkout's HEAD. The caller's word
    wins: the device machine's copy of the tree carried git metadata of an older commit
    (every run of 2026-12-06 recorded ad738e8 for trees three to seven commits later)."""
    if os.environ.get("SOURCE_COMMIT"):
        return os.environ["SOURCE_COMMIT"]
    git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False)
    return git.stdout.strip() if git.returncode == 0 and git.stdout.strip() else None


def pytest_summary(text: str) -> str:
    lines = [ln.strip("= ").strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if any(w in ln for w in (" passed", " failed", " error", " skipped", "no tests ran")):
            return ln
    return lines[-1] if lines else "(no output)"


def failed_tests(text: str) -> list[str]:
    return [ln.split(" ", 1)[1][:300] for ln in text.splitlines() if ln.startswith(("FAILED ", "ERROR "))][:40]


def test(run: Run, op: str, sanitizer: bool) -> None:
    key = "sanitizer" if sanitizer else "tests"
    if not run.op(op).get("build", {}).get("ok"):
        run.op(op)[key] = {"ok": False, "error": "not built"}
        return
    project = run.work / "projects" / f"sg-{op}"
    select = ["-k", "compute_sanitizer"] if sanitizer else ["-k", "not compute_sanitizer"]
    rc, secs, text = run.run([sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider", "-q", "-rfEs",
                              *select], run.logs / op / f"{key}.log", cwd=project,
                             env=project_env(run.work / "builds" / op))
    run.op(op)[key] = {"ok": rc == 0, "rc": rc, "seconds": round(secs, 1), "summary": pytest_summary(text),
                       "failed": failed_tests(text)}


VARIANTS = {"rmsnorm": ["rms_norm", "fused_add"], "layernorm": ["adaln", "affine"], "glu": ["silu", "gelu"],
            "elementwise": ["gelu_tanh", "silu"], "rope": ["rotate_half", "interleaved"]}


def bench(run: Run, op: str, all_variants: bool = False, timeout: float | None = None) -> None:
    if not run.op(op).get("build", {}).get("ok"):
        run.op(op)["bench"] = {"ok": False, "error": "not built"}
        return
    project = run.work / "projects" / f"sg-{op}"
    out_json = run.logs / op / f"benchmark_{op}.json"
    variants = VARIANTS[op] if all_variants else VARIANTS[op][:1]
    rc, secs, text = run.run([sys.executable, str(project / "benchmarks" / f"benchmark_{op}.py"), "--dtype", "bfloat16",
                              "--variant", *variants, "--out", str(out_json)], run.logs / op / "benchmark.log", cwd=project,
                             env=project_env(run.work / "builds" / op), timeout=timeout)
    entry: dict = {"ok": rc == 0 and out_json.is_file(), "rc": rc, "seconds": round(secs, 1)}
    if rc == 124:
        entry["note"] = "cut short by the time budget: the rows measured before are kept"
    if out_json.is_file():
        entry["data"] = json.loads(out_json.read_text())
    else:
        entry["tail"] = text[-3000:]
    run.op(op)["bench"] = entry


def verdict(row: dict) -> tuple[bool | None, bool | None]:
    """(meets the copy-bandwidth target, at least ties the best peer) for a >= 64 MB row of width >= 1024."""
    big = row["bytes"] >= BIG_BYTES and row["width"] >= 1024
    if not big:
        return None, None
    pct = row["pct_of_copy_bandwidth"] >= TARGET_PCT_COPY
    vs = row.get("speedup_vs_best")
    return pct, (vs is None or vs >= TIE)


def render_markdown(results: dict) -> str:
    lines = ["# Scaffold kernels on the GPU (generated by benchmarks/scaffold_gpu_run.py)", ""]
    env = results.get("environment", {})
    if env:
        lines += [f"Device: **{env.get('device')}** (sm_{env.get('capability', '').replace('.', '')}), torch "
                  f"{env.get('torch')}, CUDA {env.get('cuda')}, triton {env.get('triton')}; started "
                  f"{results.get('started_utc')}, commit {results.get('commit') or 'unknown'}.", ""]
    lines += ["Targets (issue 32), at >= 64 MB and width >= 1024: >= 85 % of the copy bandwidth measured in the same "
              "run, and at least the best of torch.compile and Triton (and every other peer; within 2 % is a tie).", "",
              "| op | build | GPU tests | sanitizer | benchmark rows meeting both targets |", "|---|---|---|---|---|"]
    for op, r in results["ops"].items():
        rows = r.get("bench", {}).get("data", {}).get("results", [])
        judged = [verdict(x) for x in rows]
        big = [v for v in judged if v[0] is not None]
        met = sum(1 for a, b in big if a and b)
        bench_cell = f"{met} of {len(big)}" if rows else r.get("bench", {}).get("error", "not run")
        lines.append(f"| {op} | {'ok' if r.get('build', {}).get('ok') else 'FAILED' if 'build' in r else '-'} | "
                     f"{r.get('tests', {}).get('summary', '-')} | {r.get('sanitizer', {}).get('summary', '-')} | "
                     f"{bench_cell} |")
    for op, r in results["ops"].items():
        data = r.get("bench", {}).get("data")
        if not data:
            continue
        peers = list(data["results"][0]["peers_us"]) if data["results"] else []
        lines += ["", f"## {op} ({data['timer']}, "
                  f"copy {data['copy_bandwidth_GBps']:.0f} GB/s)", "",
                  "| rows x width | variant, layout | MB | kernel us | GB/s | % copy | " + " | ".join(f"{p} us" for p in peers)
                  + " | best peer | vs best | targets |",
                  "|---|---|---|---|---|---|" + "---|" * len(peers) + "---|---|---|"]
        for x in data["results"]:
            pct_ok, vs_ok = verdict(x)
            mark = "-" if pct_ok is None else ("met" if pct_ok and vs_ok else
                                               "MISSED " + ", ".join(n for n, ok in (("% copy", pct_ok), ("vs best", vs_ok)) if not ok))
            cells = " | ".join(f"{x['peers_us'][p]:.1f}" if x["peers_us"].get(p) else "-" for p in peers)
            vs = f"{x['speedup_vs_best']:.3f}x" if x.get("speedup_vs_best") else "-"
            lines.append(f"| {x['rows']} x {x['width']} | {x['variant']}, {x['layout']} | {x['bytes'] / 1e6:.1f} | {x['kernel_us']:.1f} | "
                         f"{x['kernel_GBps']:.0f} | {x['pct_of_copy_bandwidth']:.1f} | {cells} | {x.get('best_peer') or '-'} "
                         f"| {vs} | {mark} |")
    for op, r in results["ops"].items():
        for key in ("tests", "sanitizer"):
            if r.get(key, {}).get("failed"):
                lines += ["", f"{op} {key} failures:", *[f"- `{f}`" for f in r[key]["failed"]]]
    return "\n".join(lines) + "\n"


def summary(results: dict) -> str:
    out = []
    for op, r in results["ops"].items():
        parts = [f"{stage}={'ok' if v.get('ok') else 'FAIL'}" + (f" ({v['summary']})" if v.get("summary") else "")
                 for stage, v in r.items()]
        out.append(f"{op}: " + "; ".join(parts))
    return "\n".join(out) + "\n"


def environment() -> dict:
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    props = torch.cuda.get_device_properties(0)
    sanitizer = shutil.which("compute-sanitizer") or (
        str(Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "compute-sanitizer"))
    return {"device": props.name, "capability": f"{props.major}.{props.minor}", "torch": torch.__version__,
            "cuda": torch.version.cuda, "triton": triton_version, "python": sys.version.split()[0],
            "nvcc": shutil.which("nvcc"), "compute_sanitizer": sanitizer if Path(sanitizer).is_file() else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for the results (the coordinator passes $OUT)")
    parser.add_argument("--ops", nargs="+", choices=OPS, default=OPS)
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=STAGES)
    parser.add_argument("--budget-s", type=float, default=560.0,
                        help="stop starting new work after this many seconds (default 560: inside a 10-minute limit)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kernel_base_scaffolds"),
                        help="where projects and builds go (kept between runs on the same machine)")
    parser.add_argument("--jobs", type=int, default=5, help="ops built and tested at once")
    parser.add_argument("--all-variants", action="store_true",
                        help="benchmark every variant (rmsnorm's fused add, rope's interleaved, ...), not only the first")
    args = parser.parse_args(argv)

    run = Run(args.out, args.work, args.budget_s)
    try:
        run.results["environment"] = environment()
    except Exception as exc:  # noqa: BLE001 - recorded, then every stage says why it could not run
        run.results["environment"] = {"error": f"{type(exc).__name__}: {exc}"}
        run.save()
        print(f"scaffold_gpu_run: no usable GPU: {exc}", file=sys.stderr)
        return 1
    run.results["commit"] = source_commit()
    run.results["stages"] = args.stages
    arch = run.results["environment"]["capability"]
    os.environ.setdefault("MAX_JOBS", str(max(2, (os.cpu_count() or 4) // max(1, args.jobs))))

    def parallel(fn, *extra) -> None:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for f in [pool.submit(fn, run, op, *extra) for op in args.ops]:
                f.result()
        run.save()

    if "build" in args.stages:
        parallel(build, arch)
    else:  # reuse the builds a previous run left in --work
        for op in args.ops:
            ok = (run.work / "builds" / op).is_dir() and (run.work / "projects" / f"sg-{op}").is_dir()
            run.op(op)["build"] = {"ok": ok, "reused": True}
    if "test" in args.stages and run.left() > 60:
        parallel(test, False)
    if "bench" in args.stages:
        # An equal share of what is left per op (the sanitizer keeps 90 s when it runs after), so
        # one slow op cannot starve the others; rows measured before a cut are kept.
        reserve = 90.0 if "sanitizer" in args.stages else 0.0
        for i, op in enumerate(args.ops):
            if run.left() - reserve < 60:
                run.op(op)["bench"] = {"ok": False, "error": "out of time budget"}
                continue
            bench(run, op, args.all_variants, timeout=(run.left() - reserve) / (len(args.ops) - i))
            run.save()
    if "sanitizer" in args.stages and run.left() > 60:
        parallel(test, True)
    run.save()
    print(summary(run.results), end="")
    print(f"wrote {args.out}/scaffold_results.json, RESULTS.md, summary.txt, logs.tar.gz "
          f"in {time.monotonic() - run.start:.0f} s")
    return 0 if all(v.get("ok", False) for r in run.results["ops"].values() for v in r.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
