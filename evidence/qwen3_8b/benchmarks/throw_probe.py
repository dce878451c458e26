#!/usr/bin/env python3
"""Why does a TORCH_CHECK failure in the extension crash the process? Evidence, in one file.

    python evidence/qwen3_8b/benchmarks/throw_probe.py --package-path BUILD_DIR --out OUT/throw_probe.txt [--jobs N]

On the first H200 run, `kernels.ops.rms_norm(x, weight_of_wrong_shape, eps)` on CUDA
tensors ended the pytest process with SIGSEGV instead of raising RuntimeError. The same
binding, built by the same build_local.py against torch 2.11.0+cu130 on a machine
without a GPU (gcc 12, Debian 12), raises RuntimeError from CPU-registered copies of the
op. So the difference is either the GPU machine's toolchain (compiler, libstdc++) or the
CUDA dispatch path. This probe separates the candidates, each call in its own
subprocess (a crash is recorded, not fatal):

  1. the toolchain: host compiler versions, the libstdc++ / libgcc_s the Python process
     maps after importing torch and the package, the exact compile lines ninja used;
  2. the real package: the failing call (CUDA tensors), other TORCH_CHECKs of the
     binding (dtype, shape), and torch's own dispatcher error for comparison;
  3. a minimal op (TORCH_CHECK(false) / throw std::runtime_error, registered for CPU and
     CUDA) built twice from the same source: by build_local.py and by
     torch.utils.cpp_extension.load (torch's own flags); called with CPU and CUDA tensors;
  4. if cuda-gdb is installed (the GPU machine has no gdb): the failing call under
     `cuda-gdb -batch`, stopped at the C++ throw and at the crash, with backtraces.

Since then build_local links the extension against the libstdc++ the interpreter has
loaded (a crash on the H200 was traced to std::ostream code copied into the extension
from libstdc++.a when g++ found no libstdc++.so development link); section 1 shows what
`g++ -print-file-name=libstdc++.so` finds, the extension's NEEDED libraries and whether
stream/locale symbols are defined inside it, so the probe confirms or refutes that.

Reading the result: (3) crashing for build_local but not for cpp_extension points at
build_local's flags; both crashing points at the machine (compiler / libstdc++ vs the
torch wheel); CPU passing while CUDA crashes points at the CUDA dispatch path; the
backtraces in (4) name the frame that faults.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Kept in the repository's evidence/ (the installed skill does not ship it); it probes the example.
EXAMPLE = HERE.parents[2] / "skills" / "cuda-kernels" / "examples" / "qwen3_8b"
SCRIPTS = EXAMPLE.parents[1] / "scripts"

PROBE_OPS_H = r"""
#pragma once
#include <ATen/ATen.h>
#include <stdexcept>
// mode 0: TORCH_CHECK fails (c10::Error thrown from libc10's torchCheckFail)
// mode 1: throw std::runtime_error from this library
// mode 2: no error (returns x + 1)
inline at::Tensor probe_impl(const at::Tensor& x, int64_t mode) {
  TORCH_CHECK(mode != 0, "probe: TORCH_CHECK failed as asked (x.sizes() = ", x.sizes(), ")");
  if (mode == 1) throw std::runtime_error("probe: std::runtime_error as asked");
  return x + 1;
}
"""

BUILD_LOCAL_BINDING = r"""
#include <torch/library.h>
#include "registration.h"
#include "probe_ops.h"
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("probe(Tensor x, int mode) -> Tensor");
  ops.impl("probe", c10::kCPU, &probe_impl);
  ops.impl("probe", c10::kCUDA, &probe_impl);
}
REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""

CPP_EXTENSION_BINDING = r"""
#include <torch/library.h>
#include "probe_ops.h"
TORCH_LIBRARY(throw_probe_cpp_ext, ops) {
  ops.def("probe(Tensor x, int mode) -> Tensor");
  ops.impl("probe", c10::kCPU, &probe_impl);
  ops.impl("probe", c10::kCUDA, &probe_impl);
}
"""

KERNEL_CU = r"""
// A kernel so build_local has a [kernel] section to compile, as in every real project.
#include <cuda_runtime.h>
__global__ void throw_probe_noop(int* p) { if (p) *p = 0; }
"""

