"""The `kernels` app and its `skills` group; the commands register themselves on ``skills_app``
(commands.py imports them all, in the order `kernels skills --help` lists them)."""

from typing import Annotated, Any

import typer

from .. import __version__
from ..output import StdoutError
from . import forward
from .compat import Group, click_class, raised_by_click_echo
from .handler import cannot_print, dumps, handle, json_asked, state

SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _click_exceptions() -> tuple[type[BaseException], ...]:
    # These must pass through the handler untouched so click prints usage errors and honours Exit.
    return (typer.Exit, typer.Abort, *click_class("ClickException"))


def _usage_error_as_json(exc: BaseException) -> None:
    """With --json on the command line, a usage error is also a JSON document on stdout (click
    still prints the usage text on stderr and exits 2), so scripts parse every outcome."""
    if not json_asked() or not isinstance(exc, click_class("UsageError")):
        return
    what = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    fix = "Run the command with --help for its usage."
    typer.echo(dumps({"ok": False, "error": {"what": what, "fix": fix, "exit_code": 2}}))


class Root(Group):
    """The root group: every typer command runs inside it, under the one error handler."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # Kept for usage errors: click raises them before any command has seen --json.
        state["argv"] = list(args)
        return super().parse_args(ctx, args)  # type: ignore[no-any-return]

    def invoke(self, ctx: Any) -> Any:
        from . import startup

        try:
            startup.done()  # from here on a signal is this handler's, not start-up's
            startup.test_wait("command-wait")
            return super().invoke(ctx)
        except (Exception, KeyboardInterrupt) as exc:
            if isinstance(exc, _click_exceptions()):
                _usage_error_as_json(exc)
                raise
            if isinstance(exc, OSError) and not isinstance(exc, (BrokenPipeError, StdoutError)):
                if not exc.filename and raised_by_click_echo(exc):  # a command's --help, on a full device
                    raise typer.Exit(cannot_print(exc)) from exc
            raise typer.Exit(handle(exc)) from exc


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
