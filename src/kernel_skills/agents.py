"""Where each coding agent looks for skills: the target table, as data.

Adding an agent is one line in :data:`AGENTS`; the CLI grows a ``--<name>`` flag from it.
``project`` is relative to the project (the current directory); ``user`` is the
``--global`` location, where ``~`` is the home directory and ``{VAR:default}`` means
``$VAR`` when it is set and non-empty, else ``default``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .errors import KernelsError

SHARED_AGENT = "agents"
# Agents documented to load skills from the shared .agents/skills root.
SHARED_READERS = "Codex, OpenCode, Cursor, Gemini CLI, GitHub Copilot, Windsurf, Goose, Roo Code and Cline"


@dataclass(frozen=True)
class Agent:
    name: str
    label: str
    project: str
    user: str
    reads_shared: bool  # also loads skills from the shared .agents/skills root


# fmt: off
AGENTS: tuple[Agent, ...] = (
    Agent("claude",   "Claude Code",       ".claude/skills",   "{CLAUDE_CONFIG_DIR:~/.claude}/skills",         reads_shared=False),
    Agent("codex",    "Codex",             ".agents/skills",   "~/.agents/skills",                             reads_shared=True),
    Agent("opencode", "OpenCode",          ".opencode/skills", "{XDG_CONFIG_HOME:~/.config}/opencode/skills",  reads_shared=True),
    Agent("cursor",   "Cursor",            ".cursor/skills",   "~/.cursor/skills",                             reads_shared=True),
    Agent("gemini",   "Gemini CLI",        ".gemini/skills",   "~/.gemini/skills",                             reads_shared=True),
    Agent("copilot",  "GitHub Copilot",    ".github/skills",   "~/.copilot/skills",                            reads_shared=True),
    Agent("windsurf", "Windsurf",          ".windsurf/skills", "~/.codeium/windsurf/skills",                   reads_shared=True),
    Agent("kiro",     "Kiro",              ".kiro/skills",     "~/.kiro/skills",                               reads_shared=False),
    Agent("agents",   "shared root",       ".agents/skills",   "~/.agents/skills",                             reads_shared=True),
)
# fmt: on

_BY_NAME = {agent.name: agent for agent in AGENTS}
_VAR = re.compile(r"\{(\w+):([^}]*)\}")


@dataclass(frozen=True)
class Location:
    """The part of the environment that decides where skills dirs are."""

    cwd: Path
    home: Path
    env: Mapping[str, str] = field(default_factory=dict)

    def expand(self, template: str) -> Path:
        text = _VAR.sub(lambda m: self._var(m.group(1)) or m.group(2), template)
        if text == "~" or text.startswith(("~/", "~\\")):
            return self.home / text[2:]
        path = Path(text)
        return path if path.is_absolute() else self.cwd / path

    def _var(self, name: str) -> str | None:
        value = self.env.get(name)
        # The XDG base-directory spec: a relative path in an XDG_* variable is invalid and
        # ignored, so OpenCode looks in ~/.config, not in a folder under the current one.
        if value and name.startswith("XDG_") and not os.path.isabs(value):
            return None
        return value


def user_hint(agent: Agent) -> str:
    """The --global folder as people write it: ~/.claude/skills, or $CLAUDE_CONFIG_DIR/skills if set."""
    plain = _VAR.sub(lambda m: m.group(2), agent.user)
    override = _VAR.sub(lambda m: "$" + m.group(1), agent.user)
    return plain if plain == override else f"{plain}, or {override} if set"


def agent_names() -> list[str]:
    return [agent.name for agent in AGENTS]


def get_agent(name: str) -> Agent:
    agent = _BY_NAME.get(name.strip().lower().lstrip("-"))
    if agent is None:
        raise KernelsError(
            f"unknown agent '{name}'",
            f"Valid agents: {', '.join(agent_names())}.",
            usage=True,
        )
    return agent


def skills_dir(agent: Agent, loc: Location, *, global_: bool) -> Path:
    return loc.expand(agent.user) if global_ else loc.cwd / agent.project


@dataclass
class Target:
    """One skills directory to act on, and who reads it."""

    path: Path
    scope: str  # "project", "global" or "dest"
    agents: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return ", ".join(self.agents) if self.agents else "--dest"


def _key(path: Path) -> str:
    # Two spellings of one directory (a symlinked .claude, say) must be written once.
    return os.path.normcase(os.path.realpath(path))


def dedupe(targets: Iterable[Target]) -> list[Target]:
    merged: dict[str, Target] = {}
    for target in targets:
        key = _key(target.path)
        if key in merged:
            for name in target.agents:
                if name not in merged[key].agents:
                    merged[key].agents.append(name)
        else:
            merged[key] = Target(target.path, target.scope, list(target.agents))
    return list(merged.values())


def select_targets(names: Sequence[str], loc: Location, *, global_: bool, dests: Sequence[Path] = ()) -> list[Target]:
    """The skills dirs for the named agents (project or --global) plus every --dest."""
    scope = "global" if global_ else "project"
    targets = [Target(skills_dir(get_agent(n), loc, global_=global_), scope, [get_agent(n).name]) for n in names]
    targets += [Target(d if d.is_absolute() else loc.cwd / d, "dest") for d in dests]
    return dedupe(targets)


def known_targets(loc: Location, *, scopes: Sequence[str] = ("project", "global")) -> list[Target]:
    """Every skills dir of every agent, in the given scopes (what list/update scan)."""
    targets = [Target(skills_dir(agent, loc, global_=scope == "global"), scope, [agent.name]) for scope in scopes for agent in AGENTS]
    return dedupe(targets)


def not_reading_shared() -> list[Agent]:
    """Agents that ignore the shared .agents/skills root (they need their own flag)."""
    return [agent for agent in AGENTS if not agent.reads_shared]


def add_targets(
    names: Sequence[str],
    loc: Location,
    *,
    global_: bool,
    dests: Sequence[Path] = (),
    default_agents: Sequence[str] | None = None,
) -> tuple[list[Target], str | None]:
    """Targets for `add`: the flags given, else the configured defaults, else the shared root.

    The second value is a note for the user when the shared root was chosen for them.
    """
    if names or dests:
        return select_targets(names, loc, global_=global_, dests=dests), None
    if default_agents:
        return select_targets(default_agents, loc, global_=global_), None
    targets = select_targets([SHARED_AGENT], loc, global_=global_)
    others = not_reading_shared()
    note = (
        f"This goes into the shared .agents/skills root, which {SHARED_READERS} read. "
        f"{' and '.join(a.label for a in others)} do not: add {' '.join('--' + a.name for a in others)} for them, "
        f"or set your defaults with `kernels skills config default_agents {' '.join(a.name for a in others)} {SHARED_AGENT}`."
    )
    return targets, note


Purpose = Literal["add", "list", "remove", "update"]


def resolve_targets(
    purpose: Purpose,
    loc: Location,
    *,
    agents: Sequence[str] = (),
    dests: Sequence[str] = (),
    global_: bool = False,
    default_agents: Callable[[], Sequence[str] | None] | None = None,
) -> tuple[list[Target], str | None]:
    """The skills folders a command acts on, from its agent flags, --dest values and --global.

    - ``add``: the named agents' folders (project ones, or user ones with ``global_``) and
      every --dest; with neither, the agents ``default_agents()`` returns (the configured
      defaults; only called then), else the shared root, with a note for the user naming the
      agents that do not read it.
    - ``remove``: the named agents' folders and every --dest; with neither, every agent's
      project folder (user folder with ``global_``).
    - ``update``: as ``remove``, but with neither, every agent's project and user folders.
    - ``list``: the named agents' (or every agent's) project and user folders (only user ones
      with ``global_``), plus every --dest.

    ``dests`` are the --dest strings as typed (``~`` is expanded; relative ones start at
    ``loc.cwd``). Usage mistakes (an unknown agent, an empty --dest, --global with only
    --dest folders) raise KernelsError with ``usage=True``. The second value is a note to
    show the user, or None.
    """
    if purpose == "list":
        scopes = ("global",) if global_ else ("project", "global")
        if agents:
            targets = [t for scope in scopes for t in select_targets(agents, loc, global_=scope == "global")]
        else:
            targets = known_targets(loc, scopes=scopes)
        return dedupe([*targets, *select_targets([], loc, global_=False, dests=_dest_paths(dests))]), None
    paths = _dest_paths(dests)
    if global_ and paths and not agents:
        raise KernelsError(
            "--global picks the agents' user-wide folders, and only --dest folders were given",
            "Drop --global, or add the agents whose user folders you mean (--claude, ...).",
            usage=True,
        )
    if purpose == "add":
        defaults = None if agents or paths or default_agents is None else default_agents()
        return add_targets(agents, loc, global_=global_, dests=paths, default_agents=defaults)
    if agents or paths:
        return select_targets(agents, loc, global_=global_, dests=paths), None
    every = ("project",) if purpose == "remove" else ("project", "global")
    return known_targets(loc, scopes=("global",) if global_ else every), None


def _dest_paths(dests: Sequence[str]) -> list[Path]:
    """--dest values as paths; an empty one is a mistake (it would mean the current folder)."""
    if any(not d.strip() for d in dests):
        raise KernelsError("--dest was given an empty path", "Name a folder, e.g. --dest ./skills (--dest . for this one).", usage=True)
    return [Path(d).expanduser() for d in dests]
