"""The `kernels` command line: parse the arguments, call the core, print the result.

No logic lives here: every decision is the core's (agents, skill, sources, install, hub,
config). Module map:

- entry.py      main(), the console script: forwarding, the fast path, else the typer app
- fast.py       `kernels skills add` without typer: the common forms, read by hand (else typer reads them)
- commands.py   the typer app with every command registered on it (importing it loads typer)
- app.py        the `kernels` app, its `skills` group, --version, the root group that runs every command
- forward.py    sharing `kernels` with Hugging Face's package: every command but `skills` goes to its CLI
- handler.py    the one error handler: KernelsError, OSError, signals, EPIPE -> exit codes
- compat.py     everything that touches typer/click internals (pinned typer; tests/cli/test_compat.py)
- options.py    the options the commands declare alike, and the per-agent flags (typer)
- common.py     helpers the commands share: setup, source contexts, printing a plan (no typer)
- lockhooks.py  how add, update and remove record their changes in skills-lock.json
- add.py        the work of `kernels skills add` (no typer: both paths call it); add_cmd.py declares it to typer
- manage.py (list, remove, update), sync.py, outdated.py, show.py, validate.py, publish.py, backups_cmd.py,
  agents_cmd.py, config_cmd.py: one module per command or group of commands

Importing this package loads no typer: `kernels skills add` must not pay for it. Modules
that cost start-up time (rich, yaml, platformdirs, the installer, the Hub client) are
imported inside the commands, so `kernels --help` stays fast.
"""

from . import startup  # noqa: F401  (first: a signal while the rest imports is handled; see startup.py)
from .entry import main as main

__all__ = ["main"]
