"""How the command line presents itself: ``--version``, ``-h`` as well as ``--help``, and
readable names in usage lines and help (``merge [OPTIONS] REPORT...``, ``--max-compiles N``,
not Typer's ``{reports}...``, ``<list[Path]>`` and ``<int range>``).

``ReadableGroup`` is the application's group class: each command it hands out gets its
arguments shown by name (upper case, or the ``metavar`` given), in brackets when optional.

Typer >= 0.23 vendors click (``typer._click``) and older versions use click itself, so nothing
here names click's classes: the command and context types are ``Any``.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


class _ReadableArgument(TyperArgument):
    """A Typer argument shown as ``NAME``, ``[NAME]`` or ``NAME...``, without its Python type."""

    def _name(self) -> str:
        name = self.metavar or (self.name or "ARG").upper()
        return name if self.nargs == 1 or name.endswith("...") else name + "..."

    def _usage_display_name(self) -> str:
        return self._name() if self.required else f"[{self._name()}]"

    def _rich_display_name(self) -> str:
        return self._name()

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


_TYPE_NAMES = {"int": "N", "float": "X", "path": "PATH", "str": "TEXT"}


class _ReadableOption(TyperOption):
    """A Typer option whose value is shown as ``N``, ``PATH``, ``TEXT`` or ``[a|b]`` rather
    than ``<int range>``, ``<path>``, ``<str>`` or ``<a|b>``."""

    def display_type(self, ctx: Any) -> str:
        shown: str = super().display_type(ctx)
        inner = shown.strip("<>")
        if "|" in inner:
            return f"[{inner}]"
        return _TYPE_NAMES.get(inner.split(" ")[0], inner.upper())


def readable(command: Any) -> Any:
    """Show ``command``'s arguments by name and its options' values by kind (idempotent)."""
    for param in command.params:
        if isinstance(param, TyperArgument) and not isinstance(param, _ReadableArgument):
            param.__class__ = _ReadableArgument
        elif isinstance(param, TyperOption) and not isinstance(param, _ReadableOption):
            param.__class__ = _ReadableOption
    return command


class ReadableGroup(TyperGroup):
    """The application's group: every command it hands out has readable arguments."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        return readable(command) if command is not None else None


def _show_version(value: bool) -> None:
    if value:
        from recompile_cli import __version__  # the package's, read from its metadata

        typer.echo(f"recompile-cli {__version__}")
        raise typer.Exit()


def root(version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_show_version,
        help="Show the version and exit.")] = False) -> None:
    """Find out which JAX functions re-trace and re-compile, why, and what it costs."""
