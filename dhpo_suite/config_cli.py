"""Typer commands from frozen config dataclasses: one option per field, so a CLI never restates its config.

A field `group_size: int = 8` with the docstring `"G: responses ..."` becomes `--group-size INTEGER` with that
help and default. `Spell` covers the few fields that need more: a short name (`-G`), another flag (`--hp`), a
repeatable KEY=VALUE list for a dict field, choices read from a registry when a value is parsed (so `--help`
imports nothing heavy), a positional argument. The command receives `Values`: per-dataclass dicts and the set
of fields the user gave (`--resume` checks those against the stored run).

    @app.command()
    @config_command(TrainConfig, TrainCommand, spell={"group_size": Spell(names=("-G",))})
    def train(ctx: typer.Context, v: Values) -> None:
        cfg = TrainConfig(**v.of(TrainConfig))
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import typer
from rich.markup import escape

__all__ = ["Spell", "Values", "config_command", "field_docs", "flag", "to_argv"]


@dataclass(frozen=True)
class Spell:
    """How one field is spelled on the command line when `--field-name` of the field's type is not enough."""

    names: tuple[str, ...] = ()
    """Flags replacing `--field-name` when one starts with "--" (("--hp",)); short names ("-G") are added."""
    repeat: bool = False
    """Repeatable KEY=VALUE (a dict field): the command receives the list of strings."""
    choices: Callable[[], Iterable[str]] | None = None
    """The allowed values, read when a value is parsed (a registry: nothing is imported at `--help`)."""
    listed: Callable[[], Iterable[str]] | None = None
    """Names appended to the help ("names: a, b"), read when the command is built: a light registry only."""
    argument: bool = False
    """A positional argument instead of an option."""
    hidden: bool = False
    """Not in `--help` (an internal option, such as a worker's shard)."""
    metavar: str | None = None
    """The value's name in `--help`."""
    cli_type: Any = None
    """The type on the command line when the field's type is not one (a (rank, world) tuple given as "R/W")."""


def field_docs(cls: type) -> dict[str, str]:
    """Field name -> the docstring under it (PEP 257's attribute docstrings, as in the config dataclasses)."""
    class_def = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(class_def, ast.ClassDef)
    docs = {}
    for node, nxt in zip(class_def.body, class_def.body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def flag(name: str, spell: dict[str, Spell] | None = None) -> str:
    """The option a field is given by (for one-line errors that name what the user typed)."""
    long = [n for n in (spell or {}).get(name, Spell()).names if n.startswith("--")]
    return long[0] if long else "--" + name.replace("_", "-")


class Values:
    """What a generated command was given: field values per dataclass, and which fields the user set."""

    def __init__(self, values: dict[str, Any], given: frozenset[str], owners: dict[str, type]):
        self.values, self.given, self._owners = values, given, owners

    def of(self, cls: type) -> dict[str, Any]:
        """The fields of `cls` (keyword arguments for it, repeatable KEY=VALUE fields as their raw list)."""
        return {k: v for k, v in self.values.items() if self._owners[k] is cls}

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def config_command(*classes: type | tuple[type, Sequence[str]], spell: dict[str, Spell] | None = None
                   ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: turn `fn(ctx, values)` into a Typer command whose options are the fields of `classes`, in
    field order. A class may come as (class, names): its fields but those, which the command sets itself."""
    spell = spell or {}
    params: list[inspect.Parameter] = []
    owners: dict[str, type] = {}
    for item in classes:
        cls, skip = item if isinstance(item, tuple) else (item, ())
        docs, hints = field_docs(cls), typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name in skip or not f.init:
                continue
            if f.name in owners:
                raise TypeError(f"{cls.__name__}.{f.name}: already a field of {owners[f.name].__name__}")
            owners[f.name] = cls
            params.append(_parameter(f, hints[f.name], docs.get(f.name, ""), spell.get(f.name, Spell())))

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        def command(ctx: typer.Context, **values: Any) -> Any:
            return fn(ctx, Values(values, _given(ctx, values), owners))

        ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
        command.__signature__ = inspect.Signature([ctx_param, *params])  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in (ctx_param, *params)}
        command.__name__, command.__doc__ = fn.__name__, fn.__doc__
        return command

    return decorate


def to_argv(params: Iterable[Any], values: dict[str, Any], keep: Callable[[str], bool]) -> list[str]:
    """The command line that gives these click `params` these `values` (those `keep` accepts and that differ
    from the default), in the command's order: what a child process is handed to run the same options."""
    args: list[str] = []
    for p in params:
        value = values.get(p.name)
        if not keep(p.name) or value is None or value == p.default or not p.opts:
            continue
        if getattr(p, "is_flag", False):
            args.append(p.opts[0] if value else (p.secondary_opts or [p.opts[0]])[0])
        elif isinstance(value, (list, tuple)) and p.multiple:
            for item in value:
                args += [p.opts[0], str(item)]
        else:
            args += [p.opts[0], str(value)]
    return args


def _parameter(f: dataclasses.Field, hint: Any, doc: str, s: Spell) -> inspect.Parameter:
    default = f.default if f.default is not dataclasses.MISSING else None  # a factory (dict): the empty list
    if s.repeat:
        hint, default = list[str] | None, None
    elif s.cli_type is not None:
        hint, default = s.cli_type | None, None
    long = [n for n in s.names if n.startswith("--")] or ["--" + f.name.replace("_", "-")]
    names = [*long, *(n for n in s.names if not n.startswith("--"))]
    if s.listed is not None:
        doc = f"{doc} Names: {', '.join(s.listed())}."
    doc = escape(doc)  # typer renders help as rich markup: "[tokens x vocab]" would vanish
    extra: dict[str, Any] = {"help": doc, "hidden": s.hidden}
    if s.metavar or s.repeat:
        extra["metavar"] = s.metavar or "KEY=VALUE"
    if s.choices is not None:
        extra["parser"] = _choice_parser(s.choices, long[0])
        extra["metavar"] = s.metavar or "NAME"
    if s.argument:
        info = typer.Argument(... if f.default is dataclasses.MISSING else default, help=doc, show_default=False,
                              metavar=s.metavar or f.name.upper())
    else:
        info = typer.Option(default, *names, show_default=default is not None and default != "", **extra)
    return inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=hint)


def _choice_parser(choices: Callable[[], Iterable[str]], option: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        allowed = tuple(choices())
        if value not in allowed:
            raise typer.BadParameter(f"{value!r} is not one of: {', '.join(allowed)}", param_hint=option)
        return value

    return parse


def _given(ctx: typer.Context, values: dict[str, Any]) -> frozenset[str]:
    """Fields the user set (command line or environment), defaults or not."""
    given = ("COMMANDLINE", "ENVIRONMENT")  # by name: typer vendors its own click, whose enum is another class
    return frozenset(k for k in values if getattr(ctx.get_parameter_source(k), "name", None) in given)
