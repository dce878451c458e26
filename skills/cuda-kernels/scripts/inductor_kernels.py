#!/usr/bin/env python3
"""Show the kernels torch.compile generates for a PyTorch expression, and the launch
configuration its autotuner picked for each: the first thing to read when compile beats
your kernel on a shape.

A Triton kernel from Inductor is a row of blocks like yours: `XBLOCK` rows (or elements)
per program, `R0_BLOCK` reduction elements per row, `num_warps` x 32 threads. Those three,
the program count and the source (cache eviction hints, loop or persistent reduction, where
the stores sit relative to the reduction) are what differ when it is faster.

    python scripts/inductor_kernels.py --expr "F.silu(g) * u" --tensor g=512x12288 --tensor u=512x12288
    python scripts/inductor_kernels.py --tensor x=2x1024x2048 --tensor w=2048 \\
        --expr "F.rms_norm(x, (x.shape[-1],), w, 1e-6)" --source
    python scripts/inductor_kernels.py ... --json kernels.json   # machine-readable as well
    ncu --nvtx --nvtx-include "inductor_kernels.calls/" python scripts/inductor_kernels.py ... --calls 1

`--expr` is one Python expression over the named tensors, `torch` and `F`
(torch.nn.functional); a tuple returns several outputs. `--import ref=my_pkg.reference`
(or a .py file's path) makes a module of yours available under a name, so the peer is your
own reference code:

    python scripts/inductor_kernels.py --import ref=examples/ltx_video/torch-ext/ltx_video_kernels/reference.py \\
        --tensor x=2x1024x2048 --tensor r=2x1024x2048 \\
        --expr "ref.add_rms_norm_modulate(x, r, None, None, None, None, 1e-6)"

Tensors are random normal (seeded, never zeros), contiguous, bf16 unless `NAME=SHAPE:DTYPE`
says otherwise (`float16`, `float32`, ...). Shapes are compiled static (dynamo reset,
`dynamic=False`), as a per-shape benchmark peer is. Without CUDA it compiles for the CPU
(C++ kernels: source only, no launch configurations), which is what the CPU test does.
Exit codes: 0 ok, 1 compile or run failure, 2 usage error.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import keyword
import math
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

DTYPES = ("bfloat16", "float16", "float32", "float64")


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str = "bfloat16"


@dataclass
class KernelReport:
    name: str
    kind: str  # "triton" or "cpp"
    numels: dict[str, int] = field(default_factory=dict)  # xnumel, r0_numel, ... from the source
    config: dict[str, int] = field(default_factory=dict)  # XBLOCK, R0_BLOCK, ... the autotuner kept
    num_warps: int | None = None
    num_stages: int | None = None
    programs: int | None = None  # grid size along x: ceil(xnumel / XBLOCK)
    threads_per_program: int | None = None
    candidates: int | None = None  # configurations the autotuner compiled for this kernel
    source: str = ""


class UsageError(ValueError):
    """Bad command line: exit code 2."""


def parse_tensor(text: str) -> TensorSpec:
    """'x=2x1024x2048' or 'w=2048:float32' -> TensorSpec."""
    name, sep, rest = text.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError(f"--tensor {text!r}: expected NAME=SHAPE[:DTYPE], e.g. x=2x1024x2048:bfloat16")
    _check_free_name(name, f"--tensor {text!r}")
    shape_text, _, dtype = rest.partition(":")
    dtype = dtype or "bfloat16"
    if dtype not in DTYPES:
        raise UsageError(f"--tensor {text!r}: dtype must be one of {', '.join(DTYPES)}")
    try:
        shape = tuple(int(d) for d in shape_text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--tensor {text!r}: shape must be sizes joined by 'x', e.g. 512x4096") from None
    if not shape or any(d < 1 for d in shape):
        raise UsageError(f"--tensor {text!r}: every size must be a positive integer")
    return TensorSpec(name, shape, dtype)


RESERVED = ("torch", "F", "peer")  # what the expression's namespace already holds


def _check_free_name(name: str, what: str) -> None:
    if keyword.iskeyword(name):
        raise UsageError(f"{what}: {name!r} is a Python keyword; pick another name")
    if name in RESERVED:
        raise UsageError(f"{what}: the name {name!r} is taken ({', '.join(RESERVED)} are predefined)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


class ExpressionError(Exception):
    """--expr names something undefined or fails when run eagerly: the user's mistake (exit 2)."""