BUILD_TOML = """\
[general]
name = "throw-probe"
backends = ["cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/probe_ops.h"]

[kernel.noop]
backend = "cuda"
depends = ["torch"]
src = ["kernel_src/noop.cu"]
"""


def sh(cmd: list[str] | str, timeout: float = 120, **kw) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, shell=isinstance(cmd, str), **kw)
        return p.returncode, (p.stdout + p.stderr).strip()
    except FileNotFoundError as exc:
        return 127, str(exc)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"") if isinstance(exc.stdout, bytes) else (exc.stdout or "").encode()
        return 124, f"timed out after {timeout} s\n" + out.decode(errors="replace")[-4000:]


def describe_rc(rc: int) -> str:
    if rc < 0:
        import signal

        try:
            return f"KILLED by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return "exit 0" if rc == 0 else f"exit {rc}"


def run_snippet(code: str, extra_path: list[str], timeout: float = 90) -> tuple[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*extra_path, os.environ.get("PYTHONPATH", "")]),
               PYTHONFAULTHANDLER="1")
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "TIMEOUT", ""
    out = (p.stdout + p.stderr).strip()
    return describe_rc(p.returncode), out


CALL_TEMPLATE = """
import sys, torch
{setup}
def attempt(name, fn):
    try:
        fn()
        print(name, "-> returned normally", flush=True)
    except RuntimeError as exc:
        print(name, "-> RuntimeError:", str(exc).splitlines()[0][:160], flush=True)
    except Exception as exc:
        print(name, "->", type(exc).__name__, str(exc).splitlines()[0][:160], flush=True)
attempt({name!r}, lambda: {call})
"""


