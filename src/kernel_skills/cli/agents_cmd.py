"""`kernels skills agents`: the agent table, with this machine's folders."""

from pathlib import Path
from typing import Any

from ..agents import AGENTS, OTHER_READERS, SHARED_AGENT
from ..errors import KernelsError
from .app import skills_app
from .common import setup
from .compat import Command
from .options import JsonOpt


@skills_app.command(cls=Command, name="agents")
def agents_cmd(json_: JsonOpt = False) -> None:
    """Show every supported agent with its project and global skills folders, and the other
    folders it loads skills from (a skill in two folders one agent loads is listed twice).

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
            "also_reads": {
                "project": [str(p) for p in agent.reads(loc, global_=False)[1:]],
                "global": [str(p) for p in agent.reads(loc, global_=True)[1:]],
            },
            "default": agent.name in (defaults or [SHARED_AGENT]),
        }
        for agent in AGENTS
    ]
    if out.json_mode:
        out.json({"ok": True, "agents": rows})
        return
    out.table(
        ["Flag", "Agent", "Project folder", "Global folder (-g)", "Reads .agents/skills", "Also loads"],
        [
            [
                (f"--{r['name']}" + (" *" if r["default"] else ""), "bold"),
                r["agent"],
                show_path(Path(r["project"]), loc),
                show_path(Path(r["global"]), loc),
                "yes" if r["reads_agents_root"] else ("no", "yellow"),
                " ".join(show_path(Path(p), loc) for p in [*r["also_reads"]["project"], *r["also_reads"]["global"]]) or "-",
            ]
            for r in rows
        ],
    )
    for agent in OTHER_READERS:
        folders = [*agent.reads(loc, global_=False), *agent.reads(loc, global_=True)]
        out.line((f"{agent.label} (no flag of its own) loads {' '.join(show_path(p, loc) for p in folders)}.", "dim"))
    out.line(("* = where `kernels skills add` installs when given no agent flag (`kernels skills config` changes it).", "dim"))