def undefined_names(expr: str, known: Sequence[str]) -> list[str]:
    """Names the expression reads that are neither given (tensors, --import), torch, F,
    nor builtins, nor bound inside it (a lambda's or comprehension's own variables)."""
    tree = ast.parse("(" + expr + "\n)", mode="eval")  # as peer_source wraps it: leading spaces, line breaks
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.Lambda) for a in ast.walk(n.args) if isinstance(a, ast.arg)}
    allowed = set(known) | {"torch", "F"} | set(dir(builtins)) | bound
    read = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return sorted({name for name in read if name not in allowed})


def peer_source(expr: str, names: Sequence[str]) -> str:
    """A real function (dynamo traces bytecode; it cannot trace eval()). The closing
    parenthesis has a line of its own so that a trailing comment in `expr` stays harmless."""
    return f"def peer({', '.join(names)}):\n    return ({expr}\n    )\n"


_NUMEL = re.compile(r"^\s*((?:x|y|z|r0_|r1_|r)numel)\s*=\s*(\d+)\s*$", re.MULTILINE)


def numels_in(source: str) -> dict[str, int]:
    """The static sizes Inductor writes into a kernel (`xnumel = 512`, `r0_numel = 4096`)."""
    return {m.group(1): int(m.group(2)) for m in _NUMEL.finditer(source)}


def programs_for(numels: dict[str, int], config: dict[str, int]) -> int | None:
    xnumel, xblock = numels.get("xnumel"), config.get("XBLOCK")
    if xnumel is None or not xblock:
        return None
    return math.ceil(xnumel / xblock)


def _autotuners(modules: Sequence[Any]) -> list[Any]:
    """CachingAutotuner objects (one per Triton kernel) held by Inductor's output modules."""
    found: dict[int, Any] = {}
    for mod in modules:
        for value in vars(mod).values():
            if hasattr(value, "launchers") and hasattr(value, "fn") and hasattr(value, "configs"):
                found[id(value)] = value
    return list(found.values())


def triton_reports(modules: Sequence[Any]) -> list[KernelReport]:
    reports = []
    for tuner in _autotuners(modules):
        fn = tuner.fn
        name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", "?")
        source = getattr(fn, "src", "") or ""
        numels = numels_in(source)
        # The autotuner drops its config list after compiling them (configs = None) and its
        # compile results after choosing (torch 2.11-2.14); count whichever is still there.
        pool = getattr(tuner, "configs", None) or getattr(tuner, "compile_results", None) or []
        rep = KernelReport(name=name, kind="triton", numels=numels, source=source, candidates=len(pool) or None)
        if tuner.launchers:
            cfg = tuner.launchers[0].config
            rep.config = {k: int(v) for k, v in cfg.kwargs.items() if isinstance(v, int)}
            rep.num_warps = int(cfg.num_warps)
            rep.num_stages = int(cfg.num_stages)
            rep.threads_per_program = 32 * rep.num_warps
            rep.programs = programs_for(numels, rep.config)
        reports.append(rep)
    return sorted(reports, key=lambda r: r.name)


_KERNEL_DEF = {
    "cpp": re.compile(r"^(\w+) = async_compile\.cpp\w*\(.*?r'''\n?(.*?)'''", re.MULTILINE | re.DOTALL),
    "triton": re.compile(r"^(\w+) = async_compile\.triton\(.*?'''\n?(.*?)'''", re.MULTILINE | re.DOTALL),
}


def source_reports(codes: Sequence[str], kind: str) -> list[KernelReport]:
    """Kernels as the wrapper module defines them (name and source; no launch configuration)."""
    return [KernelReport(name=m.group(1), kind=kind, numels=numels_in(m.group(2)), source=m.group(2))
            for code in codes for m in _KERNEL_DEF[kind].finditer(code)]


