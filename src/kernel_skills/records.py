"""Record classes: the part of dataclasses kernel-skills uses, without its start-up cost.

``@record`` declares a class as ``@dataclass`` does: its fields are the class annotations,
in order, with plain defaults or ``field(default=..., default_factory=..., repr=...)``; it
gets ``__init__``, ``__repr__``, ``__eq__`` (unless ``eq=False``) and, with
``frozen=True``, refuses assignment (``FrozenInstanceError``) and hashes by its fields.
:func:`replace` makes a copy with some fields changed. mypy reads it as a dataclass
(PEP 681's dataclass_transform). Nothing else of dataclasses is used in this package.

Why not dataclasses: `kernels skills add` builds 23 of these classes on the way to an
install that should take under 100 ms. Importing dataclasses imports inspect (and with it
ast, dis and tokenize), and every ``@dataclass`` compiles its methods from generated source
text; together that was 17.7 ms of CPU before an add did anything (the add's imports, median
of 30 cold runs: 62.6 ms with dataclasses, 44.9 ms without). ``@record`` builds the same
methods from closures: nothing is compiled and nothing more is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**kwargs: Any) -> Callable[[Any], Any]:
        return lambda decorator: decorator


T = TypeVar("T")
_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """An assignment to (or deletion of) an attribute of a frozen record."""


class Field:
    """What :func:`field` returns: a field's default, default factory and whether repr shows it."""

    __slots__ = ("default", "default_factory", "repr")

    def __init__(self, default: Any, default_factory: Any, repr: bool) -> None:
        self.default, self.default_factory, self.repr = default, default_factory, repr


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] = _MISSING, repr: bool = True) -> Any:
    """A field with a default (or a factory called for each new record), as dataclasses.field."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, repr)


@overload
def record(cls: type[T], /) -> type[T]: ...
@overload
def record(*, frozen: bool = False, eq: bool = True) -> Callable[[type[T]], type[T]]: ...
@dataclass_transform(field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = False, eq: bool = True) -> Any:
    """Make ``cls`` a record class (``@record`` or ``@record(frozen=True, eq=False)``)."""

    def wrap(cls: type[T]) -> type[T]:
        return _build(cls, frozen=frozen, eq=eq)

    return wrap if cls is None else wrap(cls)


def replace(obj: T, /, **changes: Any) -> T:
    """A new record like ``obj`` with the given fields changed (as dataclasses.replace)."""
    values = {name: getattr(obj, name) for name in type(obj).__record_fields__}  # type: ignore[attr-defined]
    values.update(changes)
    return type(obj)(**values)


def _build(cls: type[T], *, frozen: bool, eq: bool) -> type[T]:
    names: list[str] = []
    shown: list[str] = []  # the fields repr() shows
    defaults: dict[str, Any] = {}
    factories: dict[str, Callable[[], Any]] = {}
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, Field) else Field(value, _MISSING, True)
        if isinstance(value, Field):  # as dataclasses leave it: the class keeps a plain default only
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        if spec.default is not _MISSING:
            defaults[name] = spec.default
        elif spec.default_factory is not _MISSING:
            factories[name] = spec.default_factory
        elif defaults or factories:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        if spec.repr:
            shown.append(name)
        names.append(name)
    title = cls.__qualname__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{title}() takes {len(names)} positional arguments but {len(args)} were given")
        values = dict(zip(names, args, strict=False))  # (fewer args than names: the rest by keyword)
        for key, value in kwargs.items():
            if key in values or key not in names:
                problem = "got multiple values for argument" if key in values else "got an unexpected keyword argument"
                raise TypeError(f"{title}() {problem} {key!r}")
            values[key] = value
        for name in names:
            if name in values:
                value = values[name]
            elif name in factories:
                value = factories[name]()
            elif name in defaults:
                value = defaults[name]
            else:
                raise TypeError(f"{title}() missing required argument: {name!r}")
            object.__setattr__(self, name, value)

    def __repr__(self: Any) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in shown)})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, name) for name in names) == tuple(getattr(other, name) for name in names)

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, name) for name in names))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self: Any, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    new: dict[str, Any] = {"__init__": __init__, "__repr__": __repr__}
    if eq:
        new["__eq__"] = __eq__
    if frozen:
        new.update(__setattr__=__setattr__, __delattr__=__delattr__)
    for name, method in new.items():
        if name not in cls.__dict__:  # (a method the class defines itself stays)
            method.__qualname__ = f"{title}.{name}"
            setattr(cls, name, method)
    # The hash, as dataclasses decide it: by the fields for a frozen record that compares
    # them, none for a mutable one (equal records could hash apart), else the class's own.
    own_hash = cls.__dict__.get("__hash__", _MISSING)
    if eq and (own_hash is _MISSING or (own_hash is None and "__eq__" in cls.__dict__)):
        if frozen:
            __hash__.__qualname__ = f"{title}.__hash__"
        cls.__hash__ = __hash__ if frozen else None  # type: ignore[assignment,method-assign]
    cls.__record_fields__ = tuple(names)  # type: ignore[attr-defined]
    return cls
