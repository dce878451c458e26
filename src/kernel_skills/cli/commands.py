"""The whole typer app: importing a command module registers its commands on the `skills`
group, in this order (the order `kernels skills --help` lists them in)."""

# The import sorter must leave the order be.
# isort: off
from . import add_cmd, manage, sync, outdated, show, validate, publish, backups_cmd, agents_cmd, config_cmd  # noqa: F401

# isort: on
from .app import app as app

__all__ = ["app"]