def parse_import(text: str) -> tuple[str, str]:
    """'ref=pkg.reference' or 'ref=path/to/reference.py' -> ('ref', module or path)."""
    name, sep, module = text.partition("=")
    dotted = all(p.isidentifier() for p in module.split("."))
    if not sep or not name.isidentifier() or not (dotted or module.endswith(".py")):
        raise UsageError(f"--import {text!r}: expected NAME=MODULE or NAME=FILE.py, e.g. ref=my_kernels.reference")
    _check_free_name(name, f"--import {text!r}")
    return name, module


class MissingFile(ImportError):
    """An --import FILE.py that does not exist."""


def load_module(name: str, module: str) -> Any:
    """A dotted module from sys.path, or a .py file by path (no package __init__ runs, so a
    reference module loads without the compiled extension next to it)."""
    import importlib
    import importlib.util

    if not module.endswith(".py"):
        return importlib.import_module(module)
    if not Path(module).is_file():
        raise MissingFile(module)
    spec = importlib.util.spec_from_file_location(f"_inductor_kernels_{name}", module)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {module}")
    mod = importlib.util.module_from_spec(spec)
    # Registered before it runs, as `import` does: dataclasses and dynamo look the module up
    # by name, the first while the file is still executing.
    sys.modules[spec.name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return mod


def compile_and_report(specs: Sequence[TensorSpec], expr: str, device: str, seed: int = 0,
                       modules: dict[str, Any] | None = None, calls: int = 0) -> tuple[list[KernelReport], list[str]]:
    """`modules`: the --import names, already loaded (load_module), put in the expression's namespace."""
    import torch
    import torch.nn.functional as F  # noqa: N812 - the name users write in --expr
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.utils import run_and_get_code

    namespace: dict[str, Any] = {"torch": torch, "F": F}
    namespace.update(modules or {})
    exec(peer_source(expr, [s.name for s in specs]), namespace)  # noqa: S102 - the user's own expression
    gen = torch.Generator(device="cpu").manual_seed(seed)
    args = [torch.randn(s.shape, generator=gen, dtype=torch.float32).to(device=device, dtype=getattr(torch, s.dtype))
            for s in specs]
    before = {id(m) for m in PyCodeCache.modules}
    try:
        # Once eagerly first: a typo (`g.sigmoidd()`) or a shape mismatch then reads as Python
        # reports it, not as whatever dynamo makes of it while tracing.
        namespace["peer"](*args)
    except (NameError, AttributeError, TypeError, IndexError, RuntimeError) as exc:
        # Of the RuntimeErrors only shape mistakes are the user's; anything else (out of memory,
        # a dtype eager has no kernel for but Inductor can generate) is left for the compile.
        shape = re.search(r"\b(size|shape|dimension)s?\b|must match|cannot be multiplied|broadcast", str(exc))
        if not isinstance(exc, RuntimeError) or (shape and not isinstance(exc, torch.OutOfMemoryError)):
            raise ExpressionError(f"--expr {expr!r} fails when run eagerly: {type(exc).__name__}: {_first_line(exc)}") \
                from None
    torch._dynamo.reset()
    compiled = torch.compile(namespace["peer"], fullgraph=True, dynamic=False)
    _, codes = run_and_get_code(compiled, *args)
    if calls:
        # Inside one NVTX range, so a profiler can take these and skip the autotuner's launches.
        cuda = device == "cuda"
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push("inductor_kernels.calls")
        for _ in range(calls):
            compiled(*args)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
    if device == "cuda":
        torch.cuda.synchronize()
        new = [m for m in PyCodeCache.modules if id(m) not in before]
        # Sources from the wrapper code when this torch keeps its modules elsewhere (no configs then).
        return triton_reports(new) or source_reports(codes, "triton"), list(codes)
    return source_reports(codes, "cpp"), list(codes)


def format_report(rep: KernelReport, with_source: bool) -> str:
    lines = [f"{rep.name} ({rep.kind})"]
    if rep.numels:
        lines.append("  sizes:   " + ", ".join(f"{k}={v}" for k, v in rep.numels.items()))
    if rep.config or rep.num_warps is not None:
        blocks = ", ".join(f"{k}={v}" for k, v in rep.config.items())
        kept = f" (kept 1 of {rep.candidates} candidates)" if rep.candidates else ""
        lines.append(f"  config:  {blocks}, num_warps={rep.num_warps}, num_stages={rep.num_stages}{kept}")
    if rep.programs is not None:
        lines.append(f"  launch:  {rep.programs} programs x {rep.threads_per_program} threads")
    if with_source and rep.source:
        lines.append("  source:")
        lines.extend("    " + line for line in rep.source.rstrip().splitlines())
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="inductor_kernels.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("--expr", required=True, help="Python expression over the tensors, torch and F")
    p.add_argument("--tensor", action="append", default=[], metavar="NAME=SHAPE[:DTYPE]",
                   help="an input tensor, e.g. x=2x1024x2048 (bf16) or w=2048:float32; repeat per input")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="NAME=MODULE",
                   help="import MODULE as NAME for --expr (your reference code); repeatable")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="auto: cuda when available (default)")
    p.add_argument("--source", action="store_true", help="print each kernel's source under its configuration")
    p.add_argument("--json", metavar="PATH", help="also write the reports (with sources) as JSON")
    p.add_argument("--calls", type=int, default=0, metavar="N",
                   help="call the compiled peer N more times after compiling (launches for ncu / nsys to profile)")
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        specs = [parse_tensor(t) for t in args.tensor]
        if not specs:
            raise UsageError("give at least one --tensor NAME=SHAPE")
        imports = [parse_import(t) for t in args.imports]
        tensor_names = [s.name for s in specs]
        names = tensor_names + [name for name, _ in imports]
        if len(set(names)) != len(names):
            raise UsageError(f"--tensor and --import names must differ, got {', '.join(names)}")
        compile(peer_source(args.expr, tensor_names), "<expr>", "exec")
        unknown = undefined_names(args.expr, names)
        if unknown:
            raise UsageError(f"--expr uses {', '.join(unknown)}, which is not defined: it can use the --tensor and "
                             f"--import names ({', '.join(names)}), torch and F")
        if args.calls < 0:
            raise UsageError(f"--calls must be >= 0, got {args.calls}")
    except UsageError as exc:
        parser.error(str(exc))
    except SyntaxError as exc:
        parser.error(f"--expr is not a Python expression: {exc.msg}")
    try:
        import torch
    except ImportError:
        print("error: torch is not installed (pip install torch)", file=sys.stderr)
        return 1
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no CUDA device; use --device cpu", file=sys.stderr)
        return 1
    modules: dict[str, Any] = {}
    for name, module in imports:
        try:
            modules[name] = load_module(name, module)
        except MissingFile:
            print(f"error: --import {name}={module}: no such file", file=sys.stderr)
            return 1
        except Exception as exc:  # noqa: BLE001 - the user's module failed to import: say which, one line
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            # The hint only when the module itself was not found, not a module it imports.
            missing = getattr(exc, "name", None)
            hint = (" (is its directory on PYTHONPATH?)"
                    if isinstance(exc, ModuleNotFoundError) and not module.endswith(".py")
                    and missing is not None and module.split(".")[0] == missing.split(".")[0] else "")
            print(f"error: --import {name}={module}: {type(exc).__name__}: {first}{hint}", file=sys.stderr)
            return 1
    try:
        reports, codes = compile_and_report(specs, args.expr, device, args.seed, modules, args.calls)
    except ExpressionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - one line, whatever dynamo or Inductor raised
        import traceback

        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        at = f" (at {Path(where.filename).name}:{where.lineno})" if where else ""
        print(f"error: torch.compile of {args.expr!r} failed: {type(exc).__name__}: {first}{at}", file=sys.stderr)
        return 1
    header = ", ".join(f"{s.name}={'x'.join(map(str, s.shape))}:{s.dtype}" for s in specs)
    print(f"torch {torch.__version__} on {device}: {args.expr}   [{header}]")
    if not reports:
        print("no kernels generated (the expression compiled to library calls or views only)")
    for rep in reports:
        print(format_report(rep, args.source))
    if args.json:
        payload = {"expr": args.expr, "device": device, "torch": torch.__version__,
                   "tensors": [asdict(s) for s in specs], "kernels": [asdict(r) for r in reports],
                   "wrapper_code": codes}
        try:
            Path(args.json).write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"error: cannot write --json {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
