"""Old spellings of options, still accepted and not shown in ``--help``; and the root
group that refuses a number option given as ``nan`` or ``inf``."""

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


_FINITE: dict = {}


def _finite_type(t):
    """``t`` (a float type, with or without a range) refusing nan and inf; the same class
    underneath, so the help still shows its range."""
    base = type(t)
    if base not in _FINITE:
        def convert(self, value, param, ctx):
            v = base.convert(self, value, param, ctx)
            if isinstance(v, float) and not math.isfinite(v):
                self.fail(f"{value!r} is not a finite number.", param, ctx)
            return v
        _FINITE[base] = type(f"Finite{base.__name__}", (base,), {"convert": convert})
    sub = _FINITE[base]
    if isinstance(t, sub):
        return t
    out = object.__new__(sub)
    out.__dict__.update(t.__dict__)
    return out


def finite_floats(command) -> None:
    """Every float option of ``command`` (and of its subcommands) refuses nan and inf: a
    rate, a latency or a timeout of nan or inf means nothing and used to end in a traceback.
    (Typer carries its own copy of click, so the float types are known by their names.)"""
    for p in command.params:
        if getattr(p.type, "name", None) in ("float", "float range"):
            p.type = _finite_type(p.type)
    for sub in getattr(command, "commands", {}).values():
        finite_floats(sub)


class ObookGroup(TyperGroup):
    """The ``obook`` group: its commands' float options refuse nan and inf."""

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            finite_floats(command)
        return name, command, rest
