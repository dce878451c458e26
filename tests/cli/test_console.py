"""The CLI as users run it: console scripts and `python -m`, in fresh processes."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_skills import __version__, install
from kernel_skills.skill import is_ignored
from kernel_skills.sources import bundled_names, default_bundled_root

from .conftest import REPO, run_module, skill_files

HEAVY = ("huggingface_hub", "torch")
LAZY = ("rich", "yaml", "platformdirs", "kernel_skills.install")


def _imported_by(args: list[str] | None) -> set[str]:
    """Top-level modules (and kernel_skills submodules) a fresh `kernels ARGS` imports;
    with ``args=None``, what `import typer` alone imports."""
    run = "from kernel_skills.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n" if args is not None else "import typer\n"
    code = (
        "import sys\n"
        f"sys.argv = ['kernels', *{args or []!r}]\n"
        + run
        + "print('MODULES', ' '.join(sorted(m.split('.')[0] if not m.startswith('kernel_skills') else m for m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    line = [l for l in out.splitlines() if l.startswith("MODULES ")][-1]
    return set(line.split()[1:])


def test_help_imports_neither_hub_nor_torch_nor_the_heavy_parts_of_the_cli():
    modules = _imported_by(["--help"])
    typer_itself = _imported_by(None)  # older typer releases import rich on their own
    for name in HEAVY:
        assert name not in modules, f"`kernels --help` imported {name}"
    for name in LAZY:
        assert name not in modules or name in typer_itself, f"`kernels --help` imported {name}"


def test_add_imports_neither_hub_nor_torch(sandbox):
    modules = _imported_by(["skills", "add", "demo", "--dest", str(sandbox.root / "d")])
    assert (sandbox.root / "d/demo/SKILL.md").is_file()
    for name in HEAVY:
        assert name not in modules


def test_python_dash_m(sandbox):
    version = run_module("--version")
    assert version.returncode == 0 and version.stdout.splitlines()[0] == f"kernel-skills {__version__}"
    result = run_module("skills", "add", "demo", "--claude", env=os.environ, cwd=sandbox.project)
    assert result.returncode == 0, result.stderr
    assert "Installed demo" in result.stdout
    assert (sandbox.project / ".claude/skills/demo/SKILL.md").is_file()


def test_kernel_skills_console_script(sandbox):
    script = Path(sys.executable).with_name("kernel-skills")
    if not script.exists():
        script = Path(shutil.which("kernel-skills") or "kernel-skills")
    result = subprocess.run([str(script), "skills", "add", "demo", "-g", "--json"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["actions"][0]["path"] == str(sandbox.home / ".agents/skills/demo")


def test_console_exit_codes_and_error_line(sandbox):
    usage = run_module("skills", "add", "--agent", "nope")
    assert usage.returncode == 2 and usage.stderr.startswith("Error: unknown agent 'nope'.")
    failure = run_module("skills", "remove", "demo")
    assert failure.returncode == 1 and failure.stderr.startswith("Error: ")
    assert "Traceback" not in failure.stderr
    bad_flag = run_module("skills", "list", "--bogus")
    assert bad_flag.returncode == 2


def test_bundled_root_is_the_checkouts_skills_folder_in_a_source_install(monkeypatch):
    monkeypatch.delenv("KERNEL_SKILLS_BUNDLED_ROOT")
    root = default_bundled_root({})
    assert root == REPO / "skills" or root.parts[-2:] == ("kernel_skills", "skills")
    assert default_bundled_root({"KERNEL_SKILLS_BUNDLED_ROOT": "/x/y"}) == Path("/x/y")


def test_whatever_the_repository_skills_folder_holds_is_copied_byte_for_byte(tmp_path):
    """The copy engine `add` stages with, run on the real skills/ tree (whatever state
    its authors have it in): every file's bytes and executable bits arrive unchanged."""
    names = [p.name for p in (REPO / "skills").iterdir() if p.is_dir() and not is_ignored(p.name)]
    if not names:
        pytest.skip("skills/ holds no skill folders yet")
    for name in names:
        source = REPO / "skills" / name
        out = tmp_path / name
        files = install.copy_tree(source, out)
        expected = {}
        for path in sorted(source.rglob("*")):
            rel = path.relative_to(source)
            if any(is_ignored(part) for part in rel.parts) or path.is_dir():
                continue
            expected[rel.as_posix()] = path.read_bytes()
            copied = out / rel
            assert copied.read_bytes() == expected[rel.as_posix()], rel
            assert bool(os.stat(copied).st_mode & stat.S_IXUSR) == bool(os.stat(path).st_mode & stat.S_IXUSR), rel
        assert skill_files(out) == expected
        assert set(files) == set(expected)
    assert bundled_names(REPO / "skills") == sorted(n for n in names if (REPO / "skills" / n / "SKILL.md").is_file())


class _Terminal:
    """A stderr that says it is a terminal and keeps what is written."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("no_color, coloured", [(None, True), ("1", False)])
def test_the_error_prefix_is_coloured_on_a_terminal_unless_no_color(monkeypatch, no_color, coloured):
    from kernel_skills.cli import handler

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert handler.report("it broke", "Fix it.", 1) == 1
    assert terminal.text.endswith("it broke. Fix it.\n")
    assert ("\x1b[" in terminal.text) is coloured


def test_a_reader_that_goes_away_is_not_reported_as_a_failure_of_the_command(sandbox):
    # `kernels skills add --json | true`: the install is done when the JSON is printed, so a
    # closed pipe must not become "Error: Broken pipe. Check permissions"; the command exits
    # 141 (128 + SIGPIPE) and says nothing, as a C tool killed by SIGPIPE would.
    read_end, write_end = os.pipe()
    os.close(read_end)  # no reader at all: the first write fails with EPIPE
    try:
        result = subprocess.run(
            [sys.executable, "-m", "kernel_skills", "skills", "add", "demo", "--claude", "--json"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120, cwd=sandbox.project,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 141
    assert result.stderr == ""
    assert (sandbox.project / ".claude/skills/demo/SKILL.md").is_file()


def test_only_a_closed_stdout_counts_as_the_reader_going_away(monkeypatch):
    # Another pipe breaking (a socket, a child's stdin) is a failure to report, not exit 141.
    from kernel_skills.cli import handler

    read_end, write_end = os.pipe()
    try:
        with open(write_end, "w", closefd=False) as healthy:
            monkeypatch.setattr(sys, "stdout", healthy)
            assert handler.stdout_gone() is False
            os.close(read_end)
            read_end = -1
            assert handler.stdout_gone() is True
    finally:
        os.close(write_end)
        if read_end >= 0:
            os.close(read_end)
