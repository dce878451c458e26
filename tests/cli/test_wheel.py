"""The built wheel works on its own: no source checkout, no network.

Builds the wheel, installs it into a fresh venv, and runs the `kernels` console script
from a folder outside the checkout. The fresh venv has no index to install typer & co.
from, so it borrows them read-only from this environment's site-packages through a .pth
file; kernel_skills itself (code and bundled skills) comes only from the wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from kernel_skills import __version__
from kernel_skills.skill import is_ignored, validate

from .conftest import REPO, skill_files

pytestmark = pytest.mark.slow


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def _offline_env(sandbox) -> dict[str, str]:
    env = sandbox.env()
    for name in ("KERNEL_SKILLS_BUNDLED_ROOT", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(name, None)
    # Any attempt to reach the network fails at once instead of hanging.
    closed = "http://127.0.0.1:9"
    env.update(HF_HUB_OFFLINE="1", PIP_NO_INDEX="1", http_proxy=closed, https_proxy=closed, HTTP_PROXY=closed, HTTPS_PROXY=closed)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(REPO)])
    (wheel,) = out.glob("kernel_skills-*.whl")
    return wheel


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index", "--no-deps", "-q", str(wheel)])
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    borrowed = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "_borrowed_dependencies.pth").write_text("\n".join(borrowed) + "\n")
    return venv


def _script(venv: Path, name: str) -> str:
    return str(venv / ("Scripts" if os.name == "nt" else "bin") / name)


def test_wheel_carries_the_bundled_skills_byte_for_byte(wheel):
    with zipfile.ZipFile(wheel) as archive:
        shipped = {n[len("kernel_skills/skills/"):]: archive.read(n) for n in archive.namelist() if n.startswith("kernel_skills/skills/")}
    expected = {}
    for path in (REPO / "skills").rglob("*"):
        rel = path.relative_to(REPO / "skills")
        if path.is_file() and not any(is_ignored(p) for p in rel.parts):
            expected[rel.as_posix()] = path.read_bytes()
    shipped = {k: v for k, v in shipped.items() if not any(is_ignored(p) for p in k.split("/"))}
    assert shipped == expected


def test_installed_wheel_adds_skills_outside_the_checkout_offline(venv, wheel, sandbox, tmp_path):
    env = _offline_env(sandbox)
    elsewhere = tmp_path / "somewhere-else"
    elsewhere.mkdir()
    assert REPO not in elsewhere.parents

    where = _run([_script(venv, "python"), "-c", "import kernel_skills; print(kernel_skills.__file__)"], env=env, cwd=elsewhere)
    assert Path(where.stdout.strip()).is_relative_to(venv), "kernel_skills must come from the wheel"
    for script in ("kernels", "kernel-skills"):
        version = _run([_script(venv, script), "--version"], env=env, cwd=elsewhere)
        assert version.stdout.splitlines()[0] == f"kernel-skills {__version__}"

    available = json.loads(_run([_script(venv, "kernels"), "skills", "list", "--available", "--json"], env=env, cwd=elsewhere).stdout)
    names = [s["name"] for s in available["available"]]
    assert "cuda-kernels" in names
    package_skills = Path(available["available"][names.index("cuda-kernels")]["path"])
    assert package_skills.is_relative_to(venv)

    result = subprocess.run(
        [_script(venv, "kernels"), "skills", "add", "cuda-kernels", "--claude"], env=env, cwd=elsewhere, capture_output=True, text=True, timeout=120
    )
    if validate(package_skills).ok:
        assert result.returncode == 0, result.stderr
        assert skill_files(elsewhere / ".claude/skills/cuda-kernels") == skill_files(package_skills)
        listed = json.loads(_run([_script(venv, "kernels"), "skills", "list", "--json"], env=env, cwd=elsewhere).stdout)
        assert [(i["skill"], i["status"]) for i in listed["installed"]] == [("cuda-kernels", "current")]
    else:
        # The skill is still being written: the wheel's CLI must refuse it cleanly.
        assert result.returncode == 1 and "is not valid" in result.stderr, result.stderr
        assert not (elsewhere / ".claude").exists()


# What `kernels skills add cuda-kernels` copies into every agent folder is what an agent greps:
# sources, tests, build files, published JSON and design notes; the run logs stay in the
# repository's evidence/. Bounds from issue 31 (measured there on the wheel of main: 644 files,
# 11 MB installed, an 82 KB receipt).
# Issue 31's targets, and guards against regrowth at today's tree with a few % headroom.
# Today (the scaffold ops with their aligned, same-phase and shifted instances, rmsnorm's
# warp runs, the CPU emulator, the prototype route and the long_rows example of issues 32 and
# 34 included, and the qwen3 example's split RMSNorm kernel and emulated kernel tests): 147
# files, 1.84 MB installed, a 10 KB receipt, a 764 KB wheel. The file and receipt targets are met; the size targets are not (strict xfail
# below).
MAX_FILES, TARGET_FILES = 150, 200
MAX_RECEIPT_BYTES, TARGET_RECEIPT_BYTES = 11_500, 20_000
MAX_INSTALLED_BYTES, TARGET_INSTALLED_BYTES = 1_850_000, 1_500_000
MAX_WHEEL_BYTES, TARGET_WHEEL_BYTES = 780_000, 600_000


@pytest.fixture(scope="module")
def installed_skill(venv, tmp_path_factory) -> Path:
    # Module-scoped, so outside the per-test sandbox: every root the CLI may touch is made here.
    root = tmp_path_factory.mktemp("agent")
    dest = root / "skills"
    env = {k: v for k, v in os.environ.items() if k not in ("KERNEL_SKILLS_BUNDLED_ROOT", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(root / "home"), XDG_CONFIG_HOME=str(root / "config"), XDG_STATE_HOME=str(root / "state"),
               XDG_DATA_HOME=str(root / "data"), XDG_CACHE_HOME=str(root / "cache"), CLAUDE_CONFIG_DIR=str(root / "claude"),
               HF_HUB_OFFLINE="1", PIP_NO_INDEX="1")
    _run([_script(venv, "kernels"), "skills", "add", "cuda-kernels", "--dest", str(dest)], env=env, cwd=dest.parent)
    return dest / "cuda-kernels"


def _tree(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def test_installed_skill_ships_no_run_logs_and_few_files(installed_skill):
    logs = [p for p in installed_skill.rglob("*") if p.name == "logs" or p.suffix == ".log"]
    assert not logs, f"run logs belong in the repository's evidence/, not in agent folders: {logs[:5]}"
    files, _ = _tree(installed_skill)
    assert files <= MAX_FILES, f"{files} files installed (bound {MAX_FILES})"


def test_install_receipt_is_small(installed_skill):
    receipt = installed_skill / ".kernel-skills.json"
    assert receipt.is_file()
    assert receipt.stat().st_size <= MAX_RECEIPT_BYTES, f"receipt {receipt.stat().st_size} bytes"


def test_installed_tree_stays_within_todays_size(installed_skill):
    _, size = _tree(installed_skill)
    assert size <= MAX_INSTALLED_BYTES, f"{size} bytes installed (bound {MAX_INSTALLED_BYTES})"


def test_wheel_stays_within_todays_size(wheel):
    assert wheel.stat().st_size <= MAX_WHEEL_BYTES, f"wheel {wheel.stat().st_size} bytes (bound {MAX_WHEEL_BYTES})"


def test_installed_tree_meets_the_issue_file_and_receipt_targets(installed_skill):
    files, _ = _tree(installed_skill)
    receipt = (installed_skill / ".kernel-skills.json").stat().st_size
    assert files <= TARGET_FILES, f"{files} files installed (issue 31: <= {TARGET_FILES})"
    assert receipt <= TARGET_RECEIPT_BYTES, f"receipt {receipt} bytes (issue 31: <= {TARGET_RECEIPT_BYTES})"


@pytest.mark.xfail(strict=True, reason="issue 31 targets 1.5 MB installed and a 600 KB wheel; today 1.84 MB and "
                                       "764 KB: remove this mark when it passes")
def test_installed_tree_and_wheel_meet_the_issue_size_targets(installed_skill, wheel):
    _, size = _tree(installed_skill)
    assert size <= TARGET_INSTALLED_BYTES and wheel.stat().st_size <= TARGET_WHEEL_BYTES
