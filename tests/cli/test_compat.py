"""kernel_skills.cli.compat reaches into typer's internals; these tests say so loudly when a
typer release moves them (update compat.py, then the typer pin in pyproject.toml)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import typer
import typer.core

from kernel_skills.cli import compat
from kernel_skills.cli.commands import app

MOVED = "typer {} changed what kernel_skills/cli/compat.py relies on: {}. Update compat.py (and the typer pin in pyproject.toml)."


def _moved(what: str) -> str:
    return MOVED.format(typer.__version__, what)


def _has_pydantic_layer() -> bool:
    try:
        import typer._coercion  # noqa: F401
    except ImportError:
        return False
    return True


def test_runtime_param_is_the_dataclass_compat_subclasses():
    if not _has_pydantic_layer():
        pytest.skip(f"typer {typer.__version__} has no typer._coercion (no pydantic coercion to skip)")
    from typer._coercion import RuntimeParam

    assert dataclasses.is_dataclass(RuntimeParam), _moved("typer._coercion.RuntimeParam is no longer a dataclass")
    fields = {f.name for f in dataclasses.fields(RuntimeParam)}
    assert {"parameter_info", "annotation"} <= fields, _moved(f"RuntimeParam's fields are now {sorted(fields)}")
    assert "_coerce_value" in getattr(RuntimeParam, "__abstractmethods__", ()), _moved("RuntimeParam._coerce_value is gone")
    assert compat.plain_coercer() is not None, _moved("compat.plain_coercer() found no RuntimeParam")


def test_every_plain_parameter_gets_the_pass_through_coercer():
    if not _has_pydantic_layer():
        pytest.skip(f"typer {typer.__version__} has no typer._coercion (no pydantic coercion to skip)")
    group = typer.main.get_command(app)
    skills = group.commands["skills"]  # type: ignore[attr-defined]
    command = skills.commands["add"]
    ctx = command.make_context("add", ["demo", "--dest", "d", "--claude"], parent=None)
    params = [p for p in command.get_params(ctx) if p.name != "help"]
    for param in params:
        assert hasattr(param, "type_descriptor"), _moved(f"parameter {param.name} has no type_descriptor")
        assert hasattr(param, "_runtime_param"), _moved(f"parameter {param.name} has no _runtime_param slot")
        assert compat.is_plain(param.type_descriptor.annotation), f"{param.name}: {param.type_descriptor.annotation} would need pydantic"
        assert isinstance(param._runtime_param, compat.plain_coercer()), _moved(f"{param.name} kept typer's own coercer")
    assert ctx.params["skills"] == ["demo"] and ctx.params["dest"] == ["d"] and ctx.params["agent_claude"] is True


def test_help_shows_no_python_annotations():
    assert hasattr(typer.core.TyperArgument, "display_type_rich"), _moved("TyperArgument.display_type_rich is gone")
    from typer.testing import CliRunner

    text = CliRunner().invoke(app, ["skills", "add", "--help"]).stdout
    assert "SKILL" in text
    assert "list[str]" not in text and "<str>" not in text, _moved("argument help shows the Python annotation again")


def test_click_exception_classes_are_found_by_name():
    for name in ("ClickException", "UsageError"):
        assert compat.click_class(name), _moved(f"no class named {name} among typer.BadParameter's bases")


def test_add_does_not_import_pydantic(tmp_path):
    # The point of the coercion hook: `kernels skills add` without pydantic's import cost.
    code = (
        "import sys\n"
        f"sys.argv = ['kernels', 'skills', 'add', 'demo', '--dest', {str(tmp_path / 'd')!r}, '-q']\n"
        "from kernel_skills.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('PYDANTIC', 'pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert (tmp_path / "d/demo/SKILL.md").is_file()
    assert "PYDANTIC False" in out, _moved(f"`kernels skills add` imported pydantic ({out!r})")


def test_a_failed_write_of_help_is_seen_as_raised_by_click_echo():
    """The error handler tells a command's --help on a full device from an OSError of ours by
    finding click's echo in the traceback; it must be found there, and only there."""

    class Full:
        def write(self, text):
            raise OSError(28, "No space left on device")

        def flush(self):
            pass

    try:
        typer.echo("help text", file=Full())
    except OSError as exc:
        assert compat.raised_by_click_echo(exc), _moved("click's echo is no longer a function `echo` in a `click.utils` module")
    else:
        pytest.fail("echo swallowed the OSError")
    try:
        open("/nonexistent/kernel-skills-compat")
    except OSError as exc:
        assert not compat.raised_by_click_echo(exc)
