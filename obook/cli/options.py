"""Old spellings of options, still accepted and not shown in ``--help``."""

from __future__ import annotations

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
