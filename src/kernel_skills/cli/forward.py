"""Sharing the `kernels` command with Hugging Face's `kernels` package.

Both packages install a ``kernels`` console script; whichever was installed last owns it.
When ours does and Hugging Face's package is installed too, ``kernels skills ...`` (and
``kernels``, ``kernels --help``, ``kernels --version``) stay ours and every other command
is handed, with the same arguments, to Hugging Face's CLI, whose exit code becomes ours.

Hugging Face's CLI is found through the installed distribution's metadata (its
``console_scripts`` entry point named ``kernels``), never through a hard-coded module path:
kernels 0.17 ships it as ``kernels.cli:main``, 0.19 as ``kernels._internals.cli:main``.
Nothing of Hugging Face's package is imported unless a command is forwarded (it imports
torch and sigstore), so ``kernels --help`` stays fast; ``kernels skills ...`` does not even
read the metadata.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DISTRIBUTION = "kernels"  # Hugging Face's package on PyPI
SCRIPT = "kernels"
# The first arguments this package answers itself; anything else goes to Hugging Face's CLI.
OURS = frozenset({"skills", "-h", "--help", "-V", "--version"})
# Where the metadata is looked up (None: sys.path, as the import system does). Tests point it elsewhere.
SEARCH_PATH: list[str] | None = None


@dataclass(frozen=True)
class HuggingFaceCli:
    """Hugging Face's installed `kernels` command line: its version and entry point."""

    version: str
    entry_point: Any  # importlib.metadata.EntryPoint (importing that module costs start-up time)

    @property
    def target(self) -> str:
        return str(self.entry_point.value)


def is_ours(argv: Sequence[str]) -> bool:
    """Does this command line belong to kernel-skills (no arguments, `skills`, --help, --version)?"""
    return not argv or argv[0] in OURS


def find() -> HuggingFaceCli | None:
    """Hugging Face's `kernels` CLI if its package is installed and importable, else None."""
    import importlib.metadata
    import importlib.util

    path = SEARCH_PATH if SEARCH_PATH is not None else sys.path
    for dist in importlib.metadata.distributions(name=DISTRIBUTION, path=path):
        scripts = [ep for ep in dist.entry_points if ep.group == "console_scripts" and ep.name == SCRIPT]
        if not scripts:
            continue
        entry = scripts[0]
        top = entry.value.split(":")[0].split(".")[0]
        if top == "kernel_skills":  # never forward to ourselves
            continue
        try:
            # find_spec of a top-level name locates it without importing it.
            if importlib.util.find_spec(top) is None:
                continue  # metadata left behind by a half-removed install
        except (ImportError, ValueError):
            continue
        return HuggingFaceCli(version=dist.version, entry_point=entry)
    return None


def run(cli: HuggingFaceCli, argv: Sequence[str]) -> int:
    """Run Hugging Face's CLI in this process with ``argv`` (as its own console script would);
    return its exit code. Its output, errors and exit code are its own."""
    try:
        main = cli.entry_point.load()
    except Exception as exc:  # a broken install: say so in one line, as every other failure
        from .handler import report

        return report(
            f"`kernels {argv[0]}` is a command of Hugging Face's kernels {cli.version}, whose command line "
            f"({cli.target}) failed to load: {type(exc).__name__}: {exc}",
            "Repair it with `pip install --force-reinstall kernels`; `kernels skills ...` works without it.",
            1,
            exc,
            json_doc=False,
        )
    sys.argv = [sys.argv[0] if sys.argv else SCRIPT, *argv]
    try:
        code = main()
    except SystemExit as exc:
        code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints the message and exits 1
    return 1


def help_text(cli: HuggingFaceCli | None) -> str:
    """The paragraph `kernels --help` ends with: who answers the commands that are not `skills`."""
    if cli is None:
        return (
            "Hugging Face's kernels package is not installed. Its commands (kernels lock, kernels download, ...) "
            "come with it: pip install kernels. With both installed and this package installed last, `kernels` "
            "runs `skills` itself and passes every other command to Hugging Face's CLI."
        )
    return (
        f"Every command other than `skills` (kernels lock, kernels download, ...) is passed, with its arguments, "
        f"to Hugging Face's kernels {cli.version}, installed here too, and its exit code is returned. "
        f"`kernels COMMAND --help` shows that command's own help."
    )


def version_line(cli: HuggingFaceCli | None) -> str | None:
    return None if cli is None else f"kernels {cli.version} (Hugging Face; runs every command but `skills`)"
