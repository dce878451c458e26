"""The fast path of `kernels skills add` (cli/fast.py): it reads the command line without
typer, and what it prints, exits with and leaves on disk is what the typer command does.

Every command line below runs twice from the same starting tree, through the console
script's main(): once as it comes (the fast path where it applies) and once with the
``no-fast-path`` test hook (typer reads every command line); stdout, stderr, the exit code
and the files left behind must be the same.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_skills.agents import AGENTS
from kernel_skills.cli import entry, fast

from .conftest import make_skill, snapshot

# --------------------------------------------------------------------------- the options


def test_the_fast_path_knows_every_option_of_add_as_typer_declares_it():
    import typer

    from kernel_skills.cli.commands import app

    add = typer.main.get_command(app).commands["skills"].commands["add"]  # type: ignore[attr-defined]
    declared: dict[str, tuple[str, str]] = {}
    for param in add.params:
        if param.param_type_name == "argument":
            assert (param.name, param.nargs) == ("skills", -1)
            continue
        kind = fast.FLAG if param.is_flag else fast.VALUES if param.multiple else fast.VALUE
        for option in [*param.opts, *param.secondary_opts]:
            declared[option] = (param.name, kind)
    agent_flags = {f"--{agent.name}": (f"agent_{agent.name}", fast.FLAG) for agent in AGENTS}
    assert declared == {**fast.OPTIONS, **agent_flags}


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["skills", "add"], {"skills": None, "agent_flags": []}),
        (["skills", "add", "demo", "--claude"], {"skills": ["demo"], "agent_flags": ["claude"]}),
        # agent flags in the table's order, whatever their order on the line (as typer gives them)
        (["skills", "add", "--cursor", "a", "--opencode", "b"], {"skills": ["a", "b"], "agent_flags": ["opencode", "cursor"]}),
        (["skills", "add", "--dest", "x", "--dest=y", "-g"], {"skills": None, "agent_flags": [], "dest": ["x", "y"], "global_": True}),
        (["skills", "add", "--max-files", "3", "--max-files=4"], {"skills": None, "agent_flags": [], "max_files": "4"}),
        (
            ["skills", "add", "-f", "-n", "-q", "--json", "--json"],
            {"skills": None, "agent_flags": [], "force": True, "dry_run": True, "quiet": True, "json_": True},
        ),
    ],
)
def test_parse_gives_the_keyword_arguments_of_add(argv, expected):
    assert fast.parse(argv) == expected


# What the fast path leaves to typer (so that click prints its own usage error or help).
TYPER_READS = [
    ["skills", "add", "--help"],
    ["skills", "add", "demo", "-h"],
    ["skills", "add", "demo", "--bogus"],
    ["skills", "add", "demo", "--claud"],
    ["skills", "add", "demo", "--dest"],
    ["skills", "add", "demo", "--dest", "--json"],
    ["skills", "add", "demo", "--dest="],
    ["skills", "add", "demo", "--json=yes"],
    ["skills", "add", "demo", "--claude=1"],
    ["skills", "add", "demo", "-gf"],
    ["skills", "add", "demo", "--", "--claude"],
    ["skills", "add", ""],
    ["skills", "add", "-"],
    ["skills", "list"],
    ["skills"],
    ["skills", "--json", "add"],
    [],
]


@pytest.mark.parametrize("argv", TYPER_READS, ids=" ".join)
def test_parse_leaves_every_other_command_line_to_typer(argv):
    assert fast.parse(argv) is None


# --------------------------------------------------------------- the same, byte for byte


@pytest.fixture
def both_ways(sandbox, monkeypatch, capsys):
    """run(argv) -> what the fast path did and what typer did, each from the same tree:
    (exit code, stdout, stderr, the files under the sandbox)."""
    pristine = sandbox.root.parent / f"{sandbox.root.name}-pristine"
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, getattr(signal, "SIGBREAK", signal.SIGTERM))}

    def restore() -> None:
        shutil.rmtree(sandbox.root)
        shutil.copytree(pristine, sandbox.root, symlinks=True)
        os.chdir(sandbox.project)

    def once(argv: list[str], *, typer_only: bool) -> tuple[object, str, str, dict]:
        restore()
        monkeypatch.setattr(sys, "argv", ["kernels", *argv])
        if typer_only:
            monkeypatch.setenv("KERNEL_SKILLS_TEST_HOOKS", "no-fast-path")
        else:
            monkeypatch.delenv("KERNEL_SKILLS_TEST_HOOKS", raising=False)
        try:
            entry.main()
            code: object = 0
        except SystemExit as exc:
            code = exc.code
        finally:
            for signum, handler in saved.items():
                signal.signal(signum, handler)
        out = capsys.readouterr()
        return code, out.out, out.err, _files(sandbox.root)

    def run(argv: list[str]) -> tuple[tuple, tuple]:
        shutil.copytree(sandbox.root, pristine, symlinks=True)
        return once(argv, typer_only=False), once(argv, typer_only=True)

    yield run
    shutil.rmtree(pristine, ignore_errors=True)


def _files(root: Path) -> dict:
    """snapshot(), with each receipt's install time left out (the two runs are seconds apart)."""
    files = snapshot(root)
    for rel, entry_ in files.items():
        if rel.endswith(".kernel-skills.json") and entry_[0] == "file":
            data = json.loads(entry_[1])
            data.pop("installed_at", None)
            files[rel] = ("receipt", data, entry_[2])
    return files


