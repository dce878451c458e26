"""The `kernels` app and its `skills` group; the commands register themselves on ``skills_app``."""

import signal
import sys
from typing import Annotated, Any

import typer

from .. import __version__
from . import forward, startup
from .compat import Group, click_class
from .handler import Root, cannot_print, on_sigterm, state

SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Kernels(Root):
    """The root group: its help also says who answers the commands that are not `skills`."""

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        super().format_epilog(ctx, formatter)
        with formatter.section("Hugging Face's kernels"):
            formatter.write_text(forward.help_text(forward.find()))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # Reached for a command that is not ours only when Hugging Face's CLI is not installed
        # (main() forwards it otherwise): say where such commands come from.
        try:
            return super().resolve_command(ctx, args)
        except click_class("UsageError") as exc:
            if args and not args[0].startswith("-") and hasattr(exc, "message"):
                exc.message += (
                    f" `kernels {args[0]}` may be a command of Hugging Face's kernels package, which is not installed "
                    "here (pip install kernels); this package provides `kernels skills`."
                )
            raise


app = typer.Typer(
    cls=Kernels,
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
        line = forward.version_line(forward.find())
        if line:
            typer.echo(line)
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
    """Console-script entry point (`kernels`, `kernel-skills`, `python -m kernel_skills`).

    A command other than `skills` goes to Hugging Face's `kernels` CLI when its package is
    installed (cli/forward.py); everything else is ours.
    """
    argv = sys.argv[1:]
    if not forward.is_ours(argv):
        hf = forward.find()
        if hf is not None:
            sys.exit(forward.run(hf, argv))
    # SIGBREAK: Ctrl-Break on Windows, which would otherwise end the process mid-install.
    # While start-up's handlers are armed they stay (one line, exit 143); the command's take
    # over as the error handler does (startup.done()).
    for name in ("SIGTERM", "SIGBREAK"):
        if hasattr(signal, name):
            startup.hand_over(getattr(signal, name), on_sigterm)
    startup.test_wait("main-wait")
    try:
        app()
    except OSError as exc:
        # Only what click prints before any command runs gets here (help, --version, a usage
        # error); a command's OSError is the error handler's (handler.Root.invoke).
        sys.exit(cannot_print(exc))
