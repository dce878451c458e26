"""`kernels skills add` without typer: the fast path.

Importing typer (and building the app from every command's declaration) takes longer than
the rest of an install of cuda-kernels does (benchmarks/cli_speed.py), so `kernels skills
add` reads its command line here, by hand, when it is in a form this module fully
understands, and calls the same :func:`.add.add` under the same error handler
(:func:`.handler.handle`) as the typer command would.

Understood: SKILL arguments and every option of `add` (add_cmd.py) but --help, given as
click reads them (flags once or more, ``--opt VALUE`` or ``--opt=VALUE``, in any order).
Anything else returns None and typer reads the command line, so that every usage error
and help text stays click's own: an unknown or misspelled option, a flag with a value,
a missing value or one that starts with ``-``, bundled short flags (``-gf``), an empty
argument, ``--``, shell completion, and on Windows any argument click would expand
(``~``, variables, wildcards). tests/cli/test_fast.py runs the same command lines both
ways and checks that the option table below is the one typer builds.
"""

import os
from collections.abc import Sequence
from typing import Any

from ..agents import AGENTS
from . import startup
from .handler import handle, state

FLAG, VALUE, VALUES = "flag", "value", "values"
# Every option of `kernels skills add` but the per-agent flags: (parameter of add.add, kind).
OPTIONS: dict[str, tuple[str, str]] = {
    "--skill": ("skill", VALUES),
    "--agent": ("agent", VALUES),
    "--global": ("global_", FLAG),
    "-g": ("global_", FLAG),
    "--dest": ("dest", VALUES),
    "--force": ("force", FLAG),
    "-f": ("force", FLAG),
    "--link": ("link", FLAG),
    "--list": ("list_", FLAG),
    "--max-file-mb": ("max_file_mb", VALUE),
    "--max-total-mb": ("max_total_mb", VALUE),
    "--max-files": ("max_files", VALUE),
    "--max-depth": ("max_depth", VALUE),
    "--dry-run": ("dry_run", FLAG),
    "-n": ("dry_run", FLAG),
    "--no-lock": ("no_lock", FLAG),
    "--json": ("json_", FLAG),
    "--quiet": ("quiet", FLAG),
    "-q": ("quiet", FLAG),
}
_EXPANDED_ON_WINDOWS = frozenset("~$%*?[")


def parse(argv: Sequence[str]) -> dict[str, Any] | None:
    """The keyword arguments of add.add for ``argv`` (the arguments after `kernels`), or None
    when it is not `skills add ...` in a form this module reads exactly as click would."""
    if len(argv) < 2 or argv[0] != "skills" or argv[1] != "add":
        return None
    agent_flags = {f"--{agent.name}": agent.name for agent in AGENTS}
    picked: set[str] = set()
    skills: list[str] = []
    params: dict[str, Any] = {}
    rest = list(argv[2:])
    while rest:
        token = rest.pop(0)
        if not token:
            return None
        if not token.startswith("-"):
            skills.append(token)
            continue
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in agent_flags and not eq:
            picked.add(agent_flags[name])
            continue
        if name not in OPTIONS:
            return None
        param, kind = OPTIONS[name]
        if kind == FLAG:
            if eq:
                return None
            params[param] = True
            continue
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        if not value or value.startswith("-"):
            return None
        if kind == VALUES:
            params.setdefault(param, []).append(value)
        else:
            params[param] = value  # given twice, the last one counts (as in click)
    params["skills"] = skills or None
    params["agent_flags"] = [agent.name for agent in AGENTS if agent.name in picked]
    return params


def _typer_must_read(argv: Sequence[str]) -> bool:
    """Does click do something with this command line that :func:`parse` does not?"""
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ):
        return True  # a shell asks for completions (_KERNELS_COMPLETE=...)
    if os.name == "nt" and any(_EXPANDED_ON_WINDOWS & set(arg) for arg in argv):
        return True  # click expands ~, variables and wildcards itself on Windows
    return startup.test_hook("no-fast-path") is not None


def run(argv: Sequence[str]) -> int | None:
    """Run `kernels skills add` for ``argv`` and return its exit code, or None when typer must
    read this command line."""
    params = parse(argv)
    if params is None or _typer_must_read(argv):
        return None
    from .add import add

    state["argv"] = list(argv)  # as the root group keeps it (app.Root.parse_args)
    state["json"] = False
    try:
        startup.done()  # from here on a signal is the error handler's, not start-up's
        startup.test_wait("command-wait")
        add(**params)
    except (Exception, KeyboardInterrupt) as exc:
        return handle(exc)
    return 0
