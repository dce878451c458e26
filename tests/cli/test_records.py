"""kernel_skills.records: @record behaves as @dataclass does for the features the package uses."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_skills.records import FrozenInstanceError, field, record, replace


def _pair(**options):
    """The same class declared with @dataclass and with @record."""

    def declare(decorator, make_field):
        @decorator(**options)
        class Thing:
            name: str
            path: Path = Path("x")
            tags: list[str] = make_field(default_factory=list)
            secret: str | None = make_field(default=None, repr=False)

        return Thing

    return declare(dataclasses.dataclass, dataclasses.field), declare(record, field)


@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"eq": False}], ids=["plain", "frozen", "no-eq"])
def test_a_record_is_built_called_shown_and_compared_as_a_dataclass(options):
    for cls in _pair(**options):
        a, b = cls("a"), cls("a")
        assert (a.name, a.path, a.tags, a.secret) == ("a", Path("x"), [], None)
        assert a.tags is not b.tags  # a new list for each
        assert repr(cls("b", Path("p"), ["t"], "s")).endswith(f".Thing(name='b', path={Path('p')!r}, tags=['t'])")
        assert cls("c", tags=["t"]).tags == ["t"] and cls(name="d", secret="s").secret == "s"
    dc, rec = _pair(**options)
    assert (dc("a") == dc("a")) == (rec("a") == rec("a")) and rec("a") != rec("b") and rec("a") != dc("a")
    assert (dc.__hash__ is None) == (rec.__hash__ is None)
    if options.get("frozen"):
        assert hash(rec("a", tags=())) == hash(rec("a", tags=()))  # type: ignore[arg-type]
    if not options.get("eq", True):
        one = rec("a")
        assert one != rec("a") and one == one and hash(one) == object.__hash__(one)  # compared by identity
    assert rec.path == Path("x") and not hasattr(rec, "tags")  # class attributes: plain defaults only, as dataclasses leave them


def test_a_frozen_record_refuses_assignment_and_replace_copies_with_changes():
    _, rec = _pair(frozen=True)
    one = rec("a", tags=["t"])
    with pytest.raises(FrozenInstanceError):
        one.name = "b"
    with pytest.raises(AttributeError):
        del one.name
    two = replace(one, name="b")
    assert (two.name, two.tags, one.name) == ("b", ["t"], "a") and type(two) is rec
    with pytest.raises(TypeError):
        replace(one, nope=1)


@pytest.mark.parametrize(
    "call",
    [lambda c: c(), lambda c: c("a", Path("x"), [], None, "extra"), lambda c: c("a", name="b"), lambda c: c("a", nope=1)],
    ids=["missing", "too-many", "twice", "unknown"],
)
def test_a_wrong_call_is_a_type_error_as_for_a_dataclass(call):
    for cls in _pair():
        with pytest.raises(TypeError):
            call(cls)


def test_a_field_without_a_default_after_one_with_a_default_is_refused():
    with pytest.raises(TypeError, match="follows default argument"):

        @record
        class Bad:
            a: int = 1
            b: int


def test_add_imports_no_dataclasses_and_no_inspect(sandbox):
    """Their import and each @dataclass's compiled methods cost 17.7 ms of an add's start-up."""
    code = (
        "import sys\n"
        "sys.argv = ['kernels', 'skills', 'add', 'demo', '--claude']\n"
        "from kernel_skills.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted({'dataclasses', 'inspect'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines()[-1] == "[]", out.stderr
    assert (sandbox.project / ".claude/skills/demo/SKILL.md").is_file()
