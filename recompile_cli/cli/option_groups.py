"""The options that commands share, as groups: a command takes one object per group instead of
a parameter per option. ``grouped`` turns each group parameter into the group's options on the
command line (typer reads the signature it makes) and back into the group's object when the
command runs. The gate limits are ``gate.limits.LIMITS``' (``Limits``): declared there once.
Only definitions; nothing here validates beyond typer's own checks or runs anything.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

import typer

from recompile_cli import options, ranges
from recompile_cli.cli import output
from recompile_cli.cli.options_cli import (
    AfterWarmupOption,
    AllOption,
    BaselineOption,
    CacheOption,
    CompileRegressionOption,
    EventsLogOption,
    FormatOption,
    HookOption,
    JunitOption,
    MaxArrayOption,
    MaxCallsOption,
    OutputOption,
    QuietOption,
    SaveBaselineOption,
    SaveOption,
    StaticArgnamesOption,
    StaticArgnumsOption,
    TimeoutOption,
    WarmupParallelOption,
)
from recompile_cli.errors import RecompileError
from recompile_cli.gate.limits import Gates, Kind, Limit, flags_of
from recompile_cli.session.kinds import HookMode

Command = TypeVar("Command", bound=Callable[..., Any])
_OPTION = inspect.Parameter.KEYWORD_ONLY


class Group:
    """A group of options: ``parameters`` for a command's signature, ``of`` to build the
    object from their values."""

    @classmethod
    def parameters(cls, command: str) -> list[inspect.Parameter]:
        hints = typing.get_type_hints(cls, include_extras=True)
        return [inspect.Parameter(f.name, _OPTION, default=f.default, annotation=hints[f.name])
                for f in dataclasses.fields(cls)]  # type: ignore[arg-type]

    @classmethod
    def of(cls, values: dict[str, Any], command: str) -> Any:
        return cls(**{f.name: values.pop(f.name)
                      for f in dataclasses.fields(cls)})  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True, slots=True)
class SpecOptions(Group):
    """The spec of the calls to make and how the target is jitted."""

    args: Annotated[Path | None, typer.Option(
        "--args", "-a", parser=output.path_option, metavar="PATH",
        help="YAML spec of the calls to make (default: one call, no args).")] = None
    max_array_bytes: MaxArrayOption = None
    max_calls: MaxCallsOption = None
    static_argnames: StaticArgnamesOption = None
    static_argnums: StaticArgnumsOption = None


@dataclasses.dataclass(frozen=True, slots=True)
class ReportOptions(Group):
    """Where the report goes and in which format."""

    fmt: FormatOption = None
    output_path: OutputOption = None
    save: SaveOption = None
    show_all: AllOption = False


@dataclasses.dataclass(frozen=True, slots=True)
class BaselineOptions(Group):
    """The baseline to compare with or write, and the gate's JUnit file."""

    baseline: BaselineOption = None
    save_baseline: SaveBaselineOption = None
    fail_on_compile_regression: CompileRegressionOption = None
    junit_xml: JunitOption = None


@dataclasses.dataclass(frozen=True, slots=True)
class Running(Group):
    """How the measured process runs."""

    hook_mode: HookOption = HookMode.PRIVATE
    quiet: QuietOption = False
    timeout: TimeoutOption = None


@dataclasses.dataclass(frozen=True, slots=True)
class Recording(Group):
    """What a recorded run does besides the target: the persistent cache, the events log, a
    warm-up plan run first."""

    compilation_cache: CacheOption = None
    events_log: EventsLogOption = None
    after_warmup: AfterWarmupOption = None
    warmup_parallel: WarmupParallelOption = None


class Limits(Group):
    """The gate limits a command takes on its command line (``gate.limits.flags_of``), as
    given."""

    _DEFAULTS: ClassVar[dict[Kind, Any]] = {Kind.SWITCH: False}

    def __init__(self, values: dict[str, Any], command: str) -> None:
        self.values, self.command = values, command

    @classmethod
    def parameters(cls, command: str) -> list[inspect.Parameter]:
        return [inspect.Parameter(limit.key, _OPTION, default=cls._DEFAULTS.get(limit.kind),
                                  annotation=_annotation(limit))
                for limit in flags_of(command)]

    @classmethod
    def of(cls, values: dict[str, Any], command: str) -> Limits:
        return cls({limit.key: values.pop(limit.key) for limit in flags_of(command)}, command)

    def gates(self, **more: Any) -> Gates:
        """The gates of these limits and ``more`` (a bad value is a ``RecompileError``)."""
        given: dict[str, Any] = {}
        for limit in flags_of(self.command):
            value = self.values[limit.key]
            try:
                given[limit.key] = (options.cause_codes(value, str(limit.flag))
                                    if limit.kind == Kind.CAUSES else value)
            except ValueError as exc:
                raise RecompileError(f"{exc}.") from None
        return Gates(**given, **more)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]


def _annotation(limit: Limit) -> Any:
    """The typer annotation of a limit's flag."""
    assert limit.flag is not None
    if limit.kind == Kind.COUNT:
        return Annotated[int | None, typer.Option(
            limit.flag, min=0, max=ranges.MAX_COUNT, metavar="N", help=limit.flag_help)]
    if limit.kind == Kind.SWITCH:
        return Annotated[bool, typer.Option(limit.flag, help=limit.flag_help)]
    return Annotated[str | None, typer.Option(limit.flag, help=limit.flag_help)]


def grouped(command: Command) -> Command:
    """``command`` with each parameter annotated with a ``Group`` replaced by the group's
    options (typer builds the command line from the signature made here), given back to it as
    one object of the group."""
    name = command.__name__
    hints = typing.get_type_hints(command, include_extras=True)
    groups: dict[str, type[Group]] = {}
    parameters = []
    for parameter in inspect.signature(command).parameters.values():
        hint = hints.get(parameter.name, parameter.annotation)
        if isinstance(hint, type) and issubclass(hint, Group):
            groups[parameter.name] = hint
            parameters += hint.parameters(name)
        else:
            parameters.append(parameter.replace(kind=_OPTION, annotation=hint))

    @functools.wraps(command)
    def wrapper(**values: Any) -> Any:
        for parameter, group in groups.items():
            values[parameter] = group.of(values, name)
        return command(**values)

    wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return typing.cast(Command, wrapper)
