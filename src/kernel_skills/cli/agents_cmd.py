"""`kernels skills agents`: the agent table, with this machine's folders."""

from pathlib import Path
from typing import Any

from ..agents import AGENTS, SHARED_AGENT
from ..errors import KernelsError
from .app import skills_app
from .common import JsonOpt, setup
from .compat import Command


@skills_app.command(cls=Command, name="agents")
def agents_cmd(json_: JsonOpt = False) -> None:
    """Show every supported agent with its project and global skills folders.

    \b
    Example:
      kernels skills agents
    """
    out, roots = setup(json_, False)
    from .. import config
    from ..agents import skills_dir
    from ..output import show_path

    loc = roots.location
    try:
        defaults = config.load(roots.config_file).default_agents
    except KernelsError:
        defaults = None
    rows: list[dict[str, Any]] = [
        {
            "name": agent.name,
            "agent": agent.label,
            "project": str(skills_dir(agent, loc, global_=False)),
            "global": str(skills_dir(agent, loc, global_=True)),
            "reads_agents_root": agent.reads_shared,
            "default": agent.name in (defaults or [SHARED_AGENT]),
        }
        for agent in AGENTS
    ]
    if out.json_mode:
        out.json({"ok": True, "agents": rows})
        return
    out.table(
        ["Flag", "Agent", "Project folder", "Global folder (-g)", "Reads .agents/skills"],
        [
            [
                (f"--{r['name']}" + (" *" if r["default"] else ""), "bold"),
                r["agent"],
                show_path(Path(r["project"]), loc),
                show_path(Path(r["global"]), loc),
                "yes" if r["reads_agents_root"] else ("no", "yellow"),
            ]
            for r in rows
        ],
    )
    out.line(("* = where `kernels skills add` installs when given no agent flag (`kernels skills config` changes it).", "dim"))
