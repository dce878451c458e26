""".ci/gpu, the one command that runs every GPU test on a GPU machine.

CI has no GPU, so the script is driven here with a stand-in interpreter (PYTHON=<shim>)
that reports a CUDA device, records every call (arguments and the variables the steps
hand over) and fails the calls a test asks it to. What is checked is the plumbing: every
example is built for the GPU's arch into the folder its tests read, each pytest step runs
what it should with the right environment, and failures reach the exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / ".ci" / "gpu"
EXAMPLES = sorted(p.name for p in (REPO / "skills" / "cuda-kernels" / "examples").iterdir() if (p / "build.toml").is_file())

# Appends one JSON line per call; "-c" (the CUDA probe) prints an arch; a call whose
# arguments contain $SHIM_FAIL exits 1.
SHIM = r"""#!/usr/bin/env bash
args=$(printf '%s\n' "$@")
python3 - "$SHIM_LOG" "$@" <<'EOF'
import json, os, sys
entry = {"args": sys.argv[2:], "env": {k: v for k, v in os.environ.items() if k.endswith("_KERNELS_PATH") or k in
         ("MAX_JOBS", "KERNEL_SKILLS_TEST_ARCHS", "KERNEL_SKILLS_BUILD_ROOT", "KERNEL_SKILLS_GPU_OUT")}}
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(entry) + "\n")
EOF
if [ "$1" = "-c" ]; then
  case "$2" in *get_device_capability*) echo "9.0";; *) echo "python 3.12 torch stand-in";; esac
  exit 0
fi
# pytest's own last line, warnings count and rule included (the summary must read it).
if [ -n "${SHIM_FAIL:-}" ] && [[ "$args" == *"$SHIM_FAIL"* ]]; then echo "==== 1 failed, 2 passed, 3 warnings in 0.01s ===="; exit 1; fi
echo "========= 3 passed, 8 skipped, 29 deselected, 15 warnings in 0.01s =========="
"""


def run(tmp_path: Path, fail: str = "") -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    shim = tmp_path / "python"
    shim.write_text(SHIM)
    shim.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("KERNEL_SKILLS_BUILD_ROOT", "BUDGET")}
    env.update(PYTHON=str(shim), SHIM_LOG=str(log), SHIM_FAIL=fail, MAX_JOBS="6")
    result = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], capture_output=True, text=True,
                            env=env, timeout=120)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return result, calls


def pytest_calls(calls: list[dict]) -> list[dict]:
    return [c for c in calls if c["args"][:2] == ["-m", "pytest"]]


def test_builds_every_example_for_the_gpu_arch_into_the_folder_its_tests_read(tmp_path: Path) -> None:
    result, calls = run(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    root = tmp_path / "out" / "build"
    builds = [c for c in calls if c["args"] and c["args"][0].endswith("build_local.py")]
    assert sorted(Path(c["args"][1]).name for c in builds) == EXAMPLES
    for call in builds:
        name = Path(call["args"][1]).name
        assert call["args"][2:] == ["--arch", "9.0", "--build-dir", str(root / name), "--check"]
    own = {Path(c["args"][-1]).parent.name: c for c in pytest_calls(calls) if c["args"][-1].endswith("/tests")}
    assert sorted(own) == EXAMPLES
    for name, call in own.items():
        assert call["env"][name.upper() + "_KERNELS_PATH"] == str(root / name)


def test_runs_the_gpu_marked_tests_of_every_suite_and_shares_the_cores(tmp_path: Path) -> None:
    result, calls = run(tmp_path)
    assert result.returncode == 0
    steps = pytest_calls(calls)
    assert all("-m" in c["args"][2:] and c["args"][c["args"].index("-m", 2) + 1] == "gpu" for c in steps)
    targets = [[a for a in c["args"] if a.startswith(("tests", "skills/"))] for c in steps]
    assert targets[0] == ["tests/kernel_project", "tests/skill"]
    assert targets[1] == ["tests/examples"]
    assert {c["env"]["KERNEL_SKILLS_TEST_ARCHS"] for c in steps} == {"9.0"}
    # While the examples compile in the background the scaffold step gets the rest of the 6 jobs.
    share = 6 // (len(EXAMPLES) + 1)
    assert steps[0]["env"]["MAX_JOBS"] == str(6 - share * len(EXAMPLES))
    assert steps[1]["env"]["MAX_JOBS"] == "6"
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "scaffolds_and_templates: exit 0: 3 passed, 8 skipped, 29 deselected, 15 warnings in 0.01s\n" in summary
    assert "== .ci/gpu: PASSED" in result.stdout


@pytest.mark.parametrize("fail", ["tests/examples", "build_local.py", "ltx_video/tests"])
def test_a_failing_step_fails_the_run_and_the_later_steps_still_run(tmp_path: Path, fail: str) -> None:
    result, calls = run(tmp_path, fail=fail)
    assert result.returncode == 1
    assert "== .ci/gpu: FAILED" in result.stdout
    if fail != "build_local.py":  # a failed pytest step is summarised by pytest's own counts
        assert ": exit 1: 1 failed, 2 passed, 3 warnings in 0.01s\n" in (tmp_path / "out" / "summary.txt").read_text()
    assert any(c["args"][-1] == "tests/examples" for c in pytest_calls(calls))


def test_refuses_without_a_gpu_and_writes_nothing(tmp_path: Path) -> None:
    shim = tmp_path / "python"
    shim.write_text("#!/usr/bin/env bash\nexit 1\n")
    shim.chmod(0o755)
    out = tmp_path / "out"
    result = subprocess.run(["bash", str(SCRIPT), str(out)], capture_output=True, text=True,
                            env=dict(os.environ, PYTHON=str(shim)), timeout=60)
    assert result.returncode == 2
    assert "no CUDA GPU visible" in result.stderr and result.stderr.count("\n") == 1
    assert not out.exists()
