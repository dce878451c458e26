"""`kernels skills config`: show or change the user's settings."""

from typing import Annotated

import typer

from ..agents import SHARED_AGENT
from ..errors import KernelsError
from .app import skills_app
from .common import setup
from .compat import Command
from .options import JsonOpt, QuietOpt


@skills_app.command(cls=Command, name="config")
def config_cmd(
    key: Annotated[str | None, typer.Argument(metavar="KEY", help="Setting to show or change: default_agents.", show_default=False)] = None,
    values: Annotated[list[str] | None, typer.Argument(metavar="VALUE", help="New value(s).", show_default=False)] = None,
    unset: Annotated[bool, typer.Option("--unset", help="Remove KEY from the config file.")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Show or change settings (stored in config.yaml in your user config folder).

    A change rewrites the file: unknown keys are kept, YAML comments are not. A config.yaml
    that is a symlink (dotfiles) is written through the link.

    \b
    Examples:
      kernels skills config                                  # show everything
      kernels skills config default_agents claude agents     # `add` with no flags targets these
      kernels skills config default_agents --unset
    """
    out, roots = setup(json_, quiet)
    from .. import config

    if key is None:
        if values or unset:
            raise KernelsError("--unset and values need a KEY", f"Known keys: {', '.join(config.KEYS)}.", usage=True)
        current = config.load(roots.config_file)
    else:
        config.check_key(key)
        if unset and values:
            raise KernelsError(
                "give either values or --unset, not both",
                f"`kernels skills config {key} --unset` removes it; `kernels skills config {key} VALUE...` sets it.",
                usage=True,
            )
        if unset or values:
            current = config.set_value(roots.config_file, key, None if unset else values)
        else:
            current = config.load(roots.config_file)
    if out.json_mode:
        out.json({"ok": True, **current.to_json()})
        return
    agents = current.default_agents
    shown = " ".join(agents) if agents else f"(not set: `add` uses the shared {SHARED_AGENT} root, .agents/skills)"
    out.line(("default_agents: ", "bold"), shown)
    out.line(("config file: ", "dim"), str(current.path))
