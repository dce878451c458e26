"""Fixtures for the CLI tests: nothing here may touch the real home or the real cwd.

The autouse fixture points HOME, KERNEL_SKILLS_STATE_DIR, KERNEL_SKILLS_CONFIG_DIR,
CLAUDE_CONFIG_DIR and the cwd at tmp dirs, and points the bundled-skills root at a tmp
folder of test skills (the real skills/ tree is being written by others and must not
decide these tests). State and config are moved with the kernel-skills variables, not
with XDG_*, which platformdirs ignores on Windows and macOS: no test depends on
platformdirs' per-OS rules. XDG_CONFIG_HOME is still set, for agents that honour it.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernel_skills import fsops
from kernel_skills.agents import Location
from kernel_skills.roots import Roots
from kernel_skills.skill import is_ignored

from .hubfake import FakeHub, point_client_at

REPO = Path(__file__).resolve().parents[2]
_ENV_TO_CLEAR = ("KERNEL_SKILLS_BUNDLED_ROOT", "KERNEL_SKILLS_TEST_HOOKS", "KERNELS_DEBUG", "XDG_DATA_HOME", "XDG_CACHE_HOME")
_STATE_ENV = ("KERNEL_SKILLS_STATE_DIR", "KERNEL_SKILLS_CONFIG_DIR")  # set by the sandbox, kept for subprocesses


@dataclass
class Sandbox:
    root: Path
    home: Path
    project: Path
    bundled: Path
    state: Path
    config_dir: Path

    @property
    def roots(self) -> Roots:
        return Roots(
            location=Location(self.project, self.home, dict(os.environ)),
            bundled=self.bundled,
            state_dir=self.state / "kernel-skills",
            config_file=self.config_dir / "kernel-skills" / "config.yaml",
        )

    @property
    def backups(self) -> Path:
        return self.state / "kernel-skills" / "backups"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment for a subprocess run of the CLI inside this sandbox."""
        env = {k: v for k, v in os.environ.items() if k not in _ENV_TO_CLEAR}
        env.update(extra)
        return env


@pytest.fixture(autouse=True)
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    box = Sandbox(
        root=tmp_path,
        home=home,
        project=project,
        bundled=tmp_path / "bundled",
        state=home / ".local" / "state",
        config_dir=home / ".config",
    )
    for folder in (home, project, box.bundled):
        folder.mkdir(parents=True)
    for name in _ENV_TO_CLEAR + _STATE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(box.config_dir))
    monkeypatch.setenv("KERNEL_SKILLS_STATE_DIR", str(box.state / "kernel-skills"))
    monkeypatch.setenv("KERNEL_SKILLS_CONFIG_DIR", str(box.config_dir / "kernel-skills"))
    # A real user state dir must never be reached, whatever platformdirs would pick here.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state-must-stay-unused"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("KERNEL_SKILLS_BUNDLED_ROOT", str(box.bundled))
    monkeypatch.setattr(fsops, "HOOKS", {})
    monkeypatch.chdir(project)
    make_skill(box.bundled, "demo")
    make_skill(box.bundled, "cuda-kernels", description="Stand-in for the real skill. Write CUDA kernels.")
    yield box
    assert not (tmp_path / "xdg-state-must-stay-unused").exists(), "a test reached platformdirs' state dir"


@pytest.fixture
def hub(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch):
    """A fake Hugging Face Hub on 127.0.0.1 (tests/cli/hubfake.py) that huggingface_hub
    talks to, with its cache in the sandbox: no network, no real cache or token touched."""
    with FakeHub() as server:
        point_client_at(server, sandbox.root / "hf", monkeypatch)
        yield server
    assert not server.unexpected, f"requests FakeHub does not serve: {server.unexpected}"


# ------------------------------------------------------------------------------ helpers

SKILL_TEMPLATE = """---
name: {name}
description: {description}
license: Apache-2.0
metadata:
  version: "{version}"
---
# {name}

Run `scripts/tool.py` and read [the guide](references/guide.md).
"""


def _chmod_if_modes(path: Path, mode: int) -> None:
    """chmod, except on a filesystem without Unix modes (the FAT image of test_casefold.py)."""
    fsops.chmod(str(path), mode)


