"""The ``obook`` command line: one small module per command group.

Start-up matters here (issue 13): this package and the command modules import typer and
the standard library only; each command loads pyarrow, numba's kernels, DuckDB or polars
inside its body, when it runs, and only what it needs. Help is click's plain text
(``rich_markup_mode=None``: rich's help formatter costs more than the rest of ``--help``).
"""

from __future__ import annotations

import logging
import signal
import sys

import typer

from ..errors import ObookError
from . import bbo as _bbo
from . import convert as _convert
from . import gen as _gen
from . import live as _live
from . import lobster as _lobster
from . import match as _match
from . import pipeline as _pipeline
from . import simulate as _simulate
from . import plot as _plot
from .kernels import announce_first_compile
from .sql import sql as _sql

CONTEXT = {"help_option_names": ["-h", "--help"]}


def _version(value: bool) -> None:
    if value:
        from .._version import __version__

        typer.echo(f"obook {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="obook",
    help="Replay exchange market-data feeds (Nasdaq ITCH 5.0 files and MoldUDP64 captures, CSV "
         "order feeds, Databento MBO, Shanghai/Shenzhen Level-2) through limit order books and "
         "write the best bid/offer, trades, orders and depth as text, CSV, Parquet or Arrow; "
         "match order entry, simulate your own orders, listen to live lines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=CONTEXT,
)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                       help="Print obook's version and exit.")) -> None:
    """Replay exchange market-data feeds through limit order books."""


app.command("bbo")(_bbo.bbo)
app.command("convert")(_convert.convert)
app.command("sql")(_sql)
app.command("lobster")(_lobster.lobster)
app.command("match")(_match.match)
app.command("simulate")(_simulate.simulate)
app.command("plot")(_plot.plot)
app.command("send")(_live.send)
app.command("listen")(_live.listen)
app.command("venue")(_live.venue)
app.add_typer(_gen.app, name="gen")
app.add_typer(_pipeline.app, name="pipeline")

#: commands that replay a feed (numba kernels)
_REPLAYING = {"bbo", "convert", "sql", "lobster", "pipeline", "simulate", "plot", "listen"}


def _terminated(signum, frame):
    # SIGTERM (kill, a service manager): unwind like Ctrl-C, so temp files and workers go
    raise SystemExit(128 + signum)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="obook: %(message)s", stream=sys.stderr)
    signal.signal(signal.SIGTERM, _terminated)
    if len(sys.argv) > 1 and sys.argv[1] in _REPLAYING and not {"-h", "--help"} & set(sys.argv):
        announce_first_compile()
    try:
        app()
    except ObookError as e:     # a FeedError names the file, the record and the reason
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise SystemExit(130) from None
