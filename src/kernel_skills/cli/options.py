"""The options the commands declare alike, as typer annotations, and the per-agent flags.

The only module of shared command-line declarations that imports typer; the helpers the
commands share (common.py) do not, so the fast path of `kernels skills add` (fast.py) can
use them without loading typer.
"""

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ..agents import AGENTS, agent_names, user_hint

_AGENT_HELP = "Target an agent by name (repeatable): " + ", ".join(agent_names()) + "."
AgentOpt = Annotated[list[str] | None, typer.Option("--agent", metavar="NAME", help=_AGENT_HELP, show_default=False)]
GlobalOpt = Annotated[bool, typer.Option("--global", "-g", help="Use the agents' user-wide folders instead of the project's.")]
GlobalOnlyOpt = Annotated[bool, typer.Option("--global", "-g", help="Only the agents' user-wide folders.")]
DestOpt = Annotated[
    list[str] | None,
    typer.Option("--dest", metavar="DIR", help="Also use DIR as a skills folder: DIR/<skill> (repeatable).", show_default=False),
]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Replace existing installs (user-edited ones are backed up first).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", "-n", help="Print what would happen; write nothing.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print a machine-readable JSON result.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--skill",
        metavar="NAME",
        help="Pick skills from a folder of skills or a Hub repo (repeatable; '*' = all of them).",
        show_default=False,
    ),
]
# Plain strings, parsed by safety.Limits: a float option would make typer import pydantic.
MaxFileOpt = Annotated[
    str | None,
    typer.Option(
        "--max-file-mb",
        metavar="MB",
        help="Refuse a skill from a folder or the Hub holding a file over MB megabytes (default 10).",
        show_default=False,
    ),
]
MaxTotalOpt = Annotated[
    str | None,
    typer.Option(
        "--max-total-mb",
        metavar="MB",
        help="Refuse a skill from a folder or the Hub over MB megabytes in all (default 50).",
        show_default=False,
    ),
]
MaxFilesOpt = Annotated[
    str | None,
    typer.Option(
        "--max-files",
        metavar="N",
        help="Refuse a skill from a folder or the Hub of more than N files (default 5000).",
        show_default=False,
    ),
]
MaxDepthOpt = Annotated[
    str | None,
    typer.Option(
        "--max-depth",
        metavar="N",
        help="Refuse a skill from a folder or the Hub with paths more than N levels deep (default 32).",
        show_default=False,
    ),
]


def agent_flags(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command one --<agent> flag per row of the agent table.

    The command declares a parameter ``agent_flags``; it receives the names of the flags
    that were given. Adding a row to agents.AGENTS adds the flag everywhere.
    """
    signature = inspect.signature(func)
    flags = [
        inspect.Parameter(
            f"agent_{agent.name}",
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=False,
            annotation=Annotated[
                bool, typer.Option(f"--{agent.name}", help=f"{agent.label}: {agent.project} (global: {user_hint(agent)}).")
            ],
        )
        for agent in AGENTS
    ]
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        params += flags if param.name == "agent_flags" else [param]

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        picked = [agent.name for agent in AGENTS if kwargs.pop(f"agent_{agent.name}", False)]
        return func(agent_flags=picked, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return wrapper


NoLockOpt = Annotated[bool, typer.Option("--no-lock", help="Leave skills-lock.json as it is for this command.")]
