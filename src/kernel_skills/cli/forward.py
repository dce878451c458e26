"""Sharing the `kernels` command with Hugging Face's `kernels` package.

Both packages install a ``kernels`` console script; whichever was installed last owns it.
When ours does and Hugging Face's package is installed too, ``kernels skills ...`` (and
``kernels``, ``kernels --help``, ``kernels --version``) stay ours and every other command
is handed, with the same arguments, to Hugging Face's CLI, whose exit code becomes ours.

Hugging Face's CLI is found through the installed distribution's metadata (its
``console_scripts`` entry point named ``kernels``, in its dist-info folder), never through a
hard-coded module path:
kernels 0.17 ships it as ``kernels.cli:main``, 0.19 as ``kernels._internals.cli:main``.
Nothing of Hugging Face's package is imported unless a command is forwarded (it imports
torch and sigstore), so ``kernels --help`` stays fast; ``kernels skills ...`` does not even
read the metadata.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from ..records import record

DISTRIBUTION = "kernels"  # Hugging Face's package on PyPI
SCRIPT = "kernels"
# The first arguments this package answers itself; anything else goes to Hugging Face's CLI.
OURS = frozenset({"skills", "-h", "--help", "-V", "--version"})
# Where the metadata is looked up (None: sys.path, as the import system does). Tests point it elsewhere.
SEARCH_PATH: list[str] | None = None


@record(frozen=True)
class HuggingFaceCli:
    """Hugging Face's installed `kernels` command line: its version and entry point."""

    version: str
    target: str  # "module:function", as its console_scripts entry point says


def is_ours(argv: Sequence[str]) -> bool:
    """Does this command line belong to kernel-skills (no arguments, `skills`, --help, --version)?"""
    return not argv or argv[0] in OURS


def find() -> HuggingFaceCli | None:
    """Hugging Face's `kernels` CLI if its package is installed and importable, else None.

    Reads the installed distribution's ``kernels-<version>.dist-info/entry_points.txt`` on the
    import path, in import order, as pip writes it (wheels and editable installs alike).
    Reading the two small files directly costs well under a millisecond; importing
    importlib.metadata to read them would add ~25 ms of CPU to every `kernels --help`.
    """
    import importlib.util

    for entry in SEARCH_PATH if SEARCH_PATH is not None else sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            stem = name[: -len(".dist-info")] if name.endswith(".dist-info") else ""
            dist, _, version = stem.partition("-")
            if dist.lower().replace("-", "_").replace(".", "_") != DISTRIBUTION or not version:
                continue
            target = _console_script(os.path.join(entry or ".", name, "entry_points.txt"), SCRIPT)
            top = (target or "").split(":")[0].split(".")[0]
            if not top or top == "kernel_skills":  # no such script, or ours: never forward to ourselves
                continue
            try:
                # find_spec of a top-level name locates it without importing it.
                if importlib.util.find_spec(top) is None:
                    continue  # metadata left behind by a half-removed install
            except (ImportError, ValueError):
                continue
            return HuggingFaceCli(version=version, target=target or "")
    return None


def _console_script(path: str, script: str) -> str | None:
    """The ``module:function`` of ``script`` in an entry_points.txt (an INI file), or None."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    section = None
    for raw in lines:
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == "console_scripts" and "=" in line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            if name.strip() == script:
                return value.split("[")[0].strip()  # drop any [extras]
    return None


def run(cli: HuggingFaceCli, argv: Sequence[str]) -> int:
    """Run Hugging Face's CLI in this process with ``argv`` (as its own console script would);
    return its exit code. Its output, errors and exit code are its own."""
    try:
        import importlib

        module, _, attrs = cli.target.partition(":")
        main: Any = importlib.import_module(module)
        for attr in filter(None, attrs.strip().split(".")):
            main = getattr(main, attr)
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