AGENT_LINES = [["skills", "add", "demo", f"--{agent.name}"] for agent in AGENTS] + [
    ["skills", "add", "demo", f"--{agent.name}", "-g"] for agent in AGENTS
]
FAST_LINES = [
    ["skills", "add"],
    ["skills", "add", "demo"],
    ["skills", "add", "demo", "cuda-kernels", "--claude", "--codex"],  # the "seen twice" warning
    ["skills", "add", "demo", "--claude", "--json"],
    ["skills", "add", "demo", "--kiro", "--cursor", "--opencode", "--json", "--dry-run"],
    ["skills", "add", "--dest", "mine", "demo"],
    ["skills", "add", "--dest=mine", "--dest", "../outside", "demo", "--json"],  # outside the project: a note
    ["skills", "add", "demo", "--global", "--quiet"],
    ["skills", "add", "demo", "--agent", "claude", "--agent=cline"],
    ["skills", "add", "demo", "--claude", "--cursor", "--link"],
    ["skills", "add", "demo", "--claude", "--no-lock", "-n"],
    ["skills", "add", "demo", "--claude", "--force"],
    ["skills", "add", "--skill", "demo", "--claude"],
    ["skills", "add", "./local/mine", "--claude", "--max-files", "100", "--max-file-mb=1", "--max-total-mb", "2", "--max-depth", "5"],
    ["skills", "add", "./local", "--skill", "*", "--opencode"],
    ["skills", "add", "--list"],
    ["skills", "add", "--list", "./local", "--json"],
    # failures the command reports itself: exit 1, or 2 for a mistake in what was asked
    ["skills", "add", "nope", "--claude"],
    ["skills", "add", "nope", "--claude", "--json"],
    ["skills", "add", "demo", "--agent", "nobody"],
    ["skills", "add", "demo", "--agent", "nobody", "--json"],
    ["skills", "add", "demo", "--list", "--claude"],
    ["skills", "add", "./local/mine", "--claude", "--max-files", "2"],
    ["skills", "add", "demo", "--claude", "--max-files", "many"],
    ["skills", "add", "./missing", "--dest", "mine", "--json"],
]


