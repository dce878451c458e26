"""All the places the CLI reads and writes, gathered in one value.

Core functions take these roots as arguments; only :meth:`Roots.from_environment` looks
at the real process environment, so tests point everything at tmp dirs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .agents import Location
from .sources import SourceContext, default_bundled_root

APP_NAME = "kernel-skills"


@dataclass(frozen=True)
class Roots:
    location: Location  # cwd, home and the env vars that move agent dirs
    bundled: Path  # the bundled skills
    state_dir: Path  # backups of user-edited installs
    config_file: Path  # config.yaml

    @property
    def sources(self) -> SourceContext:
        return SourceContext(self.bundled, self.location.env)

    @classmethod
    def from_environment(cls) -> Roots:
        import platformdirs  # deferred: --help never needs it

        env = dict(os.environ)
        return cls(
            location=Location(Path.cwd(), Path.home(), env),
            bundled=default_bundled_root(env),
            state_dir=Path(platformdirs.user_state_dir(APP_NAME, appauthor=False)),
            config_file=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.yaml",
        )
