"""Old spellings of options, still accepted and not shown in ``--help``; and the root
group that refuses a number option given as ``nan`` or ``inf`` and a path given as ``""``,
and reads a choice in any case."""

from __future__ import annotations

import math

from typer.core import TyperGroup

from .. import cli


def aliases(**old_to_new: str) -> dict:
    """A command's ``context_settings`` (the app's own plus a normaliser) that reads each old
    long option (``out="output"``: ``--out`` as ``--output``) as its new name."""
    table = {old.replace("_", "-"): new for old, new in old_to_new.items()}
    return {**cli.CONTEXT, "token_normalize_func": lambda opt: table.get(opt, opt)}


#: ``-o/--output`` everywhere (match and simulate said ``--out``), ``-k/--tickers`` (plot: ``--ticker``)
COMMAND_ALIASES = {
    "match": aliases(out="output"),
    "simulate": aliases(out="output"),
    "plot": aliases(ticker="tickers"),
}


def given(ctx, name: str) -> bool:
    """Whether option ``name`` (its parameter's name) was given on the command line."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


_CHECKED: dict = {}


def _finite(v, value, t, param, ctx):
    if isinstance(v, float) and not math.isfinite(v):
        t.fail(f"{value!r} is not a finite number.", param, ctx)


def _named(v, value, t, param, ctx):
    if value == "":
        t.fail("'' names no file (give a path; '.' is the current folder).", param, ctx)


def _checked_type(t, check):
    """``t`` with ``check`` run on the given text and on the converted value; the same class underneath, so the help
    still shows its range or its kind of path."""
    def make(base):
        def convert(self, value, param, ctx):
            check(None, value, self, param, ctx)        # before the type's own checks
            v = base.convert(self, value, param, ctx)
            check(v, value, self, param, ctx)
            return v
        return type(f"Checked{base.__name__}", (base,), {"convert": convert})
    return _retyped(t, check, make)


def _retyped(t, key, make):
    """``t`` as an instance of the subclass ``make(base)`` of its class (made once per
    ``key``), its state kept; ``t`` itself when it is one already."""
    base = type(t)
    if key in getattr(base, "obook_retyped", ()):
        return t
    if (base, key) not in _CHECKED:
        _CHECKED[base, key] = sub = make(base)
        sub.obook_retyped = getattr(base, "obook_retyped", ()) + (key,)
    sub = _CHECKED[base, key]
    out = object.__new__(sub)
    out.__dict__.update(t.__dict__)
    return out


def _detected_on_empty(t):
    """A feed format's choice where ``''`` is no format given (detect), as ``format=''`` in
    Python and SQL."""
    def make(base):
        def convert(self, value, param, ctx):
            return None if value == "" else base.convert(self, value, param, ctx)
        return type(f"Detected{base.__name__}", (base,), {"convert": convert})
    return _retyped(t, "detect", make)


def any_case_choices(command, name: str | None = None) -> None:
    """Every choice option of ``command`` (and of its subcommands) takes its words in any case
    (``--on-error Skip``, ``--format ITCH``), as the Python, DuckDB and polars options do; a
    feed command's ``--format ''`` is detection, as ``format=''`` there."""
    from . import _FORMAT_OPTION

    for p in command.params:
        if getattr(p.type, "name", None) == "choice":
            p.type.case_sensitive = False
            if p.name == "format" and name in _FORMAT_OPTION:
                p.type = _detected_on_empty(p.type)
    for sub in getattr(command, "commands", {}).values():
        any_case_choices(sub)


def finite_floats(command) -> None:
    """Every float option of ``command`` (and of its subcommands) refuses nan and inf: a
    rate, a latency or a timeout of nan or inf means nothing and used to end in a traceback.
    Every path refuses an empty string, which the path types read as the current folder (so
    ``obook convert day.itch ""`` wrote its tables there). (Typer carries its own copy of
    click, so the types are known by their names.)"""
    for p in command.params:
        name = getattr(p.type, "name", None)
        if name in ("float", "float range"):
            p.type = _checked_type(p.type, _finite)
        elif name in ("path", "file", "directory"):     # click names a Path type by what it takes
            p.type = _checked_type(p.type, _named)
    for sub in getattr(command, "commands", {}).values():
        finite_floats(sub)


class ObookGroup(TyperGroup):
    """The ``obook`` group: its commands' float options refuse nan and inf, their paths ``""``;
    their choices are read in any case."""

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            finite_floats(command)
            any_case_choices(command, name)
        return name, command, rest
