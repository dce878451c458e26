"""The one place failures become exit codes and the one-line ``Error:`` message.

:func:`handle` is the error handler every command runs under (app.Root wraps every typer
command in it, fast.py the fast path of `kernels skills add`): a KernelsError from the
core, an OSError, Ctrl-C or SIGTERM, a closed stdout pipe and any unexpected exception
each end here as one line on stderr (plus a JSON document on stdout with --json) and an
exit code. Usage errors that click raises pass it by (click prints them and exits 2).

No typer at import: the fast path must not load it. Printing an error does load it
(:func:`report` writes through click's echo, so an error line is the same bytes on either
path); a failure can afford the time.
"""

import os
import sys
from typing import Any

from ..errors import EXIT_FAILURE, KernelsError
from ..output import StdoutError

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


def report(what: str, fix: str, code: int, exc: BaseException | None = None, *, json_doc: bool = True) -> int:
    """Print ``Error: <what>. <fix>`` on stderr (and the JSON error document with --json); return ``code``."""
    if os.environ.get(DEBUG_ENV) == "1" and exc is not None:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    message = f"{what}. {fix}" if fix else f"{what}."
    from ..output import printable, wants_colour

    message = printable(message, one_line=True)  # names and paths in it may come from a skill
    import typer

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


def json_asked() -> bool:
    """Is --json on the command line (before any ``--``)?"""
    argv = state.get("argv") or []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in argv


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


def handle(exc: BaseException) -> int:
    """Report a command's failure ``exc`` (one line on stderr, the JSON error document with
    --json); return the exit code. Ctrl-C, SIGTERM and a reader of stdout gone away included."""
    if isinstance(exc, KernelsError):
        return report(exc.what, exc.fix, exc.exit_code, exc)
    if isinstance(exc, BrokenPipeError):
        if not stdout_gone():
            return report(f"{exc.strerror or exc} (not on stdout)", "A pipe the command wrote to was closed; re-run it.", EXIT_FAILURE, exc)
        # The reader of stdout went away (`... | head`). What the command was asked to do
        # is done, so there is nothing to report on stderr; exit as a SIGPIPE'd tool would,
        # and point stdout at /dev/null so the interpreter's final flush does not fail again.
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    if isinstance(exc, StdoutError):
        # Nothing more can go to stdout (not even the JSON error document); point it at
        # /dev/null so the interpreter's final flush does not fail with a traceback.
        _silence_stdout()
        return report(
            f"cannot write the output to stdout ({exc.strerror or exc})",
            "Free space where stdout goes, or send it elsewhere, then re-run.",
            EXIT_FAILURE,
            exc,
            json_doc=False,
        )
    if isinstance(exc, KeyboardInterrupt):
        terminated = isinstance(exc, Terminated)
        if json_asked():  # the command may not have started, and so not said it prints JSON
            state["json"] = True
        return report(
            "terminated" if terminated else "interrupted",
            "Anything half-done was rolled back; re-run the command to do it.",
            EXIT_TERMINATED if terminated else EXIT_INTERRUPTED,
            exc,
        )
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return report(f"{exc.strerror or exc}{where}", "Check that path's permissions and free space, then re-run.", EXIT_FAILURE, exc)
    return report(
        f"unexpected {type(exc).__name__}: {exc}",
        f"This is a bug in kernel-skills; re-run with {DEBUG_ENV}=1 and report the traceback.",
        EXIT_FAILURE,
        exc,
    )