@pytest.mark.parametrize("argv", AGENT_LINES + FAST_LINES + TYPER_READS, ids=" ".join)
def test_the_fast_path_prints_exits_and_writes_what_typer_does(both_ways, sandbox, argv):
    assert (fast.parse(argv) is not None) == (argv not in TYPER_READS)  # which path each line takes
    make_skill(sandbox.project / "local", "mine")
    make_skill(sandbox.project / "local", "other")
    (fast_run, typer_run) = both_ways(argv)
    assert fast_run[:3] == typer_run[:3]
    assert fast_run[3] == typer_run[3]


@pytest.mark.parametrize(
    "argv",
    [
        ["skills", "add", "demo", "--claude"],  # already there, unedited: nothing to do
        ["skills", "add", "demo", "--claude", "--json"],
        ["skills", "add", "demo", "--claude", "--force"],  # replaced
        ["skills", "add", "demo", "--claude", "--codex"],
    ],
    ids=" ".join,
)
def test_the_same_over_an_existing_install(both_ways, sandbox, argv):
    from .conftest import cli

    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    (fast_run, typer_run) = both_ways(argv)
    assert fast_run == typer_run


def test_the_same_over_an_edited_install(both_ways, sandbox):
    from .conftest import cli

    assert cli("skills", "add", "demo", "--claude").exit_code == 0
    (sandbox.project / ".claude/skills/demo/references/guide.md").write_text("mine now\n")
    (fast_run, typer_run) = both_ways(["skills", "add", "demo", "--claude"])
    assert fast_run[0] == 1 and "--force" in fast_run[2]
    assert fast_run == typer_run


@pytest.mark.parametrize("env", [{"FORCE_COLOR": "1"}, {"FORCE_COLOR": "1", "NO_COLOR": "1"}], ids=["colour", "no-colour"])
@pytest.mark.parametrize("argv", [["skills", "add", "demo", "--claude", "--codex"], ["skills", "add", "nope"]], ids=" ".join)
def test_the_same_styled_for_a_terminal(both_ways, monkeypatch, env, argv):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (fast_run, typer_run) = both_ways(argv)
    assert fast_run == typer_run


def test_the_same_when_a_shell_asks_for_completions(both_ways, monkeypatch):
    monkeypatch.setenv("_KERNELS_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "kernels skills add --cl")
    monkeypatch.setenv("COMP_CWORD", "3")
    (fast_run, typer_run) = both_ways(["skills", "add", "--cl"])
    assert fast_run == typer_run


# ------------------------------------------------------------------------ as users run it


def _after(argv: list[str], env: dict[str, str], expression: str) -> str:
    """``expression`` evaluated in a fresh `kernels ARGV` process once main() is done."""
    code = (
        "import sys\n"
        f"sys.argv = ['kernels', *{argv!r}]\n"
        "from kernel_skills.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print('RESULT', {expression})\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env).stdout
    return next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT ") :]


def _modules_after(argv: list[str], env: dict[str, str]) -> set[str]:
    return set(_after(argv, env, "' '.join(sorted(m.split('.')[0] for m in sys.modules))").split())


def test_add_loads_neither_typer_nor_rich_when_not_on_a_terminal(sandbox):
    env = dict(os.environ)  # (with the sandbox's bundled skills)
    assert not {"typer", "click", "rich"} & _modules_after(["skills", "add", "demo", "--claude"], env)
    assert (sandbox.project / ".claude/skills/demo/SKILL.md").is_file()
    assert "typer" in _modules_after(["skills", "add", "demo", "--cursor"], {**env, "KERNEL_SKILLS_TEST_HOOKS": "no-fast-path"})
    assert "typer" in _modules_after(["skills", "add", "--help"], env)


def test_only_add_runs_without_the_cyclic_garbage_collector(sandbox):
    """A few ms of an install's start-up: the process ends before there is garbage to collect."""
    env = dict(os.environ)
    assert _after(["skills", "add", "demo", "--claude"], env, "__import__('gc').isenabled()") == "False"
    assert _after(["skills", "list"], env, "__import__('gc').isenabled()") == "True"
