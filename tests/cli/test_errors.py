"""One error type, one handler: `Error: <what>. <fix>`, exit 1 or 2, no traceback by default."""

from __future__ import annotations

import json

import pytest

from kernel_skills import install
from kernel_skills.errors import KernelsError

from .conftest import cli


def test_error_message_has_what_and_fix():
    error = KernelsError("the thing broke.", "Do this instead.")
    assert error.message == "the thing broke. Do this instead."
    assert error.exit_code == 1
    assert KernelsError("bad flag", usage=True).exit_code == 2
    assert KernelsError("'..' is odd").message == "'..' is odd."


@pytest.mark.parametrize(
    "args, code",
    [
        (["skills", "add", "demo", "--claude"], 0),
        (["skills", "list"], 0),
        (["--version"], 0),
        (["skills", "add", "nope", "--claude"], 1),
        (["skills", "remove", "demo"], 1),
        (["skills", "add", "demo", "--no-such-flag"], 2),
        (["skills", "add", "--agent", "vim"], 2),
        (["skills", "add", "--skill=Bad"], 2),
        (["skills", "remove"], 2),
        (["skills", "validate"], 2),
        (["skills", "bogus"], 2),
        (["skills", "config", "nokey"], 2),
        # Options that make no sense together are mistakes, not something to ignore.
        (["skills", "add", "demo", "--global", "--dest", "d"], 2),
        (["skills", "remove", "demo", "--global", "--dest", "d"], 2),
        (["skills", "update", "--global", "--dest", "d"], 2),
        (["skills", "add", "--list", "--claude"], 2),
        (["skills", "add", "--list", "--force"], 2),
        (["skills", "list", "--available", "--global"], 2),
        (["skills", "add", "demo", "--dest", ""], 2),
    ],
)
def test_exit_codes(sandbox, args, code):
    result = cli(*args)
    assert result.exit_code == code, result.output


def test_failures_print_one_error_line_without_traceback(sandbox):
    result = cli("skills", "add", "nope", "--claude")
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("Error: no bundled skill named 'nope'. ")
    assert "Traceback" not in result.output


def test_unexpected_exceptions_are_reported_as_bugs_without_traceback(sandbox, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(install, "plan_add", explode)
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: unexpected RuntimeError: boom. This is a bug")
    assert "Traceback" not in result.stderr


def test_kernels_debug_shows_the_traceback(sandbox, monkeypatch):
    monkeypatch.setenv("KERNELS_DEBUG", "1")
    result = cli("skills", "add", "nope", "--claude")
    assert result.exit_code == 1
    assert "Traceback" in result.stderr and "KernelsError" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("Error: no bundled skill")


def test_os_errors_become_one_line_errors(sandbox, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "/some/where")

    monkeypatch.setattr(install, "apply", denied)
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: Permission denied: /some/where. Check")


def test_keyboard_interrupt_exits_130_with_a_message(sandbox, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(install, "apply", interrupted)
    result = cli("skills", "add", "demo", "--claude")
    assert result.exit_code == 130
    assert result.stderr.startswith("Error: interrupted.")


def test_usage_errors_from_the_parser_show_usage(sandbox):
    result = cli("skills", "add", "--no-such-flag")
    assert result.exit_code == 2
    assert "No such option: --no-such-flag" in result.stderr


@pytest.mark.parametrize("args, what", [
    (["skills", "add", "--bogus", "--json"], "No such option: --bogus"),
    (["skills", "add", "--json", "--dest"], "Option '--dest' requires an argument."),
    (["skills", "list", "--json", "--global", "extra"], "Got unexpected extra argument(s) (extra)"),
])
def test_json_mode_usage_errors_are_json_on_stdout_too(sandbox, args, what):
    result = cli(*args)
    assert result.exit_code == 2
    assert json.loads(result.stdout) == {"ok": False, "error": {"what": what, "fix": "Run the command with --help for its usage.", "exit_code": 2}}
    assert what in result.stderr  # the usual usage text is still there for people


def test_a_usage_error_without_json_prints_nothing_on_stdout(sandbox):
    result = cli("skills", "add", "--bogus")
    assert result.exit_code == 2 and result.stdout == ""


def test_json_mode_errors_are_json_on_stdout(sandbox):
    result = cli("skills", "show", "nope", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data == {"ok": False, "error": {"what": "no bundled skill named 'nope'", "fix": data["error"]["fix"], "exit_code": 1}}
    assert "Bundled skills: cuda-kernels, demo" in data["error"]["fix"]


def test_help_teaches(sandbox):
    top = cli("--help")
    assert top.exit_code == 0 and "skills" in top.stdout
    add = cli("skills", "add", "--help")
    for text in ("--claude", "--kiro", "--agents", "--global", "--dest", "--force", "--link", "--dry-run", "--json", "--quiet", "Examples:"):
        assert text in add.stdout, text
    assert "$CLAUDE_CONFIG_DIR/skills" in add.stdout
    for command in ("add", "list", "remove", "update", "show", "validate", "agents", "config"):
        result = cli("skills", command, "--help")
        assert result.exit_code == 0 and "kernels skills" in result.stdout, command


def test_version(sandbox):
    from kernel_skills import __version__

    assert cli("--version").stdout.splitlines()[0] == f"kernel-skills {__version__}"


@pytest.mark.parametrize("command", ["add", "remove", "update", "show", "validate"])
def test_help_names_arguments_by_metavar_without_python_types(sandbox, command):
    result = cli("skills", command, "--help")
    assert result.exit_code == 0
    assert "list[str]" not in result.stdout and "<str>" not in result.stdout


def test_conflicting_options_are_named_in_the_error(sandbox):
    result = cli("skills", "add", "--list", "--claude", "--dry-run")
    assert result.stderr.startswith("Error: --list installs nothing, so it takes no agent flags, --dry-run.")
    result = cli("skills", "add", "demo", "--global", "--dest", "d")
    assert "--global picks the agents' user-wide folders" in result.stderr and "Drop --global" in result.stderr
    assert not (sandbox.project / "d").exists()
    assert "--dest was given an empty path" in cli("skills", "add", "demo", "--dest", " ").stderr


def test_global_with_an_agent_and_a_dest_is_still_both(sandbox):
    result = cli("skills", "add", "demo", "--global", "--claude", "--dest", "d")
    assert result.exit_code == 0, result.output
    assert (sandbox.project / "d/demo/SKILL.md").is_file() and (sandbox.home / ".claude/skills/demo/SKILL.md").is_file()


@pytest.mark.parametrize(
    "args, key",
    [
        (["skills", "list"], "installed"),
        (["skills", "list", "--available"], "available"),
        (["skills", "add", "--list"], "offers"),
        (["skills", "show", "demo"], "files"),
        (["skills", "agents"], "agents"),
        (["skills", "config"], "default_agents"),
        (["skills", "validate", "SKILLS/demo"], "results"),
        (["skills", "add", "demo", "--dry-run"], "actions"),
        (["skills", "update"], "actions"),
    ],
)
def test_every_json_document_says_ok(sandbox, args, key):
    # Scripts can test `.ok` on whatever they ran; each command's own keys sit beside it.
    args = [str(sandbox.bundled / "demo") if a == "SKILLS/demo" else a for a in args]
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and key in data
