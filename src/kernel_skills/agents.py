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
from pathlib import Path
from typing import Literal

from .errors import KernelsError
from .records import field, record

SHARED_AGENT = "agents"


@record(frozen=True)
class Agent:
    """One coding agent: the folders ``--<name>`` installs into, and every folder it loads skills from.

    ``also_project`` / ``also_user`` are the other skills folders the agent's documentation
    says it loads (the shared ``.agents/skills`` root among them, for most), in the same
    template syntax as ``project`` / ``user``. They decide who reads the shared root and when
    one install makes a skill visible to an agent twice.
    """

    name: str
    label: str
    project: str
    user: str
    also_project: tuple[str, ...] = ()
    also_user: tuple[str, ...] = ()

    @property
    def reads_shared(self) -> bool:
        """Loads the project's shared .agents/skills root."""
        return self.reads_shared_in(global_=False)

    def reads_shared_in(self, *, global_: bool) -> bool:
        """Loads the shared root of that scope (.agents/skills, or ~/.agents/skills with ``global_``)."""
        if global_:
            return SHARED_USER in (self.user, *self.also_user)
        return SHARED_PROJECT in (self.project, *self.also_project)

    def reads(self, loc: Location, *, global_: bool) -> list[Path]:
        """Every skills folder this agent loads in one scope (its own first)."""
        templates = (self.user, *self.also_user) if global_ else (self.project, *self.also_project)
        return [loc.expand(t) for t in templates]


SHARED_PROJECT, SHARED_USER = ".agents/skills", "~/.agents/skills"
_CLAUDE_PROJECT, _CLAUDE_USER = ".claude/skills", "~/.claude/skills"

# Each row checked against the agent's own documentation (the URL above it), December 2026.
# fmt: off
AGENTS: tuple[Agent, ...] = (
    # https://code.claude.com/docs/en/skills
    Agent("claude",   "Claude Code",    _CLAUDE_PROJECT,    "{CLAUDE_CONFIG_DIR:~/.claude}/skills"),
    # https://developers.openai.com/codex/skills (repository and user .agents/skills)
    Agent("codex",    "Codex",          SHARED_PROJECT,     SHARED_USER),
    # https://opencode.ai/docs/skills (Discovery: .claude/skills and .agents/skills "compatibility" sources)
    Agent("opencode", "OpenCode",       ".opencode/skills", "{XDG_CONFIG_HOME:~/.config}/opencode/skills",
          also_project=(SHARED_PROJECT, _CLAUDE_PROJECT), also_user=(SHARED_USER, _CLAUDE_USER)),
    # https://cursor.com/docs/skills (Skill directories; Claude and Codex folders "for compatibility")
    Agent("cursor",   "Cursor",         ".cursor/skills",   "~/.cursor/skills",
          also_project=(SHARED_PROJECT, _CLAUDE_PROJECT, ".codex/skills"), also_user=(SHARED_USER, _CLAUDE_USER, "~/.codex/skills")),
    # https://geminicli.com/docs/cli/using-agent-skills/ (Discovery tiers: .agents/skills is an alias)
    Agent("gemini",   "Gemini CLI",     ".gemini/skills",   "~/.gemini/skills",
          also_project=(SHARED_PROJECT,), also_user=(SHARED_USER,)),
    # https://docs.github.com/en/copilot/how-tos/copilot-on-github/customize-copilot/customize-cloud-agent/add-skills
    Agent("copilot",  "GitHub Copilot", ".github/skills",   "~/.copilot/skills",
          also_project=(SHARED_PROJECT, _CLAUDE_PROJECT), also_user=(SHARED_USER,)),
    # https://docs.windsurf.com/windsurf/cascade/skills#skill-scopes (.agents/skills "for cross-agent
    # compatibility"; .claude/skills only with Claude Code config reading switched on, so not counted)
    Agent("windsurf", "Windsurf",       ".windsurf/skills", "~/.codeium/windsurf/skills",
          also_project=(SHARED_PROJECT,), also_user=(SHARED_USER,)),
    # https://kiro.dev/docs/skills (Skill scope: .kiro/skills and ~/.kiro/skills only)
    Agent("kiro",     "Kiro",           ".kiro/skills",     "~/.kiro/skills"),
    # https://docs.cline.bot/customization/skills (Where Skills Live: no .agents/skills)
    Agent("cline",    "Cline",          ".cline/skills",    "~/.cline/skills",
          also_project=(".clinerules/skills", _CLAUDE_PROJECT)),
    # https://ampcode.com/manual#agent-skills (.agents/skills, ~/.config/agents/skills and ~/.config/amp/skills,
    # .claude/skills and ~/.claude/skills; read here as mirrored at https://syllago.dev/using-syllago/providers/amp/skills/)
    Agent("amp",      "Amp",            SHARED_PROJECT,     "~/.config/agents/skills",
          also_project=(_CLAUDE_PROJECT,), also_user=("~/.config/amp/skills", _CLAUDE_USER)),
    Agent("agents",   "shared root",    SHARED_PROJECT,     SHARED_USER),
)

# Agents that load skills only from folders of the table above: no flag of their own, but they
# count when a skill would be visible twice, and they are named among the shared root's readers.
OTHER_READERS: tuple[Agent, ...] = (
    # https://github.com/block/goose/blob/main/documentation/docs/guides/context-engineering/using-skills.md
    # (Skill Locations: .agents/skills and ~/.agents/skills, the shared root; for "backward
    # compatibility" also .goose/skills, .claude/skills and ~/.claude/skills)
    Agent("goose",    "Goose",          SHARED_PROJECT,     SHARED_USER,
          also_project=(".goose/skills", _CLAUDE_PROJECT), also_user=(_CLAUDE_USER,)),
)
# fmt: on
_BY_NAME = {agent.name: agent for agent in AGENTS}
_VAR = re.compile(r"\{(\w+):([^}]*)\}")