def make_skill(
    root: Path,
    name: str,
    *,
    version: str = "1.0.0",
    description: str = "A test skill. Use it in tests.",
    extra: Mapping[str, bytes | str] | None = None,
    skill_md: str | None = None,
) -> Path:
    """A small but complete skill: SKILL.md, an executable script, a reference, binary bytes."""
    folder = root / name
    files: dict[str, bytes | str] = {
        "SKILL.md": skill_md if skill_md is not None else SKILL_TEMPLATE.format(name=name, description=description, version=version),
        "scripts/tool.py": f"#!/usr/bin/env python3\nprint('{name} {version}')\n",
        "references/guide.md": f"# Guide for {name} {version}\n\nSee [the skill](../SKILL.md).\n",
        "assets/blob.bin": bytes(range(256)) * 3 + version.encode(),
    }
    files.update(extra or {})
    for rel, content in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        path.write_bytes(content)
    _chmod_if_modes(folder / "scripts/tool.py", 0o755)
    return folder


_LOCKS = "kernel-skills/locks"


def snapshot(path: Path) -> dict[str, tuple]:
    """Everything under ``path`` (not following symlinks): kind, bytes or link target, mode."""
    if not os.path.lexists(path):
        return {}
    result: dict[str, tuple] = {}
    base = str(path)
    entries = [(base, os.lstat(base))]
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            entries.append((full, os.lstat(full)))
    for full, st in entries:
        rel = os.path.relpath(full, base)
        if _LOCKS in rel.replace(os.sep, "/"):
            continue  # lock files (where there is no flock) are made once and kept for good
        if stat.S_ISLNK(st.st_mode):
            result[rel] = ("link", os.readlink(full))
        elif stat.S_ISDIR(st.st_mode):
            result[rel] = ("dir", stat.S_IMODE(st.st_mode))
        else:
            result[rel] = ("file", Path(full).read_bytes(), stat.S_IMODE(st.st_mode))
    return result


def skill_files(path: Path) -> dict[str, bytes]:
    """The content of an installed skill: receipt (it has a timestamp) and regenerable
    clutter like __pycache__ (never copied) left out."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if not is_ignored(d)]
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(path).as_posix()
            if rel != ".kernel-skills.json" and not is_ignored(name):
                out[rel] = full.read_bytes()
    return out


def leftovers(*folders: Path) -> list[str]:
    """Temp folders an install may leave behind (there must be none after a finished run)."""
    found = []
    for folder in folders:
        if folder.is_dir():
            found += [str(p) for p in folder.rglob(".kernel-skills-tmp")]
            found += [str(p) for p in folder.rglob(".partial-*")]
    return found


try:  # click < 8.2 mixes stderr into stdout unless told not to
    runner = CliRunner(mix_stderr=False)
except TypeError:  # click >= 8.2 always keeps them apart
    runner = CliRunner()


def cli(*args: str, input: str | None = None):
    """Run the CLI in-process (typer's CliRunner); stdout and stderr are kept apart."""
    from kernel_skills.cli.commands import app

    return runner.invoke(app, list(args), input=input)


def run_module(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None, **kw) -> subprocess.CompletedProcess:
    """Run `python -m kernel_skills ARGS` in a fresh process (the console-script path)."""
    return subprocess.run(
        [sys.executable, "-m", "kernel_skills", *args],
        env=dict(env) if env is not None else None,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


# ------------------------------------------------------------- macOS, simulated


class FakeRenamexNp:
    """macOS renamex_np(2) for ctypes on Linux: RENAME_SWAP (0x2) and RENAME_EXCL (0x4)
    carried out by renameat2's RENAME_EXCHANGE and RENAME_NOREPLACE; ``refuse`` = an errno
    to fail every call with, as a filesystem without the flags does (ENOTSUP)."""

    def __init__(self, refuse: int = 0) -> None:
        import ctypes

        self.refuse, self.flags = refuse, []
        self.argtypes = self.restype = None
        self._ctypes = ctypes
        self._renameat2 = ctypes.CDLL(None, use_errno=True).renameat2

    def __call__(self, src: bytes, dst: bytes, flags: int) -> int:
        self.flags.append(flags)
        if self.refuse:
            self._ctypes.set_errno(self.refuse)
            return -1
        return self._renameat2(-100, src, -100, dst, {0x2: 2, 0x4: 1}[flags])


def simulate_macos(monkeypatch, refuse: int = 0) -> FakeRenamexNp:
    """Make fsops load its macOS swap (renamex_np through ctypes), served by FakeRenamexNp."""
    import ctypes

    fake = FakeRenamexNp(refuse)
    real_cdll = ctypes.CDLL

    class Libc:
        renamex_np = fake

    monkeypatch.setattr(ctypes, "CDLL", lambda name, *a, **k: Libc() if name is None else real_cdll(name, *a, **k))
    monkeypatch.setattr(fsops, "_rename2_loaded", False)
    monkeypatch.setattr(fsops, "_rename2_impl", None)
    monkeypatch.setattr(fsops, "_LOADERS", {"linux": fsops._load_darwin})
    fsops._load_rename2()  # loads now, while CDLL is the fake
    return fake
