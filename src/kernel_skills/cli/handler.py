"""The one place failures become exit codes and the one-line ``Error:`` message.

:class:`Root` wraps every command: a KernelsError from the core, an OSError, Ctrl-C or
SIGTERM, a closed stdout pipe and any unexpected exception each end here as one line on
stderr (plus a JSON document on stdout with --json) and an exit code. Usage errors that
click raises pass through untouched (click prints them and exits 2).
"""

import os
import sys
from typing import Any

import typer

from ..errors import EXIT_FAILURE, KernelsError
from ..output import StdoutError
from .compat import Group, click_class, raised_by_click_echo

DEBUG_ENV = "KERNELS_DEBUG"
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a C tool whose reader went away

# Per process: whether the running command prints JSON (set by each command as it starts),
# and the raw arguments (kept for usage errors, which click raises before any command runs).
state: dict[str, Any] = {"json": False}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so an install in progress rolls back and cleans up."""


def on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def _click_exceptions() -> tuple[type[BaseException], ...]:
    # These must pass through the handler untouched so click prints usage errors and honours Exit.
    return (typer.Exit, typer.Abort, *click_class("ClickException"))


def report(what: str, fix: str, code: int, exc: BaseException | None = None, *, json_doc: bool = True) -> int:
    """Print ``Error: <what>. <fix>`` on stderr (and the JSON error document with --json); return ``code``."""
    if os.environ.get(DEBUG_ENV) == "1" and exc is not None:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    message = f"{what}. {fix}" if fix else f"{what}."
    from ..output import printable, wants_colour

    message = printable(message, one_line=True)  # names and paths in it may come from a skill

    prefix = typer.style("Error:", fg="red", bold=True) if wants_colour(sys.stderr) else "Error:"
    typer.echo(f"{prefix} {message}", err=True)
    if state["json"] and json_doc:
        typer.echo(dumps({"ok": False, "error": {"what": what, "fix": fix, "exit_code": code}}))
    return code


def stdout_gone() -> bool:
    """Is stdout a pipe (or socket) whose reader has gone away?"""
    if sys.platform == "win32":
        return True  # no poll() there to tell; the usual source of EPIPE in a CLI is its stdout
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return True  # no way to tell: the usual source of EPIPE in a CLI is its stdout


def _json_asked() -> bool:
    """Is --json on the command line (before any ``--``)?"""
    argv = state.get("argv") or []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in argv


def _usage_error_as_json(exc: BaseException) -> None:
    """With --json on the command line, a usage error is also a JSON document on stdout (click
    still prints the usage text on stderr and exits 2), so scripts parse every outcome."""
    if not _json_asked() or not isinstance(exc, click_class("UsageError")):
        return
    what = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    fix = "Run the command with --help for its usage."
    typer.echo(dumps({"ok": False, "error": {"what": what, "fix": fix, "exit_code": 2}}))


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def cannot_print(exc: OSError) -> int:
    """click could not print help, --version or a usage error (`kernels --help > /dev/full`):
    one line on stderr, not a traceback; the exit code."""
    _silence_stdout()  # so the interpreter's final flush does not fail again
    try:
        return report(
            f"cannot write the output to stdout ({exc.strerror or exc})",
            "Free space where stdout goes, or send it elsewhere, then re-run.",
            EXIT_FAILURE,
            exc,
            json_doc=False,
        )
    except OSError:  # stderr cannot be written either: nothing more can be said
        return EXIT_FAILURE


def dumps(data: Any) -> str:
    import json

    return json.dumps(data, indent=2, default=str)


class Root(Group):
    """The one error handler: every command's failure passes through here."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # Kept for usage errors: click raises them before any command has seen --json.
        state["argv"] = list(args)
        return super().parse_args(ctx, args)  # type: ignore[no-any-return]

    def invoke(self, ctx: Any) -> Any:
        from . import startup

        try:
            startup.done()  # from here on a signal is this handler's (below), not start-up's
            startup.test_wait("command-wait")
            return super().invoke(ctx)
        except KernelsError as exc:
            code = report(exc.what, exc.fix, exc.exit_code, exc)
        except BrokenPipeError as exc:
            if not stdout_gone():
                raise typer.Exit(
                    report(
                        f"{exc.strerror or exc} (not on stdout)", "A pipe the command wrote to was closed; re-run it.", EXIT_FAILURE, exc
                    )
                ) from exc
            # The reader of stdout went away (`... | head`). What the command was asked to do
            # is done, so there is nothing to report on stderr; exit as a SIGPIPE'd tool would,
            # and point stdout at /dev/null so the interpreter's final flush does not fail again.
            _silence_stdout()
            code = EXIT_BROKEN_PIPE
        except StdoutError as exc:
            # Nothing more can go to stdout (not even the JSON error document); point it at
            # /dev/null so the interpreter's final flush does not fail with a traceback.
            _silence_stdout()
            code = report(
                f"cannot write the output to stdout ({exc.strerror or exc})",
                "Free space where stdout goes, or send it elsewhere, then re-run.",
                EXIT_FAILURE,
                exc,
                json_doc=False,
            )
        except KeyboardInterrupt as exc:
            terminated = isinstance(exc, Terminated)
            if _json_asked():  # the command may not have started, and so not said it prints JSON
                state["json"] = True
            code = report(
                "terminated" if terminated else "interrupted",
                "Anything half-done was rolled back; re-run the command to do it.",
                EXIT_TERMINATED if terminated else EXIT_INTERRUPTED,
                exc,
            )
        except OSError as exc:
            if not exc.filename and raised_by_click_echo(exc):  # a command's --help, on a full device
                raise typer.Exit(cannot_print(exc)) from exc
            where = f": {exc.filename}" if exc.filename else ""
            code = report(f"{exc.strerror or exc}{where}", "Check that path's permissions and free space, then re-run.", EXIT_FAILURE, exc)
        except Exception as exc:
            if isinstance(exc, _click_exceptions()):
                _usage_error_as_json(exc)
                raise
            code = report(
                f"unexpected {type(exc).__name__}: {exc}",
                f"This is a bug in kernel-skills; re-run with {DEBUG_ENV}=1 and report the traceback.",
                EXIT_FAILURE,
                exc,
            )
        raise typer.Exit(code)
