#!/usr/bin/env python3
"""Build CUDA sources for the CPU emulator (assets/emulator/cuda_emu.h) with g++, and run them.

    python emulate_kernel.py SOURCES... -o OUT [--shared] [-I DIR] [-D NAME[=VALUE]] [--cxxflags FLAGS] [--run [ARGS...]]

SOURCES: a project's kernel_src/*.cu plus a harness with main() (an executable; --run runs
it with ARGS) or with extern "C" entry points (--shared: a library for ctypes). The two
constructs g++ cannot parse (`<<<...>>>`, `extern __shared__ T x[];`) are rewritten line for
line in a scratch copy, so diagnostics keep the original files and lines; the rewrite, the
CUDA_EMU_SCHEDULE orders (run forward and reverse to expose a missing barrier) and where the
CUDA headers are found: references/cpu-emulator.md. Standard library only.
Exit status: 0 built (and ran) fine, 1 compile/run failure, 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent
EMU_HEADER = SCRIPTS_DIR.parent / "assets" / "emulator" / "cuda_emu.h"
SOURCE_SUFFIXES = {".cu", ".cuh", ".h", ".hpp", ".hh", ".cpp", ".cc", ".inl"}

CHEVRON_RE = re.compile(r"<<<(.*?)>>>", re.DOTALL)
EXTERN_SHARED_RE = re.compile(
    r"extern\s+__shared__\s+((?:(?:__align__|alignas)\s*\(\s*\d+\s*\)\s*)*)"
    r"([A-Za-z_][\w:<>, ]*?)\s+([A-Za-z_]\w*)\s*\[\s*\]\s*;"
)


def rewrite(text: str) -> str:
    """The CUDA-only syntax of `text` as C++ that cuda_emu.h understands; newlines kept."""
    text = CHEVRON_RE.sub(lambda m: f" | ::emu::chevron({m.group(1)}) | ::emu::call", text)
    return EXTERN_SHARED_RE.sub(
        lambda m: f"{m.group(2)}* {m.group(3)} = ::emu::dynamic_smem<{m.group(2)}>();", text
    )


def cuda_include() -> Path | None:
    """A directory holding cuda_runtime.h, cuda_fp16.h and cuda_bf16.h, or None."""
    candidates: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "include")
    nvcc = shutil.which("nvcc")
    if nvcc:  # a wrapper script on PATH resolves elsewhere; the fallbacks below cover it
        candidates.append(Path(nvcc).resolve().parent.parent / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    for entry in sys.path:
        base = Path(entry) / "nvidia"
        candidates += sorted(base.glob("cu*/include")) + [base / "cuda_runtime" / "include"]
    for c in candidates:
        if all((c / h).is_file() for h in ("cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h")):
            return c
    return None


def stage(sources: list[Path], scratch: Path) -> list[Path]:
    """Copy each source's directory (rewritten) under scratch, keeping the folders' relative
    layout (so `#include "../kernel_src/x.cuh"` finds the rewritten copy); return the staged
    sources."""
    folders = list(dict.fromkeys(s.parent for s in sources))
    root = Path(os.path.commonpath([str(f) for f in folders]))
    for folder in folders:
        dest = scratch / folder.relative_to(root)
        dest.mkdir(parents=True, exist_ok=True)
        for f in folder.iterdir():
            if f.is_file() and f.suffix in SOURCE_SUFFIXES:
                body = rewrite(f.read_text(encoding="utf-8", errors="surrogateescape"))
                # #line keeps diagnostics and std::source_location on the original file.
                line_tag = '#line 1 "' + str(f).replace("\\", "\\\\").replace('"', '\\"') + '"\n'
                (dest / f.name).write_text(line_tag + body, encoding="utf-8", errors="surrogateescape")
    return [scratch / s.parent.relative_to(root) / s.name for s in sources]


def compiler() -> str | None:
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")


def build(
    sources: list[Path],
    out: Path,
    *,
    shared: bool = False,
    includes: list[Path] | None = None,
    defines: list[str] | None = None,
    opt: str = "-O1",
    extra_flags: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Compile and link `sources` against the emulator into `out`. Raises RuntimeError when
    no compiler or no CUDA headers exist; returns the compiler's CompletedProcess otherwise."""
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler: install g++ or set CXX")
    cuda_inc = cuda_include()
    if cuda_inc is None:
        raise RuntimeError("CUDA headers (cuda_runtime.h, cuda_fp16.h, cuda_bf16.h) not found: set CUDA_HOME")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cuda-emu-") as tmp:
        staged = stage([s.resolve() for s in sources], Path(tmp))
        cmd = [cxx, "-std=c++20", opt, "-g", "-fPIC", "-pthread", "-w", "-x", "c++", "-include", str(EMU_HEADER)]
        # The staged copies come first; the originals' folders resolve everything else.
        for d in dict.fromkeys([s.parent for s in staged] + [s.resolve().parent for s in sources]):
            cmd.append(f"-I{d}")
        cmd += [f"-I{i}" for i in includes or []] + [f"-I{cuda_inc}"]
        cmd += [f"-D{d}" for d in defines or []] + list(extra_flags or [])
        cmd += [str(s) for s in staged]
        # -Bsymbolic: the library's runtime API (cudaGetLastError, ...) must win over a real
        # libcudart already in the process (torch loads one) when ctypes loads it.
        cmd += ["-x", "none", "-o", str(out)] + (["-shared", "-Wl,-Bsymbolic"] if shared else [])
        return subprocess.run(cmd, check=False, capture_output=True, text=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build CUDA sources against the CPU emulator (cuda_emu.h) with g++, optionally run them.",
        epilog="Example: python emulate_kernel.py kernel_src/*.cu tests/emu_main.cpp -o /tmp/emu --run",
    )
    parser.add_argument("sources", nargs="+", type=Path, help=".cu/.cpp files to compile")
    parser.add_argument("-o", "--out", type=Path, required=True, help="the executable or shared library to write")
    parser.add_argument("--shared", action="store_true", help="build a shared library (ctypes) instead of an executable")
    parser.add_argument("-I", dest="includes", action="append", type=Path, default=[], help="extra include directory")
    parser.add_argument("-D", dest="defines", action="append", default=[], help="preprocessor definition")
    parser.add_argument("-O", dest="opt", default="1", help="optimization level (default 1)")
    parser.add_argument("--cxxflags", default="",
                        help="extra g++ flags, e.g. '-fsanitize=alignment,undefined' (misaligned 16-byte packs)")
    parser.add_argument("--run", nargs=argparse.REMAINDER, help="run the executable with these arguments")
    args = parser.parse_args(argv)
    missing = [str(s) for s in args.sources if not s.is_file()]
    if missing:
        print(f"emulate_kernel: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.run is not None and args.shared:
        print("emulate_kernel: --run needs an executable, not --shared", file=sys.stderr)
        return 2
    try:
        proc = build(args.sources, args.out, shared=args.shared, includes=args.includes, defines=args.defines,
                     opt=f"-O{args.opt}", extra_flags=shlex.split(args.cxxflags))
    except RuntimeError as e:
        print(f"emulate_kernel: {e}", file=sys.stderr)
        return 1
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        print(f"emulate_kernel: compiling failed (exit {proc.returncode})", file=sys.stderr)
        return 1
    if args.run is None:
        print(args.out)
        return 0
    return subprocess.run([str(args.out.resolve()), *args.run], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