@record(frozen=True)
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


@record
class Target:
    """One skills directory to act on, and who reads it."""

    path: Path
    scope: str  # "project", "global" or "dest"
    agents: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return ", ".join(self.agents) if self.agents else "--dest"


def _key(path: Path) -> str:
    # Two spellings of one directory (a symlinked .claude, say, or ~/.Claude on a
    # case-insensitive disk, where normcase folds nothing on macOS) must be written once:
    # the nearest existing folder is known by (st_dev, st_ino), not by its spelling.
    real = os.path.realpath(path)
    probe, tail = real, ""
    while True:
        try:
            st = os.stat(probe)
        except OSError:
            parent = os.path.dirname(probe)
            if parent == probe:
                return os.path.normcase(real)
            tail = os.path.join(os.path.basename(probe), tail) if tail else os.path.basename(probe)
            probe = parent
            continue
        if not st.st_ino:
            return os.path.normcase(real)
        return f"{st.st_dev:x}-{st.st_ino:x}/{os.path.normcase(tail)}"


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


def not_reading_shared(*, global_: bool = False) -> list[Agent]:
    """Agents that ignore the shared root of that scope (they need their own flag)."""
    return [agent for agent in AGENTS if not agent.reads_shared_in(global_=global_)]


def shared_readers(*, global_: bool = False) -> list[Agent]:
    """The agents (shared root itself aside) that load the shared root of that scope."""
    return [a for a in (*AGENTS, *OTHER_READERS) if a.name != SHARED_AGENT and a.reads_shared_in(global_=global_)]


def seen_twice(folders: Iterable[Path], loc: Location) -> list[Agent]:
    """The agents that load more than one of these skills folders in one scope.

    A skill in two of them is seen twice by such an agent (OpenCode, say, loads both
    .claude/skills and .agents/skills). Two spellings of one folder count once. A project copy
    beside a user-wide one is not counted: agents document that one of them takes precedence.
    """
    keys = {_key(folder) for folder in folders}
    return [agent for agent, scopes in _readers(loc) if _doubled(scopes, keys)]


def _readers(loc: Location) -> list[tuple[Agent, tuple[set[str], set[str]]]]:
    """Every agent (shared root aside) with the folders it loads: (project ones, user ones)."""
    return [
        (agent, ({_key(p) for p in agent.reads(loc, global_=False)}, {_key(p) for p in agent.reads(loc, global_=True)}))
        for agent in (*AGENTS, *OTHER_READERS)
        if agent.name != SHARED_AGENT
    ]


def _doubled(scopes: tuple[set[str], set[str]], keys: set[str]) -> set[str]:
    """The folders among ``keys`` loaded in a scope where two or more of them are loaded."""
    doubled: set[str] = set()
    for read in scopes:
        if len(hit := keys & read) > 1:
            doubled |= hit
    return doubled


def twice_warning(placed: Mapping[str, Iterable[Path]], loc: Location) -> str | None:
    """One warning for a command after which some agent sees one of its skills twice, or None.

    ``placed`` maps each skill the command installed (or found already installed) to the
    skills folders it put it in. Copies of the skill already in other folders agents load
    count too (`add --claude` after an `add` into .agents/skills doubles it as well), but only
    agents for which this command's folders are among the doubled ones are named.
    """
    groups: dict[tuple[str, ...], list[str]] = {}  # folders seen twice -> the agents that see them
    skills: list[str] = []
    readers = _readers(loc)
    for skill, placed_in in placed.items():
        targets = {_key(t) for t in placed_in}
        folders = {_key(f): f for f in [*placed_in, *_holding(skill, loc)]} if targets else {}
        for agent, scopes in readers:
            doubled = _doubled(scopes, set(folders))
            if not doubled & targets:
                continue  # not doubled, or doubled before this command by folders it did not touch
            seen = tuple(_show(folders[k], loc) for k in folders if k in doubled)
            if agent.label not in groups.setdefault(seen, []):
                groups[seen].append(agent.label)
            if skill not in skills:
                skills.append(skill)
    if not groups:
        return None
    clauses = [
        f"{_and(labels)} load{'s' if len(labels) == 1 else ''} {'both' if len(seen) == 2 else 'all of'} {_and(list(seen))}"
        for seen, labels in groups.items()
    ]
    one = len(groups) == 1 and len(next(iter(groups.values()))) == 1
    return (
        f"{'; '.join(clauses)}: {'it' if one else 'they'} will see {_and(skills)} twice, and the copies can drift "
        "apart. One of those folders is enough for each agent (`kernels skills agents` shows the folders each agent loads)."
    )


def _holding(skill: str, loc: Location) -> list[Path]:
    """The folders any agent reads (either scope) that already hold ``skill``."""
    folders = {str(p): p for a in (*AGENTS, *OTHER_READERS) for scope in (False, True) for p in a.reads(loc, global_=scope)}
    return [p for p in folders.values() if os.path.lexists(p / skill)]


def _show(folder: Path, loc: Location) -> str:
    for base, prefix in ((loc.cwd, ""), (loc.home, "~/")):
        try:
            return prefix + folder.relative_to(base).as_posix()
        except ValueError:
            continue
    return str(folder)


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


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
    others = not_reading_shared(global_=global_)
    root = SHARED_USER if global_ else SHARED_PROJECT
    note = (
        f"This goes into the shared {root} root, which {_and([a.label for a in shared_readers(global_=global_)])} read. "
        f"{_and([a.label for a in others])} do not: add {' '.join('--' + a.name for a in others)} for them, "
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
