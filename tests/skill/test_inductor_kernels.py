"""scripts/inductor_kernels.py shows what torch.compile generated for an expression and the
launch configuration its autotuner kept: its parsing, its reading of Inductor's objects
(faked here, as torch 2.11-2.14 leave them after autotuning) and a real CPU compile."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import skilldocs

SCRIPT = skilldocs.SKILL / "scripts" / "inductor_kernels.py"


def _load():
    spec = importlib.util.spec_from_file_location("inductor_kernels", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["inductor_kernels"] = mod
    spec.loader.exec_module(mod)
    return mod


ik = _load()


def _run(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600, env=env)


def test_tensor_specs_default_to_bf16_and_accept_a_dtype() -> None:
    assert ik.parse_tensor("x=2x1024x2048") == ik.TensorSpec("x", (2, 1024, 2048), "bfloat16")
    assert ik.parse_tensor("w=2048:float32") == ik.TensorSpec("w", (2048,), "float32")


@pytest.mark.parametrize("text", ["x", "=4", "1x=4", "x=4:int8", "x=4xa", "x=0x4", "x=", "torch=4", "F=4"])
def test_bad_tensor_specs_are_usage_errors(text: str) -> None:
    with pytest.raises(ik.UsageError):
        ik.parse_tensor(text)


def test_imports_take_a_dotted_module_or_a_python_file() -> None:
    assert ik.parse_import("ref=pkg.reference") == ("ref", "pkg.reference")
    assert ik.parse_import("ref=some/dir/reference.py") == ("ref", "some/dir/reference.py")
    for bad in ("ref", "ref=some/dir", "1ref=pkg"):
        with pytest.raises(ik.UsageError):
            ik.parse_import(bad)


def test_the_peer_is_a_real_function_of_the_named_tensors() -> None:
    namespace: dict = {}
    exec(ik.peer_source("a * 2 + b", ["a", "b"]), namespace)
    assert namespace["peer"](3, 1) == 7


def test_static_sizes_and_program_count_come_from_the_source_and_config() -> None:
    src = "def k(in_ptr0, xnumel, r0_numel, XBLOCK):\n    xnumel = 512\n    r0_numel = 4096\n    xoffset = 0\n"
    numels = ik.numels_in(src)
    assert numels == {"xnumel": 512, "r0_numel": 4096}
    assert ik.programs_for(numels, {"XBLOCK": 1, "R0_BLOCK": 2048}) == 512
    assert ik.programs_for({"xnumel": 6291456}, {"XBLOCK": 512}) == 12288
    assert ik.programs_for({"xnumel": 100}, {"XBLOCK": 64}) == 2  # a partial program counts
    assert ik.programs_for({}, {"XBLOCK": 64}) is None


def _fake_tuner(name: str, src: str, kwargs: dict, warps: int, configs=None, compile_results=()) -> SimpleNamespace:
    fn = SimpleNamespace(__name__=name, src=src)
    cfg = SimpleNamespace(kwargs=kwargs, num_warps=warps, num_stages=1)
    return SimpleNamespace(fn=fn, launchers=[SimpleNamespace(config=cfg)], configs=configs,
                           compile_results=list(compile_results))


def test_triton_reports_read_the_kept_launcher_of_each_kernel() -> None:
    # After autotuning, Inductor sets configs = None and keeps one launcher: what ran.
    red = _fake_tuner("triton_red_fused_add_0", "    xnumel = 512\n    r0_numel = 4096\n",
                      {"XBLOCK": 1, "R0_BLOCK": 2048}, 16)
    poi = _fake_tuner("triton_poi_fused_mul_silu_1", "    xnumel = 6291456\n", {"XBLOCK": 512}, 8,
                      configs=[object(), object()])
    module = SimpleNamespace(triton_red_fused_add_0=red, triton_poi_fused_mul_silu_1=poi, call=len, alias=red)
    reports = ik.triton_reports([module])
    assert [r.name for r in reports] == ["triton_poi_fused_mul_silu_1", "triton_red_fused_add_0"]  # one per kernel
    poi_rep, red_rep = reports
    assert (red_rep.programs, red_rep.threads_per_program, red_rep.candidates) == (512, 512, None)
    assert red_rep.config == {"XBLOCK": 1, "R0_BLOCK": 2048}
    assert (poi_rep.programs, poi_rep.threads_per_program, poi_rep.candidates) == (12288, 256, 2)
    text = ik.format_report(red_rep, with_source=False)
    assert "XBLOCK=1, R0_BLOCK=2048, num_warps=16" in text and "512 programs x 512 threads" in text
    assert "xnumel" not in ik.format_report(red_rep, with_source=False).split("sizes:")[0]


def test_kernels_are_found_in_wrapper_code_when_no_autotuner_is_reachable() -> None:
    wrapper = (
        "cpp_fused_mul_silu_0 = async_compile.cpp_pybinding(['const bfloat16*'], r'''\n"
        '#include <x.h>\nextern "C" void kernel(const bfloat16* in_ptr0) {}\n'
        "''')\n"
        "triton_poi_fused_1 = async_compile.triton('triton_poi_fused_1', '''\n"
        "@triton.jit\ndef triton_poi_fused_1(in_ptr0, xnumel, XBLOCK: tl.constexpr):\n    xnumel = 12288\n"
        "''', device_str='cuda')\n"
    )
    (cpp,) = ik.source_reports([wrapper], "cpp")
    assert cpp.name == "cpp_fused_mul_silu_0" and cpp.source.startswith("#include <x.h>")
    (tri,) = ik.source_reports([wrapper], "triton")
    assert tri.name == "triton_poi_fused_1" and tri.numels == {"xnumel": 12288} and tri.config == {}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--expr", "x +", "--tensor", "x=4"], "not a Python expression"),
        (["--expr", "x", "--tensor", "x=4xq"], "shape must be sizes"),
        (["--expr", "x"], "at least one --tensor"),
        (["--expr", "x", "--tensor", "x=4", "--tensor", "x=8"], "must differ"),
        (["--expr", "x", "--tensor", "x=4", "--import", "x=m.n"], "must differ"),
        (["--expr", "x", "--tensor", "x=4", "--calls", "-1"], "--calls must be >= 0"),
        (["--expr", "1", "--tensor", "if=4"], "'if' is a Python keyword"),
        (["--expr", "x", "--tensor", "x=4", "--import", "F=math"], "the name 'F' is taken"),
        (["--expr", "x", "--tensor", "peer=4"], "the name 'peer' is taken"),
        (["--expr", "F.silu(g) * v", "--tensor", "g=4"], "--expr uses v, which is not defined"),
        (["--expr", "g.sigmoidd()", "--tensor", "g=4"], "fails when run eagerly: AttributeError"),
        (["--expr", "g @ h", "--tensor", "g=4x3", "--tensor", "h=4x3"], "fails when run eagerly: RuntimeError"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    proc = _run(*args)
    assert proc.returncode == 2
    assert message in proc.stderr.strip().splitlines()[-1]


def test_a_cpu_compile_names_its_kernel_and_writes_json(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    ref = tmp_path / "myref.py"
    ref.write_text("import torch.nn.functional as F\n\ndef swiglu(g, u):\n    return F.silu(g) * u\n")
    out = tmp_path / "k.json"
    proc = _run("--device", "cpu", "--import", f"ref={ref}", "--expr", "ref.swiglu(g, u)",
                "--tensor", "g=4x64", "--tensor", "u=4x64:bfloat16", "--source", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "on cpu: ref.swiglu(g, u)" in proc.stdout
    data = json.loads(out.read_text())
    (kernel,) = data["kernels"]
    assert kernel["kind"] == "cpp" and "silu" in kernel["name"] and "kernel(" in kernel["source"]
    assert "    " + kernel["source"].splitlines()[0] in proc.stdout.splitlines()  # --source: under its name


def test_a_missing_import_file_fails_with_exit_1() -> None:
    pytest.importorskip("torch")
    proc = _run("--device", "cpu", "--import", "ref=/no/such/reference.py", "--expr", "x", "--tensor", "x=4")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == "error: --import ref=/no/such/reference.py: no such file"


def test_an_import_file_that_needs_its_own_module_entry_loads(tmp_path: Path) -> None:
    # A dataclass looks its module up in sys.modules while the file is still running, as
    # any module imported the usual way may; the file is registered before it runs.
    pytest.importorskip("torch")
    ref = tmp_path / "refdc.py"
    ref.write_text("from __future__ import annotations\nimport dataclasses\nfrom typing import ClassVar\n\n"
                   "@dataclasses.dataclass\nclass Cfg:\n    scale: ClassVar[float] = 2.0\n\n"
                   "def f(x):\n    return x * Cfg.scale\n")
    proc = _run("--device", "cpu", "--import", f"ref={ref}", "--expr", "ref.f(x)  # a comment", "--tensor", "x=4x8")
    assert proc.returncode == 0, proc.stderr
    assert "on cpu: ref.f(x)  # a comment" in proc.stdout


def test_an_import_that_raises_is_reported_in_one_line_naming_it(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    ref = tmp_path / "broken.py"
    ref.write_text("open('/no/such/data.bin')\n")
    proc = _run("--device", "cpu", "--import", f"ref={ref}", "--expr", "x", "--tensor", "x=4")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: --import ref={ref}: FileNotFoundError: [Errno 2] No such file or directory: '/no/such/data.bin'")
    assert "Traceback" not in proc.stderr
    assert "_inductor_kernels_ref" not in proc.stdout


def test_an_unwritable_json_path_fails_with_one_line(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "missing-dir" / "k.json"
    proc = _run("--device", "cpu", "--expr", "x * 2", "--tensor", "x=4", "--json", str(out))
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == f"error: cannot write --json {out}: No such file or directory"
    assert "Traceback" not in proc.stderr


def test_a_module_whose_own_import_fails_gets_no_pythonpath_hint(tmp_path: Path) -> None:
    # The module was found (it is on PYTHONPATH); what is missing is a dependency of it.
    pytest.importorskip("torch")
    (tmp_path / "myref_dep.py").write_text("import not_installed_anywhere_xyz\n")
    proc = _run("--device", "cpu", "--import", "ref=myref_dep", "--expr", "x", "--tensor", "x=4",
                env_extra={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert "No module named 'not_installed_anywhere_xyz'" in last and "PYTHONPATH" not in last
    missing = _run("--device", "cpu", "--import", "ref=no_such_module_xyz", "--expr", "x", "--tensor", "x=4")
    assert "(is its directory on PYTHONPATH?)" in missing.stderr.strip().splitlines()[-1]


def test_names_an_expression_binds_itself_are_not_undefined() -> None:
    assert ik.undefined_names("sum(t * s for t in [g]) + (lambda q: q)(g) + torch.abs(g)", ["g", "s"]) == []
    assert ik.undefined_names("F.gelu(g) + h + math.pi", ["g"]) == ["h", "math"]
    # Parsed as the peer function wraps it: leading spaces and line breaks are fine.
    assert ik.undefined_names(" g * 2", ["g"]) == [] and ik.undefined_names("g +\ng", ["g"]) == []
