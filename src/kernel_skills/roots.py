"""All the places the CLI reads and writes, gathered in one value.

Core functions take these roots as arguments; only :meth:`Roots.from_environment` looks
at the real process environment, so tests point everything at tmp dirs. The user state
and config folders come from ``$KERNEL_SKILLS_STATE_DIR`` and ``$KERNEL_SKILLS_CONFIG_DIR``
when set (the same on every OS, so tests and CI never depend on platformdirs' per-OS
rules, which ignore ``XDG_*`` on Windows and macOS), else from platformdirs, asked only
when a command needs them.
"""

from __future__ import annotations

import os
from pathlib import Path

from .agents import Location
from .safety import Limits
from .sources import SourceContext, default_bundled_root

APP_NAME = "kernel-skills"
STATE_DIR_ENV = "KERNEL_SKILLS_STATE_DIR"
CONFIG_DIR_ENV = "KERNEL_SKILLS_CONFIG_DIR"


def _dir_from_env(env: dict[str, str], name: str) -> Path | None:
    value = env.get(name, "")
    if not value:
        return None
    # A relative value is taken from the cwd, as a shell user would read it.
    return Path(os.path.abspath(os.path.expanduser(value)))


class Roots:
    def __init__(self, location: Location, bundled: Path, state_dir: Path | None = None, config_file: Path | None = None) -> None:
        self.location = location  # cwd, home and the env vars that move agent dirs
        self.bundled = bundled  # the bundled skills
        self._state_dir = state_dir  # backups of user-edited installs
        self._config_file = config_file  # config.yaml

    @property
    def state_dir(self) -> Path:
        if self._state_dir is None:
            import platformdirs

            self._state_dir = Path(platformdirs.user_state_dir(APP_NAME, appauthor=False))
        return self._state_dir

    def get_state_dir(self) -> Path:
        return self.state_dir

    @property
    def config_file(self) -> Path:
        if self._config_file is None:
            import platformdirs

            self._config_file = Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.yaml"
        return self._config_file

    @property
    def sources(self) -> SourceContext:
        """Where skills come from; with no size limits (commands that install pass their own)."""
        return SourceContext(self.bundled, self.location.env, cwd=self.location.cwd, limits=Limits.unlimited())

    @classmethod
    def from_environment(cls) -> Roots:
        env = dict(os.environ)
        config_dir = _dir_from_env(env, CONFIG_DIR_ENV)
        return cls(
            Location(Path.cwd(), Path.home(), env),
            default_bundled_root(env),
            state_dir=_dir_from_env(env, STATE_DIR_ENV),
            config_file=config_dir / "config.yaml" if config_dir is not None else None,
        )
