"""The one error type of the core: what happened, and how to fix it.

Core modules raise :class:`KernelsError`; the CLI has a single handler that prints
``Error: <what>. <fix>`` on stderr and exits 1 (2 for usage errors).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class KernelsError(Exception):
    """A failure the user can act on.

    ``what`` says what happened (naming the path or value involved); ``fix`` says what to
    do about it. ``usage`` marks errors in the command line itself (exit code 2).
    """

    def __init__(self, what: str, fix: str = "", *, usage: bool = False) -> None:
        self.what = what[:-1] if what.endswith(".") and not what.endswith("..") else what
        self.fix = fix.strip()
        self.usage = usage
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return f"{self.what}. {self.fix}" if self.fix else f"{self.what}."

    @property
    def exit_code(self) -> int:
        return EXIT_USAGE if self.usage else EXIT_FAILURE

    def to_json(self) -> dict[str, object]:
        return {"what": self.what, "fix": self.fix, "exit_code": self.exit_code}