def toolchain_report(package_path: Path | None) -> list[str]:
    lines = ["## 1. toolchain"]
    for cmd in (["c++", "--version"], ["g++", "--version"], ["gcc", "--version"], ["clang++", "--version"]):
        rc, out = sh(cmd, timeout=20)
        lines.append(f"$ {' '.join(cmd)}: " + (out.splitlines()[0] if rc == 0 and out else f"(not available: {rc})"))
    rc, out = sh(["nvcc", "--version"], timeout=20)
    lines.append("$ nvcc --version: " + (out.splitlines()[-1] if out else "(not available)"))
    for var in ("CXX", "CC", "CUDA_HOME", "LD_PRELOAD", "LD_LIBRARY_PATH"):
        lines.append(f"{var}={os.environ.get(var, '')}")
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(package_path) if package_path else ''!r})
        import torch
        try:
            import qwen3_8b_kernels
        except Exception as exc:
            print('import qwen3_8b_kernels failed:', exc)
        print('torch', torch.__version__, 'cxx11abi', torch._C._GLIBCXX_USE_CXX11_ABI)
        seen = []
        for line in open('/proc/self/maps'):
            path = line.split()[-1]
            if any(k in path for k in ('libstdc++', 'libgcc_s', 'libunwind', 'libc++', '_qwen3_8b_kernels')) and path not in seen:
                seen.append(path)
        print('mapped:'); [print('  ', p) for p in seen]
    """)
    status, out = run_snippet(code, [])
    lines.append(f"python process ({status}):")
    lines += ["  " + l for l in out.splitlines()]
    for lib in re.findall(r"(/\S*libstdc\+\+\S*)", out)[:1]:
        rc, strings = sh(f"strings {lib} | grep -o 'GLIBCXX_3\\.4\\.[0-9]*' | sort -V | tail -1", timeout=20)
        lines.append(f"newest GLIBCXX in {lib}: {strings or '(strings not available)'}")
    if package_path:
        ninja = shutil.which("ninja")
        build = package_path / ".build"
        if ninja and (build / "build.ninja").is_file():
            rc, out = sh([ninja, "-C", str(build), "-t", "commands"], timeout=20)
            for l in out.splitlines():
                if "torch_binding.cpp" in l and " -c " in l:
                    lines.append("binding compile line: " + l)
                if l.lstrip().startswith(("c++ ", "g++ ")) and " -shared" in l:
                    lines.append("link line: " + l)
        # The suspect (build_local commit "link against the libstdc++ the interpreter
        # loaded"): without a libstdc++.so development link, g++ -shared falls back to
        # libstdc++.a and copies stream/locale code into the extension, which then crashes
        # formatting the first TORCH_CHECK message (std::ostream << long).
        for cxx in ("c++", "g++"):
            rc, out = sh([cxx, "-print-file-name=libstdc++.so"], timeout=20)
            lines.append(f"$ {cxx} -print-file-name=libstdc++.so: {out or rc}"
                         + ("   <- NOT FOUND: -lstdc++ would link libstdc++.a" if out.strip() == "libstdc++.so" else ""))
        so = next(iter(sorted(package_path.glob("qwen3_8b_kernels/_qwen3_8b_kernels_*.so"))), None)
        if so:
            rc, out = sh(f"readelf -d {so} | grep NEEDED", timeout=20)
            lines.append(f"NEEDED of {so.name}: " + " ".join(re.findall(r"\[(.*?)\]", out)) if rc == 0 else
                         f"readelf not available ({rc})")
            rc, out = sh(f"nm -D --defined-only {so} | grep -c -E ' (_ZNSo|_ZNSt6locale|_ZNSt15basic_streambuf)'",
                         timeout=20)
            lines.append(f"libstdc++ stream/locale symbols defined inside {so.name}: {out or rc} (0 = none copied in)")
            rc, out = sh(["ldd", str(so)], timeout=20)
            lines.append(f"ldd {so.name}:")
            lines += ["  " + l.strip() for l in out.splitlines() if any(k in l for k in ("stdc++", "gcc_s", "c10", "torch"))]
    return lines


def package_report(package_path: Path) -> list[str]:
    lines = ["## 2. the real package (each call in its own process)"]
    setup = "import qwen3_8b_kernels as k\nx = torch.randn(4, 64, device='cuda', dtype=torch.bfloat16)"
    calls = {
        "rms_norm, weight of the wrong shape (the crash of run 1)": "k.ops.rms_norm(x, torch.randn(32, device='cuda', dtype=torch.bfloat16), 1e-6)",
        "rms_norm, float64 input (to_dtype's TORCH_CHECK)": "k.ops.rms_norm(x.double(), None, 1e-6)",
        "swiglu, shapes differ": "k.ops.swiglu(x, x[:2])",
        "rms_norm_tuned, bad threads (TORCH_CHECK inside the .cu launcher)": "k.ops.rms_norm_tuned(x, None, None, 1e-6, 33, 0, -1)",
        "torch's own dispatcher error (CPU tensor, op has no CPU kernel)": "k.ops.rms_norm(x.cpu(), None, 1e-6)",
        "torch's own TORCH_CHECK (no extension involved)": "torch.ones(2, device='cuda').view(3)",
    }
    # Independent processes: run them side by side (each pays a torch import).
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = {name: pool.submit(run_snippet, CALL_TEMPLATE.format(setup=setup, name=name, call=call),
                                     [str(package_path)]) for name, call in calls.items()}
    for name, future in futures.items():
        status, out = future.result()
        detail = [l for l in out.splitlines() if "->" in l or "Fatal" in l or "Segmentation" in l][:3]
        lines.append(f"- {name}: {status}; " + (" | ".join(detail) if detail else out[-300:].replace("\n", " | ")))
    return lines


def minimal_report(arch: str, jobs: int) -> list[str]:
    lines = ["## 3. minimal throwing op, built two ways from one source"]
    work = Path(tempfile.mkdtemp(prefix="throw_probe_"))
    proj = work / "proj"
    (proj / "torch-ext" / "throw_probe").mkdir(parents=True)
    (proj / "kernel_src").mkdir()
    (proj / "build.toml").write_text(BUILD_TOML)
    (proj / "kernel_src" / "noop.cu").write_text(KERNEL_CU)
    (proj / "torch-ext" / "probe_ops.h").write_text(PROBE_OPS_H)
    (proj / "torch-ext" / "torch_binding.cpp").write_text(BUILD_LOCAL_BINDING)
    (proj / "torch-ext" / "throw_probe" / "__init__.py").write_text("from ._ops import ops\n")
    cpp_dir = work / "cpp_ext"
    cpp_dir.mkdir()
    (cpp_dir / "probe_ops.h").write_text(PROBE_OPS_H)
    (cpp_dir / "probe.cpp").write_text(CPP_EXTENSION_BINDING)
    # Both builds at once: they are independent and the device time is scarce.
    t0 = time.time()
    bl = subprocess.Popen([sys.executable, str(SCRIPTS / "build_local.py"), str(proj), "--arch", arch, "--build-dir",
                           str(work / "bl_build"), "-v", "-j", str(jobs)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    # cpp_extension twice: with torch's own flags, and with -std=c++20 appended. build_local
    # picks C++20 whenever the string "-std=c++20" occurs in cpp_extension's source, which
    # torch 2.11 has only in a docstring example (its builds use -std=c++17): the third
    # build tells whether the language standard alone makes the difference.
    cx20_dir = work / "cpp_ext20"
    shutil.copytree(cpp_dir, cx20_dir)
    (cx20_dir / "probe.cpp").write_text(CPP_EXTENSION_BINDING.replace("throw_probe_cpp_ext", "throw_probe_cpp20"))

    def cx_code(name: str, src_dir: Path, flags: list[str]) -> str:
        return textwrap.dedent(f"""
            import torch.utils.cpp_extension as ce
            ce.load(name={name!r}, sources=[{str(src_dir / 'probe.cpp')!r}], extra_cflags={flags!r},
                    extra_include_paths=[{str(src_dir)!r}], build_directory={str(src_dir)!r},
                    is_python_module=False, verbose=True)
            print('cpp_extension build ok')
        """)

    cx = subprocess.Popen([sys.executable, "-c", cx_code("throw_probe_cpp_ext", cpp_dir, [])], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    cx20 = subprocess.Popen([sys.executable, "-c", cx_code("throw_probe_cpp20", cx20_dir, ["-std=c++20"])],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        bl_out, _ = bl.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        bl.kill()
        bl_out = "build_local timed out"
    try:
        cx_out, _ = cx.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        cx.kill()
        cx_out = "cpp_extension timed out"
    try:
        cx20_out, _ = cx20.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        cx20.kill()
        cx20_out = "cpp_extension (c++20) timed out"
    cx20_ok = cx20.returncode == 0 and "cpp_extension build ok" in cx20_out
    so20 = next(iter(cx20_dir.glob("throw_probe_cpp20*.so")), None)
    lines.append(f"builds took {time.time() - t0:.0f} s")
    bl_ok = bl.returncode == 0
    cx_ok = cx.returncode == 0 and "cpp_extension build ok" in cx_out
    for l in bl_out.splitlines():
        if "torch_binding.cpp" in l and " -c " in l:
            lines.append("build_local compile: " + l.split("] ", 1)[-1])
    for l in cx_out.splitlines():
        if "probe.cpp" in l and " -c " in l:
            lines.append("cpp_extension compile: " + l.split("] ", 1)[-1] if "] " in l else l)
    if not bl_ok:
        lines.append("build_local build FAILED:\n" + bl_out[-2000:])
    if not cx_ok:
        lines.append("cpp_extension build FAILED:\n" + cx_out[-2000:])
    so = next(iter(cpp_dir.glob("throw_probe_cpp_ext*.so")), None)
    setups = {}
    if bl_ok:
        setups["build_local"] = ("import throw_probe\nop = throw_probe.ops.probe", [str(work / "bl_build")])
    if cx_ok and so is not None:
        setups["cpp_extension"] = (f"torch.ops.load_library({str(so)!r})\nop = torch.ops.throw_probe_cpp_ext.probe", [])
    if cx20_ok and so20 is not None:
        setups["cpp_ext c++20"] = (f"torch.ops.load_library({str(so20)!r})\nop = torch.ops.throw_probe_cpp20.probe", [])
    elif not cx20_ok:
        lines.append("cpp_extension (c++20) build FAILED:\n" + cx20_out[-1500:])
    jobs = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        for build, (setup, path) in setups.items():
            for device in ("cpu", "cuda"):
                for mode, what in ((0, "TORCH_CHECK"), (1, "std::runtime_error"), (2, "no error")):
                    call = f"op(torch.ones(3, device={device!r}), {mode})"
                    jobs[(build, device, what)] = pool.submit(
                        run_snippet, CALL_TEMPLATE.format(setup=setup, name="call", call=call), path)
    for (build, device, what), future in jobs.items():
        status, out = future.result()
        detail = [l for l in out.splitlines() if "->" in l][:1]
        lines.append(f"- {build:<13} {device:<4} {what:<18}: {status}; {detail[0] if detail else out[-200:]}")
    shutil.rmtree(work, ignore_errors=True)
    return lines


def gdb_report(package_path: Path) -> list[str]:
    lines = ["## 4. the failing call under cuda-gdb"]
    gdb = shutil.which("cuda-gdb") or next(
        (str(p) for p in (Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "cuda-gdb",
                          Path("/usr/local/cuda/bin/cuda-gdb")) if p.is_file()), None)
    if gdb is None:
        return lines + ["cuda-gdb not found; skipped"]
    # SIGTRAP just before the call: the debugger stops there, then arms `catch throw`
    # (torch throws and catches internally while importing, which must not stop us).
    code = (f"import os, signal, sys, torch; sys.path.insert(0, {str(package_path)!r}); import qwen3_8b_kernels as k; "
            "x = torch.randn(4, 64, device='cuda', dtype=torch.bfloat16); w = torch.randn(32, device='cuda', "
            "dtype=torch.bfloat16); torch.cuda.synchronize(); os.kill(os.getpid(), signal.SIGTRAP); "
            "k.ops.rms_norm(x, w, 1e-6)")
    cmd = [gdb, "-batch", "-nx", "-ex", "set pagination off", "-ex", "set print thread-events off",
           "-ex", "set cuda break_on_launch none", "-ex", "run", "-ex", "catch throw", "-ex", "continue",
           "-ex", "echo \\n=== stopped at the throw ===\\n", "-ex", "bt 30", "-ex", "continue",
           "-ex", "echo \\n=== stopped again (crash?) ===\\n", "-ex", "bt 40", "-ex", "info registers rip rsp",
           "-ex", "x/6i $pc", "-ex", "info sharedlibrary", "--args", sys.executable, "-c", code]
    rc, out = sh(cmd, timeout=100)
    lines.append(f"$ cuda-gdb -batch ... ({describe_rc(rc) if rc != 124 else 'timed out'})")
    keep = []
    for l in out.splitlines():
        if l.startswith(("[New Thread", "[Thread", "[Detaching", "[Inferior")) or "libthread_db" in l:
            continue
        if "info sharedlibrary" in l or l.startswith(("0x", "From")):
            if not any(k in l for k in ("stdc++", "gcc_s", "c10", "torch", "qwen3", "From", "python")):
                continue
        keep.append(l)
    return lines + keep[-220:]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--package-path", type=Path, required=True, help="build directory holding qwen3_8b_kernels")
    p.add_argument("--out", type=Path, required=True, help="write the report here")
    p.add_argument("--arch", default="9.0")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--skip", default="", help="comma-separated sections to skip: minimal,gdb")
    args = p.parse_args()
    skip = set(args.skip.split(","))
    report = [f"# throw probe, {time.strftime('%Y-%m-%d %H:%M:%S')}"]
    sections = [lambda: toolchain_report(args.package_path), lambda: package_report(args.package_path)]
    if "minimal" not in skip:
        sections.append(lambda: minimal_report(args.arch, args.jobs))
    if "gdb" not in skip:
        sections.append(lambda: gdb_report(args.package_path))
    for section in sections:
        t0 = time.time()
        try:
            part = section()
        except Exception as exc:  # noqa: BLE001 - a broken section must not hide the others
            part = [f"section failed: {type(exc).__name__}: {exc}"]
        report += part + [f"({time.time() - t0:.0f} s)", ""]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(report) + "\n")
    print("\n".join(l for l in report if l.startswith(("#", "- ", "## "))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
