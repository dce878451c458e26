"""The `kernels` command line: parse the arguments, call the core, print the result.

No logic lives here: every decision is the core's (agents, skill, sources, install, hub,
config). Module map:

- app.py        the `kernels` app, its `skills` group, --version, main()
- forward.py    sharing `kernels` with Hugging Face's package: every command but `skills` goes to its CLI
- handler.py    the one error handler: KernelsError, OSError, signals, EPIPE -> exit codes
- compat.py     everything that touches typer/click internals (pinned typer; tests/cli/test_compat.py)
- common.py     shared options, the per-agent flags, source contexts, printing a plan
- lockhooks.py  --no-lock, and how add, update and remove record their changes in skills-lock.json
- add.py, manage.py (list, remove, update), sync.py, outdated.py, show.py, validate.py, publish.py, backups_cmd.py,
  agents_cmd.py, config_cmd.py: one module per command or group of commands

Modules that cost start-up time (rich, yaml, platformdirs, the installer, the Hub client)
are imported inside the commands, so `kernels --help` stays fast.
"""

# Importing a command module registers its commands on the `skills` group, in this order
# (the order `kernels skills --help` lists them in), so the import sorter must leave it be.
# isort: off
from . import startup  # noqa: F401  (first: a signal while the rest imports is handled; see startup.py)
from . import add, manage, sync, outdated, show, validate, publish, backups_cmd, agents_cmd, config_cmd  # noqa: F401

# isort: on
from .app import app as app
from .app import main as main

__all__ = ["app", "main"]
