"""The `kernels` app and its `skills` group; the commands register themselves on ``skills_app``."""

import signal
from typing import Annotated

import typer

from .. import __version__
from .compat import Group
from .handler import Root, on_sigterm, state

SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

app = typer.Typer(
    cls=Root,
    name="kernels",
    help="Install agent skills (starting with cuda-kernels) into Claude Code, Codex, OpenCode and other coding agents.",
    epilog="Start with: kernels skills add cuda-kernels --claude. Exit codes: 0 done; 1 failed (one 'Error:' line on "
    'stderr); 2 a command-line mistake. With --json, stdout is one JSON document that has "ok".',
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain click help: rich's help renderer costs ~0.1 s of start-up
    pretty_exceptions_enable=False,
    context_settings=SETTINGS,
)
skills_app = typer.Typer(
    cls=Group,
    help="Install, list, update, remove, check and publish agent skills.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=SETTINGS,
)
app.add_typer(skills_app, name="skills")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kernel-skills {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", "-V", help="Show the version and exit.", is_eager=True, callback=_version)] = False,
) -> None:
    """Install agent skills (starting with cuda-kernels) into coding agents.

    Start with: kernels skills add cuda-kernels --claude
    """
    state["json"] = False


def main() -> None:
    """Console-script entry point (`kernels`, `kernel-skills`, `python -m kernel_skills`)."""
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, on_sigterm)
    app()
