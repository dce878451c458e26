"""Both `kernels` commands, installed for real: ours and Hugging Face's, in either order.

Each test makes a clean venv (with pip, no site-packages of this environment), installs
Hugging Face's kernels from the package index and our wheel, in one order or the other, and
runs the console scripts as a user would. Needs the package index (PyPI): without it the
tests are skipped, saying so.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_skills import __version__

from .conftest import REPO
from .test_wheel import wheel  # noqa: F401  (the module-scoped fixture that builds our wheel)

pytestmark = pytest.mark.slow

HF_KERNELS = "kernels==0.17.2"  # what the dev extra pins (pyproject.toml)
HF_VERSION = HF_KERNELS.split("==")[1]


def _index_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


def _run(args: list[str], *, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=900, **kwargs)
    if check:
        assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "KERNEL_SKILLS_BUNDLED_ROOT")}
    env.update(HF_HUB_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _make_venv(where: Path, install_order: list[str]) -> Path:
    """A clean venv with ``install_order`` pip-installed one after the other; its bin folder."""
    _run([sys.executable, "-m", "venv", str(where)])
    bin_dir = where / ("Scripts" if os.name == "nt" else "bin")
    for requirement in install_order:
        _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", requirement], env=_env(where))
    return bin_dir


@pytest.fixture(scope="module")
def online() -> None:
    if not _index_reachable():
        pytest.skip("needs the package index (pypi.org) to install Hugging Face's kernels")


def test_ours_installed_last_runs_skills_and_forwards_the_rest(online, wheel, tmp_path):  # noqa: F811
    bin_dir = _make_venv(tmp_path / "venv", [HF_KERNELS, str(wheel)])
    env, cwd = _env(tmp_path), tmp_path
    kernels = str(bin_dir / "kernels")

    version = _run([kernels, "--version"], env=env, cwd=cwd)
    assert version.stdout.splitlines() == [
        f"kernel-skills {__version__}",
        f"kernels {HF_VERSION} (Hugging Face; runs every command but `skills`)",
    ]
    available = json.loads(_run([kernels, "skills", "list", "--available", "--json"], env=env, cwd=cwd).stdout)
    assert "cuda-kernels" in [s["name"] for s in available["available"]]
    helped = _run([kernels, "--help"], env=env, cwd=cwd).stdout
    assert "skills" in helped and f"Hugging Face's kernels {HF_VERSION}" in helped

    # Hugging Face's commands: their help, their output, their exit code.
    versions_help = _run([kernels, "versions", "--help"], env=env, cwd=cwd)
    assert "repo_id" in versions_help.stdout and "kernel versions" in versions_help.stdout
    check = _run([kernels, "check"], env=env, cwd=cwd, check=False)
    assert check.returncode == 1 and "kernel-builder check-abi" in check.stderr
    bad = _run([kernels, "no-such-command"], env=env, cwd=cwd, check=False)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr

    # The unambiguous name does the same.
    assert _run([str(bin_dir / "kernel-skills"), "check"], env=env, cwd=cwd, check=False).returncode == 1

    # As the README says: uninstalling theirs deletes the `kernels` script, though ours wrote it last.
    _run([str(bin_dir / "python"), "-m", "pip", "uninstall", "-y", "-q", "kernels"], env=env)
    assert not (bin_dir / "kernels").exists()
    assert _run([str(bin_dir / "kernel-skills"), "--version"], env=env, cwd=cwd).stdout.splitlines() == [f"kernel-skills {__version__}"]


def test_theirs_installed_last_owns_kernels_and_kernel_skills_still_works(online, wheel, tmp_path):  # noqa: F811
    bin_dir = _make_venv(tmp_path / "venv", [str(wheel), HF_KERNELS])
    env, cwd = _env(tmp_path), tmp_path
    kernels, ours = str(bin_dir / "kernels"), str(bin_dir / "kernel-skills")

    theirs = _run([kernels, "skills", "list"], env=env, cwd=cwd, check=False)
    assert theirs.returncode == 2 and "invalid choice: 'skills'" in theirs.stderr  # their argparse, not us
    assert _run([ours, "--version"], env=env, cwd=cwd).stdout.splitlines()[0] == f"kernel-skills {__version__}"
    added = json.loads(_run([ours, "skills", "add", "cuda-kernels", "--dest", "out", "--json", "--dry-run"], env=env, cwd=cwd).stdout)
    assert added["ok"] and added["actions"][0]["skill"] == "cuda-kernels"
    assert _run([ours, "check"], env=env, cwd=cwd, check=False).returncode == 1  # forwarded to theirs

    # The README's way back to one `kernels` for both: reinstall ours, without touching anything else.
    readme = (REPO / "README.md").read_text()
    fix = "pip install --force-reinstall --no-deps kernel-skills"
    assert fix in readme
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", str(wheel)], env=env)
    assert _run([kernels, "--version"], env=env, cwd=cwd).stdout.splitlines()[0] == f"kernel-skills {__version__}"
    assert _run([kernels, "check"], env=env, cwd=cwd, check=False).returncode == 1
