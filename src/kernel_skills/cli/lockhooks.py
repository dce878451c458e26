"""How add, update and remove keep skills-lock.json current (the core is ..lockfile)."""

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..agents import Target
    from ..install import Plan
    from ..lockfile import Place
    from ..roots import Roots
    from ..sources import SkillSource


def lock_places(targets: "Sequence[Target]", roots: "Roots", *, skip: bool) -> "list[Place]":
    """The lock files a command's targets are recorded in, checked before anything is
    written (a malformed lock fails the command up front); none with --no-lock/--dry-run."""
    if skip:
        return []
    from .. import lockfile

    places = lockfile.places_for(targets, roots.location, roots.get_state_dir)
    lockfile.check(places)
    return places


def lock_added(
    places: "list[Place]", found: "Sequence[SkillSource]", targets: "Sequence[Target]", roots: "Roots", specs: list[str]
) -> list[str]:
    """Record what add installed (or found already installed) in every target."""
    if not places:
        return []
    from .. import lockfile

    changes = [lockfile.Change(s.name, t, s.origin, s.info.version, s.digest) for s in found for t in targets]
    return lockfile.record(changes, places, cwd=roots.location.cwd, specs=specs)


def lock_changed(places: "list[Place]", plan: "Plan", roots: "Roots") -> list[str]:
    """Record what update replaced and remove removed."""
    if not places or not plan.actions:
        return []
    from .. import lockfile

    changes = []
    for action in plan.actions:
        if action.op == "remove" or action.source is None:
            changes.append(lockfile.Change(action.skill, action.target))
        else:
            source = action.source
            changes.append(lockfile.Change(action.skill, action.target, source.origin, source.info.version, source.digest))
    return lockfile.record(changes, places, cwd=roots.location.cwd)


def lock_place(roots: "Roots", global_: bool) -> "Place":
    """The lock sync and outdated read: the project's, or with -g the user-level one."""
    from ..lockfile import Place

    return Place.user(roots.state_dir, roots.location) if global_ else Place.project(roots.location)
