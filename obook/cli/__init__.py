"""The ``obook`` command line: one small module per command group.

Start-up matters here: this package and the command modules import typer and
the standard library only; each command loads pyarrow, numba's kernels, DuckDB or polars
inside its body, when it runs, and only what it needs. Help is click's plain text
(``rich_markup_mode=None``: rich's help formatter costs more than the rest of ``--help``).
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import sys

import typer

from .. import interrupts
from ..errors import ObookError
from ..interrupts import unwind_on_signals
from .kernels import choose_kernels

CONTEXT = {"help_option_names": ["-h", "--help"]}


def _version(value: bool) -> None:
    if value:
        from .._version import __version__

        typer.echo(f"obook {__version__}")
        raise typer.Exit()


#: the commands, in --help's order: name -> (module of obook.cli, function), or (module,
#: None) for a group (the module's ``app``)
COMMANDS = {
    "bbo": ("bbo", "bbo"), "table": ("table", "_command"), "convert": ("convert", "convert"), "sql": ("sql", "sql"),
    "lobster": ("lobster", "lobster"), "match": ("match", "match"), "simulate": ("simulate", "simulate"),
    "backtest": ("backtest", "backtest"), "plot": ("plot", "plot"), "send": ("live", "send"), "listen": ("live", "listen"),
    "venue": ("live", "venue"), "gen": ("gen", None), "pipeline": ("pipeline", None),
    "compile": ("compile", "compile_"),
}


def _main(version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                       help="Print obook's version and exit.")) -> None:
    """Replay exchange market-data feeds through limit order books."""


def _summary() -> str:
    """``obook --help``'s description; its feed formats are the registered ones."""
    from ..feeds import titles

    return (f"Replay exchange market-data feeds ({titles()}) through limit order books and write the best "
            "bid/offer, trades, orders and depth as text, CSV, Parquet or Arrow; match order entry, simulate "
            "your own orders, backtest strategies, listen to live lines.")


def build(only: str | None = None) -> typer.Typer:
    """The ``obook`` app: every command, or only the command ``only`` (what ``main`` runs:
    building every command's options costs more than the rest of a short command)."""
    import importlib

    from .options import ObookGroup

    cli = typer.Typer(
        cls=ObookGroup,
        name="obook",
        help=_summary() if only is None else _main.__doc__,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings=CONTEXT,
    )
    cli.callback()(_main)
    for name, (module, function) in COMMANDS.items():
        if only in (None, name):
            mod = importlib.import_module(f"{__name__}.{module}")
            if function is None:
                cli.add_typer(mod.app, name=name)
            else:
                from .options import COMMAND_ALIASES

                cli.command(name, context_settings=COMMAND_ALIASES.get(name))(getattr(mod, function))
    return cli


def __getattr__(name: str):
    if name == "app":       # the whole app (tests, the rendered --help), built on first use
        global app
        app = build()
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: commands whose file arguments are all the data they read (not a query or a pipeline's
#: TOML naming other files): tiny ones run on the Python kernels (``choose_kernels``)
_FEED_ARGUMENTS = {"bbo", "table", "convert", "lobster", "simulate", "plot"}
#: the commands whose --format names the feed's format
_FORMAT_OPTION = {"bbo", "table", "convert", "simulate", "plot", "backtest"}


def _message(e: ObookError, command: str | None) -> str:
    """The error line's text: the error's own (a feed's names the file, the record and the
    reason), and where the rows before a bad record were kept."""
    from ..errors import FormatError

    if isinstance(e, FormatError) and command in _FORMAT_OPTION:
        e = e.hinted("pass --format")
    kept = getattr(e, "kept_in", None)     # the rows before the bad record, kept as a file
    tail = f" (the rows before it are in {kept})" if kept else ""
    return str(e) + tail


#: line breaks (of a name the user gave, quoted in an error) as the error line writes them
_BREAKS = str.maketrans({"\n": "\\n", "\r": "\\r", "\v": "\\v", "\f": "\\f", "\x85": "\\x85",
                         "\u2028": "\\u2028", "\u2029": "\\u2029"})


#: an error line's most characters: a longer one (quoting a huge value given) keeps its start
#: and end, and says how much of the middle it left out
LONGEST_ERROR = 2_000


def _one_line(text: str) -> str:
    """An error's text as one line: a line break in it (a file name's, a strategy spec's)
    written as its escape; cut in the middle past LONGEST_ERROR characters."""
    text = text.translate(_BREAKS)
    if len(text) <= LONGEST_ERROR:
        return text
    head, tail = LONGEST_ERROR * 3 // 4, LONGEST_ERROR // 4
    return f"{text[:head]} ... ({len(text) - head - tail:,} characters left out) ... {text[-tail:]}"


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="obook: %(message)s", stream=sys.stderr)
    unwind_on_signals()
    command = sys.argv[1] if len(sys.argv) > 1 else None
    if command in _FEED_ARGUMENTS and not {"-h", "--help"} & set(sys.argv):
        choose_kernels(sys.argv[2:])
    try:
        build(command if command in COMMANDS else None)()
    except KeyboardInterrupt:
        _interrupted(signal.SIGINT)
    except SystemExit as e:
        # typer ends a command that Ctrl-C interrupted with a silent exit 130
        if e.code == 130 and interrupts.raised == signal.SIGINT:
            _interrupted(signal.SIGINT)
        raise
    except Exception as e:
        if interrupts.raised is not None:
            # the interrupt, replaced on its way out by a library's own error (DuckDB stops a
            # query it interrupts with "Query interrupted", or wraps the exception raised in
            # obook's code as a failed read)
            _interrupted(interrupts.raised)
        if isinstance(e, ObookError):   # a FeedError names the file, the record and the reason
            typer.echo(f"error: {_one_line(_message(e, command))}", err=True)
            raise SystemExit(1) from None
        if isinstance(e, OSError) and e.errno == errno.ENAMETOOLONG and e.filename is not None:
            # a path given past the file system's limits, met by any check of it (Path.exists)
            typer.echo(f"error: {_one_line(f'{os.fsdecode(e.filename)}: {os.strerror(e.errno)}')}", err=True)
            raise SystemExit(1) from None
        if isinstance(e, MemoryError):  # an allocation refused (a memory limit, ulimit -v)
            detail = f": {e}" if str(e) else ""
            typer.echo(f"error: out of memory{detail}", err=True)
            raise SystemExit(1) from None
        raise


def _interrupted(signum: int) -> None:
    """End the command as interrupted by ``signum``: exit 130 after a Ctrl-C, 128 + it else."""
    if signum == signal.SIGINT:
        typer.echo("interrupted", err=True)
    raise SystemExit(interrupts.exit_code(signum)) from None
