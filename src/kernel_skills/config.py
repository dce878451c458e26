"""The user config file (config.yaml under the platformdirs user config dir).

One setting so far: ``default_agents``, the agents ``kernels skills add`` installs for
when no agent flag and no --dest is given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .agents import get_agent
from .errors import KernelsError
from .records import field, record

KEYS = {
    "default_agents": "agents `kernels skills add` installs for when no agent flag or --dest is given",
}


@record
class Config:
    path: Path
    default_agents: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys we do not know, kept as they are

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "default_agents": self.default_agents}


def _bad(path: Path, problem: str) -> KernelsError:
    return KernelsError(f"{path} is not a valid config file: {problem}", "Fix it or delete it (`kernels skills config` rewrites it).")


def load(path: Path) -> Config:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelsError(f"cannot read {path}: {exc}", "Check its permissions, or delete it.") from None
    import yaml

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise _bad(path, str(getattr(exc, "problem", None) or exc).splitlines()[0]) from None
    if not isinstance(data, dict):
        raise _bad(path, "expected a mapping like `default_agents: [claude, agents]`")
    agents = data.pop("default_agents", None)
    if agents is not None:
        if isinstance(agents, str):
            agents = [agents]
        if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
            raise _bad(path, "default_agents must be a list of agent names")
        for name in agents:
            try:
                get_agent(name)
            except KernelsError as exc:
                raise _bad(path, exc.message) from None
    return Config(path, agents, data)


def _edited(old: str, key: str, value: list[str] | None, expected: dict[str, Any]) -> str | None:
    """``old`` with only ``key``'s lines changed (its comments and other keys kept), or None.

    None when the file is laid out in a way this line edit does not understand; the
    caller then rewrites the whole file. The result is checked by parsing it back.
    """
    import yaml

    lines = old.splitlines(keepends=True)
    found = [i for i, line in enumerate(lines) if ":" in line and line.split(":", 1)[0] == key]
    try:
        had = key in (yaml.safe_load(old) or {})
    except (yaml.YAMLError, TypeError):
        return None
    if len(found) > 1 or had != bool(found):  # spelled another way (quoted, `key :`): rewrite
        return None
    start = end = found[0] if found else None
    if start is not None:
        end = start + 1
        # The value's own lines: indented, or a block sequence's "- item" at column 0.
        while end < len(lines):
            line = lines[end]
            if line[:1] in (" ", "\t", "-"):
                end += 1
            elif not line.strip() and end + 1 < len(lines) and lines[end + 1][:1] in (" ", "\t", "-") and lines[end + 1].strip():
                end += 1  # a blank line inside the value
            else:
                break
    new = [] if value is None else [yaml.safe_dump({key: value}, default_flow_style=True, width=10**6)[1:-2] + "\n"]
    if start is None:
        if old and not old.endswith("\n"):
            lines[-1] += "\n"
        lines += new
    else:
        lines[start:end] = new
    text = "".join(lines)
    try:
        same = (yaml.safe_load(text) or {}) == expected
    except yaml.YAMLError:
        same = False
    return text if same else None


def save(config: Config) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of one.

    Only the lines of the setting that changed are rewritten, so the user's comments and
    layout survive a `kernels skills config`.
    """
    import yaml

    data = dict(config.extra)
    if config.default_agents is not None:
        data["default_agents"] = list(config.default_agents)
    try:
        old = config.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        old = ""
    text = _edited(old, "default_agents", config.default_agents, data) if old.strip() else None
    if text is None:
        text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None) if data else ""
    # A config.yaml linked from a dotfiles repository stays a link: write its target.
    path = Path(os.path.realpath(config.path)) if config.path.is_symlink() else config.path
    import tempfile  # deferred: only `kernels skills config` writes the file

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise KernelsError(f"cannot write {path}: {exc.strerror or exc}", "Check the folder's permissions.") from None


def set_value(path: Path, key: str, values: Sequence[str] | None) -> Config:
    """Set ``key`` (None unsets it) and save; returns the new config."""
    check_key(key)
    config = load(path)
    if values is None:
        config.default_agents = None
    else:
        names: list[str] = []
        for value in values:
            for name in value.replace(",", " ").split():
                agent = get_agent(name).name
                if agent not in names:
                    names.append(agent)
        if not names:
            raise KernelsError(
                "no agents given", "Name one or more, e.g. `kernels skills config default_agents claude agents`.", usage=True
            )
        config.default_agents = names
    save(config)
    return config


def check_key(key: str) -> str:
    if key not in KEYS:
        raise KernelsError(f"unknown config key '{key}'", f"Known keys: {', '.join(KEYS)}.", usage=True)
    return key
