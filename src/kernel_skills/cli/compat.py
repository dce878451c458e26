"""Everything that reaches into typer's internals, in one place.

Tested with typer 0.29 (pyproject.toml pins typer below 0.30); tests/cli/test_compat.py
fails, naming what moved, when a typer release changes what this module relies on:

- ``typer._coercion.RuntimeParam`` (a frozen dataclass with ``parameter_info`` and
  ``annotation`` and an abstract ``_coerce_value``) and a parameter's ``_runtime_param``
  slot and ``type_descriptor``: how :class:`Command` skips typer's pydantic coercion;
- ``TyperArgument.display_type_rich``: how :class:`Command` keeps "<list[str]>" out of help;
- typer's re-exported click exception classes, found by name among
  ``typer.BadParameter``'s bases (:func:`click_class`);
- click printing through a function named ``echo`` in its ``utils`` module
  (:func:`raised_by_click_echo`).

On a typer without the pydantic layer (before 0.2x) the coercion hook does nothing.
"""

import types
import typing
from typing import Any

import typer
import typer.core

_PLAIN: list[Any] = []


def click_class(name: str) -> tuple[type[BaseException], ...]:
    """click's exception class ``name`` (ClickException, UsageError), as typer ships it.

    typer re-exports (or vendors) click's exception types under its own names: the class is
    found by name among BadParameter's bases instead of importing click.
    """
    return tuple(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == name)


def raised_by_click_echo(exc: BaseException) -> bool:
    """Was ``exc`` raised inside click's ``echo`` (printing help, a version or a usage error)?

    Such a write names no file: stdout or stderr failed, not a path of ours.
    """
    tb = exc.__traceback__
    while tb is not None:
        code, module = tb.tb_frame.f_code.co_name, tb.tb_frame.f_globals.get("__name__", "")
        if code == "echo" and module.endswith("click.utils"):  # click.utils, or typer's vendored typer._click.utils
            return True
        tb = tb.tb_next
    return False


def plain_coercer() -> Any:
    """A typer RuntimeParam for str and bool parameters, or None if this typer has no such layer."""
    if not _PLAIN:
        try:
            from typer._coercion import RuntimeParam
        except ImportError:
            _PLAIN.append(None)
        else:

            class _Plain(RuntimeParam):
                def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
                    if self.annotation is bool:
                        return bool(value)
                    return [str(v) for v in value] if isinstance(value, (list, tuple)) else str(value)

            _PLAIN.append(_Plain)
    return _PLAIN[0]


def is_plain(annotation: Any) -> bool:
    """str, bool or list[str], optionally Optional (either spelling of the union)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    return annotation in (str, bool) or (typing.get_origin(annotation) is list and typing.get_args(annotation) == (str,))


class _NoPydantic:
    """Skips typer's pydantic coercion for str and bool parameters (all of ours).

    Recent typer releases coerce parameters through a pydantic TypeAdapter; importing
    pydantic for that takes longer than the whole rest of `kernels skills add` (see
    benchmarks/cli_speed.py). Strings and flags need no coercion, so they get a
    pass-through coercer. On a typer without that layer this does nothing.
    """

    def parse_args(self, ctx: Any, args: Any) -> Any:
        plain = plain_coercer()
        for param in self.get_params(ctx) if plain else ():  # type: ignore[attr-defined]
            descriptor = getattr(param, "type_descriptor", None)
            if getattr(param, "_runtime_param", False) is None and descriptor and is_plain(descriptor.annotation):
                param._runtime_param = plain(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
        return super().parse_args(ctx, args)  # type: ignore[misc]


class Command(_NoPydantic, typer.core.TyperCommand):
    """The class of every command (``@app.command(cls=Command)``)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        # An argument's metavar already says what it takes; recent typer releases append the
        # Python annotation too ("SKILL <list[str]>"), which teaches the reader nothing.
        for param in self.params:
            if isinstance(param, typer.core.TyperArgument) and param.metavar:
                param.display_type_rich = lambda ctx: None  # type: ignore[method-assign]
        super().format_help(ctx, formatter)


class Group(_NoPydantic, typer.core.TyperGroup):
    """The class of every command group."""
