"""Printing for the CLI: rich for people, JSON for machines, nothing with -q.

Kept apart from the core so the core never imports rich; rich itself is imported only
when something is printed for a person.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .agents import Location

# C0 and C1 control characters, DEL, and the invisible marks that reorder or hide text
# (bidi overrides and isolates, zero-width spaces): a skill's name, description or file
# name holding them could clear the screen, retitle the window or disguise a path.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
_CONTROL_OR_NEWLINE = re.compile(f"[\\t\\n{_CONTROL.pattern[1:-1]}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character written as a visible escape (``\\x1b``).

    Everything printed for a person passes through here, because names, descriptions and
    file names come from skills, and skills are untrusted. ``one_line`` escapes newlines
    and tabs too (error lines, where a newline could forge a second line)."""
    return (_CONTROL_OR_NEWLINE if one_line else _CONTROL).sub(_escape, text)


def show_path(path: Path, loc: Location) -> str:
    """A path as the user would type it: relative to the cwd or ~/..., whichever is closer."""
    best: str | None = None
    for base, prefix in sorted(((loc.cwd, ""), (loc.home, "~/")), key=lambda item: -len(item[0].parts)):
        try:
            rel = path.relative_to(base)
        except ValueError:
            continue
        best = (prefix + str(rel)) if str(rel) != "." else (prefix.rstrip("/") or ".")
        break
    return best if best is not None else str(path)


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size} B"


Parts = Sequence["str | tuple[str, str]"]
PIPED_WIDTH = 10_000


def _raise_broken_pipe() -> None:
    raise BrokenPipeError(32, "Broken pipe")


class Output:
    """Where a command's output goes. Lines for people are styled by rich on a terminal;
    piped, they are the same text without styling, written directly (importing rich
    costs more start-up time than a whole `kernels skills add` otherwise takes)."""

    def __init__(self, *, json_mode: bool = False, quiet: bool = False) -> None:
        self.json_mode = json_mode
        self.quiet = quiet
        self._consoles: dict[bool, Any] = {}

    def console(self, *, stderr: bool = False) -> Any:
        if stderr not in self._consoles:
            from rich.console import Console

            stream = sys.stderr if stderr else sys.stdout
            # Piped output is for grep and logs: a row stays one line however long its path
            # (a table is only as wide as its cells, so the large width adds no padding).
            console = Console(stderr=stderr, highlight=False, soft_wrap=True, width=None if _styled(stream) else PIPED_WIDTH)
            # rich ends the process itself (exit 1) when the reader of its stream goes away;
            # raise instead, so the CLI's one handler decides (exit 141, as for plain output).
            console.on_broken_pipe = _raise_broken_pipe  # type: ignore[method-assign]
            self._consoles[stderr] = console
        return self._consoles[stderr]

    @property
    def human(self) -> bool:
        return not (self.json_mode or self.quiet)

    def _print(self, parts: Parts, *, stderr: bool = False) -> None:
        stream = sys.stderr if stderr else sys.stdout
        with _stdout_errors(stderr):
            if _styled(stream):
                self.console(stderr=stderr).print(_text(parts))
            else:
                stream.write(printable("".join(p[0] if isinstance(p, tuple) else p for p in parts)) + "\n")

    def line(self, *parts: str | tuple[str, str]) -> None:
        """One line for people: plain strings and (text, style) pairs; markup is not parsed."""
        if self.human:
            self._print(parts)

    def error_line(self, *parts: str | tuple[str, str]) -> None:
        """A line about a failure: on stderr, shown even with -q (not with --json)."""
        if not self.json_mode:
            self._print(parts, stderr=True)

    def note(self, text: str) -> None:
        if self.human:
            self._print([(text, "dim")], stderr=True)

    def warn(self, text: str) -> None:
        if self.human:
            self._print([("Warning: ", "yellow bold"), text], stderr=True)

    def json(self, data: Any) -> None:
        with _stdout_errors(False):
            sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
            sys.stdout.flush()

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[str | tuple[str, str]]],
        *,
        title: str | None = None,
    ) -> None:
        if not self.human:
            return
        from rich.table import Table

        table = Table(title=title, title_justify="left", box=None, header_style="bold", pad_edge=False)
        # Every column may fold: on a narrow terminal a long path wraps onto more lines
        # instead of pushing other columns out of the table or being cut off.
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(_text([cell]) for cell in row))
        with _stdout_errors(False):
            self.console().print(table)


class StdoutError(OSError):
    """Writing the command's output to stdout failed (a full disk behind `> file`,
    /dev/full): the handler says so in one line, not as a failure of the command's work."""


@contextmanager
def _stdout_errors(stderr: bool) -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        raise  # the reader went away: handled as SIGPIPE is
    except OSError as exc:
        if stderr or isinstance(exc, StdoutError) or exc.filename is not None:
            raise
        raise StdoutError(exc.errno, exc.strerror) from exc


def isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _styled(stream: Any) -> bool:
    """Style for terminals, or when FORCE_COLOR asks for it (rich's own convention)."""
    return bool(os.environ.get("FORCE_COLOR")) or isatty(stream)


def wants_colour(stream: Any) -> bool:
    """ANSI colour on this stream: styled (above) unless NO_COLOR is set (no-color.org)."""
    return not os.environ.get("NO_COLOR") and _styled(stream)


def _text(parts: Sequence[str | tuple[str, str]]) -> Any:
    from rich.text import Text

    text = Text()  # Text.append never parses [markup], so "[bold]" in a description stays text
    for part in parts:
        if isinstance(part, tuple):
            text.append(printable(part[0]), style=part[1])
        else:
            text.append(printable(part))
    return text
